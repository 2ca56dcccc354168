"""inspect_ai entry point: registers the six tasks and the ``baseline`` model provider.

Listed under ``[project.entry-points.inspect_ai]`` so ``inspect eval rescue_bench/rpp --model ...``
and ``--model baseline/majority`` work once the package is installed.
"""

from rescue_bench.engine.agent import agent  # noqa: F401
from rescue_bench.engine.baseline_api import baseline  # noqa: F401
from rescue_bench.engine.inspect_tasks import er, itp, rpp, ssp, stp, vp  # noqa: F401
