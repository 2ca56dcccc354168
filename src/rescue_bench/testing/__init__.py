"""Test and benchmark helpers that ship with the package (a loopback OpenAI-compatible server and a model for it)."""

from rescue_bench.testing.answers import ValidAnswers
from rescue_bench.testing.server import FakeOpenAI, ServerStats

__all__ = ["FakeOpenAI", "ServerStats", "ValidAnswers"]
