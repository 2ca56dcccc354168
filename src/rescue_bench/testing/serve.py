"""A scripted model on loopback, to try ``rescue annotate`` and ``rescue eval`` without a key or network.

    python -m rescue_bench.testing.serve --port 8799
    FAKE_BASE_URL=http://127.0.0.1:8799/v1 FAKE_API_KEY=none rescue annotate draft ASSETS --model openai-video/fake/scripted

Drafting requests get :class:`~rescue_bench.testing.DraftResponder` answers (valid drafts); task
prompts get :class:`~rescue_bench.testing.ValidAnswers` answers (media parts are ignored). It binds
127.0.0.1 only and runs until Ctrl-C (or ``--seconds``).
"""

from __future__ import annotations

import argparse
import time

from rescue_bench.testing.answers import ValidAnswers
from rescue_bench.testing.drafts import DraftResponder, message_text
from rescue_bench.testing.server import FakeOpenAI, RequestMessage

DRAFT_MARKER = "You turn a therapy session's subtitles into annotated rows"
"""Words of the drafting instructions (``rescue_bench.annotate.prompt``)."""


class ScriptedModel:
    """Valid drafts for drafting requests, valid task answers for everything else."""

    def __init__(self) -> None:
        self.drafts = DraftResponder("valid")
        self.answers = ValidAnswers()

    def __call__(self, messages: list[RequestMessage]) -> tuple[int, str]:
        if messages and DRAFT_MARKER in message_text(messages[0]):
            return self.drafts(messages)
        return self.answers([{**m, "content": message_text(m)} for m in messages])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--seconds", type=float, default=None, help="stop after this many seconds")
    args = parser.parse_args(argv)
    server = FakeOpenAI(ScriptedModel(), port=args.port).start()
    print(f"scripted model at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        deadline = time.monotonic() + args.seconds if args.seconds else None
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
