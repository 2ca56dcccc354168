"""rescue-bench: the reference toolkit for RESCUE-Bench.

The domain core (data models, loaders, instance builders, prompts, answer parsing, metrics) is plain
Python with no evaluation engine behind it; the inspect_ai tasks, the CLI and the reports sit on top.
"""

from rescue_bench.data.load import DataError, Problem, demo_path, load_clips
from rescue_bench.data.models import Clip, Row

__version__ = "0.1.0"

__all__ = ["Clip", "DataError", "Problem", "Row", "__version__", "demo_path", "load_clips"]
