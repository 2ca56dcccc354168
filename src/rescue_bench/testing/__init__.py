"""Test and benchmark helpers that ship with the package (a loopback OpenAI-compatible server)."""

from rescue_bench.testing.server import FakeOpenAI, ServerStats

__all__ = ["FakeOpenAI", "ServerStats"]
