"""What ``rescue annotate draft`` costs per segment: calls, prompt and answer size, media bytes.

    python bench/annotate_cost.py            # prints a Markdown table (results in docs/annotate.md)

It makes the synthetic couple and family segments of ``rescue_bench.testing.media`` (about 22 s,
9 cues each), prepares them, and drafts them with the scripted drafting model
(:class:`rescue_bench.testing.DraftResponder`) on the loopback server, once per media mode, plus a
long segment (the couple script repeated to 90 cues) to show the windows. It counts what the
server receives: requests, text characters (tokens estimated at 4 characters a token, the usual
rule for English with GPT-style tokenizers), media bytes, and the characters of the answers.
Nothing leaves the machine.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import DraftResponder, FakeOpenAI
from rescue_bench.testing.drafts import message_text
from rescue_bench.testing.media import COUPLE, FAMILY, Line, Script, make_segment

runner = CliRunner()


def _long_script(repeats: int = 10) -> Script:
    lines = []
    for k in range(repeats):
        offset = k * 21.0
        lines += [Line(x.start + offset, x.end + offset, x.speaker, x.text) for x in COUPLE.lines]
    return Script("couple", COUPLE.participants, tuple(lines))


def measure(media: str, src: Path, work: Path, label: str) -> dict:
    assets = work / f"assets-{label}-{media}"
    assert runner.invoke(app, ["annotate", "prepare", str(src), "--out", str(assets)]).exit_code == 0
    responder = DraftResponder("valid")
    answers: list[int] = []

    def counted(messages):
        status, content = responder(messages)
        answers.append(len(content))
        return status, content

    os.environ["RESCUE_CACHE_DIR"] = str(work / f"cache-{label}-{media}")
    with FakeOpenAI(counted) as server:
        result = runner.invoke(
            app, ["annotate", "draft", str(assets), "--model", "openai-video/bench/m", "--media", media, "--display", "none"],
            env={"BENCH_BASE_URL": server.base_url, "BENCH_API_KEY": "none"},
        )
        assert result.exit_code == 0, result.output + result.stderr
    segments = len({json.loads(line)["sample_id"] for line in (assets / "drafts.jsonl").read_text().splitlines()})
    text = sum(len(message_text(m)) for messages in responder.requests for m in messages)
    media_bytes = 0
    for messages in responder.requests:
        content = messages[1]["content"]
        for part in content if isinstance(content, list) else []:
            url = (part.get("video_url") or part.get("image_url") or {}).get("url") or ""
            data = url.split(",", 1)[1] if url.startswith("data:") else (part.get("input_audio") or {}).get("data", "")
            media_bytes += len(base64.b64decode(data)) if data else 0
    calls = len(responder.requests)
    return {
        "label": label, "media": media, "segments": segments, "calls": calls,
        "calls_per_segment": calls / segments,
        "prompt_tokens_per_segment": text / 4 / segments,
        "answer_tokens_per_segment": sum(answers) / 4 / segments,
        "media_kb_per_segment": media_bytes / 1024 / segments,
    }


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        short = work / "short"
        make_segment(short, "couple/c1", COUPLE, size=(320, 240))
        make_segment(short, "family/f1", FAMILY, size=(320, 240))
        long = work / "long"
        make_segment(long, "couple/long", _long_script(), video=None)
        rows = [measure(media, short, work, "2 synthetic segments (22 s, 9 cues)") for media in ("none", "frames", "video")]
        rows.append(measure("none", long, work, "1 long segment (90 cues, subtitles only)"))
    print("| segments | media | calls / segment | prompt tokens / segment (est.) | answer tokens / segment (est.) | media KB / segment |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['label']} | {r['media']} | {r['calls_per_segment']:.1f} | {r['prompt_tokens_per_segment']:,.0f} | "
              f"{r['answer_tokens_per_segment']:,.0f} | {r['media_kb_per_segment']:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
