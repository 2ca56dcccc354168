"""``rescue`` against a real model (SmolLM2-135M-Instruct) behind llama-cpp-python's server.

What only a real server shows: every run command goes end to end on real replies (``rescue eval``
with a judge, ``rescue agent eval``, ``rescue sim eval`` with the model as agent and simulator,
``rescue sim fidelity``, ``rescue annotate draft``): the records hold what the server sent, byte for
byte, never text of ours; ``run.json`` has the kind, the status and counts that match the calls the
server answered; a small model's unusable answers are counted by cause; ``--dry-run`` sends nothing;
and a window too small for the prompts gives the overflow count and warning, which
``--on-overflow trim`` removes. The fixtures are in this folder's conftest, the server and the log
readers in :mod:`tests.llm.helpers`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.load import demo_path
from rescue_bench.labels import TASKS
from tests.factories import read_records
from tests.llm.helpers import LlamaServers, LocalModel, all_replies, wire_calls, wire_replies

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]


def _run(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_eval_of_the_six_tasks_with_a_judge_holds_the_models_real_replies(local_model: LocalModel, isolated_env: Path):
    out = isolated_env / "run"
    before = local_model.requests()
    result = local_model.rescue(
        "eval", "--model", local_model.model, "--judge", local_model.model, "--limit", "1", "--max-tokens", "64",
        "--judge-max-tokens", "64", "--out", str(out), "--display", "none", "--no-bertscore", cache=isolated_env / "cache",
    )
    assert result.exit_code == 0, result.output
    run = _run(out)
    assert run["kind"] == "eval" and run["status"] == "success" and run["judge"] == local_model.model
    assert run["counts"]["without_answer"] == 0 and run["counts"]["instances"] == len(TASKS)
    # every request the server answered is a call of the run's logs (model and judge)
    assert local_model.requests() - before == sum(len(calls) for calls in wire_calls(out).values())
    records = read_records(out)
    assert sorted(r["task"] for r in records) == sorted(TASKS)
    replies = wire_replies(out)  # each sample's first call is the model's, the later ones the judge's
    for r in records:
        assert r["raw"] is not None and r["raw"].strip(), r  # the model answered every prompt
        assert r["raw"] == replies[r["id"]][0], r["id"]  # what the server sent, as sent
    assert len({r["raw"] for r in records}) > 1  # six prompts, not one canned reply
    usage = run["usage"]
    assert usage and all(u["input_tokens"] > 0 and u["output_tokens"] > 0 for u in usage.values())
    # why each answer scored as it did: every invalid one has its cause, and the summary counts them
    summary = json.loads((out / "summary.json").read_text())
    for task, per in summary.items():
        mine = [r for r in records if r["task"] == task]
        assert all((r["cause"] is None) == r["valid"] for r in mine if r["cause"] != "judge_failed")
        assert sum(per["both"]["invalid_causes"].values()) == sum(1 for r in mine if r["cause"])


def test_agent_eval_runs_the_chain_on_the_models_real_replies_and_resumes_without_a_call(local_model: LocalModel, isolated_env: Path):
    out, cache = isolated_env / "agent", isolated_env / "cache"
    args = ("agent", "eval", "--model", local_model.model, "--limit", "1", "--no-single-task", "--max-tokens", "48",
            "--no-bertscore", "--display", "none", "--out", str(out))
    before = local_model.requests()
    result = local_model.rescue(*args, cache=cache)
    assert result.exit_code == 0, result.output
    sent = local_model.requests() - before
    run = _run(out)
    assert run["kind"] == "agent" and run["status"] == "success" and run["model"] == local_model.model
    assert run["counts"] == {"instances": 1, "answered": 1, "without_answer": 0, "judge_failures": 0, "failed_calls": 0}
    (record,) = _jsonl(out / "results" / "agent.jsonl")
    raws = [step["raw"] for step in record["steps"].values()]
    assert raws and all(raw and raw.strip() for raw in raws)
    # the chain's answers are the server's replies, in the order they were asked, and nothing else
    assert raws == all_replies(out)
    assert sent == len(raws) == run["calls"]["chain_total"]
    assert all(step["valid"] or step["error"] for step in record["steps"].values())  # an unusable step says why
    assert run["usage"] and all(u["input_tokens"] > 0 and u["output_tokens"] > 0 for u in run["usage"].values())

    # the same command again: the run is complete, every call is in the response cache
    again = local_model.rescue(*args, cache=cache)
    assert again.exit_code == 0, again.output
    assert local_model.requests() - before == sent and _run(out)["status"] == "success"
    assert _jsonl(out / "results" / "agent.jsonl") == [record]


def _fails_then_finishes_from_the_cache(
    local_model: LocalModel, command: tuple[str, ...], cache: Path, out: Path, before: int, *, steps: int
) -> tuple[int, list[str]]:
    """Run ``command``: every one of its ``steps`` has no usable simulator answer, so it fails (exit 2,
    the cause named, ``run.json`` failed); allowed every step (``--max-failed-share 1``), the same
    command finishes from the cache, sending nothing again. Returns the requests sent and the replies
    the server gave (read before the second run replaces the logs)."""
    failed = local_model.rescue(*command, cache=cache)
    assert failed.exit_code == 2, failed.output
    assert "the simulator gave no usable answer" in failed.output and f"{steps} of {steps} steps" in failed.output
    sent, replies = local_model.requests() - before, all_replies(out)
    assert _run(out)["status"] == "failed"
    result = local_model.rescue(*command, "--max-failed-share", "1", cache=cache)
    assert result.exit_code == 0, result.output
    assert local_model.requests() - before == sent  # finished from the cache: nothing sent again
    return sent, replies


def test_sim_eval_with_the_model_as_agent_and_simulator(local_model: LocalModel, isolated_env: Path):
    """SmolLM2-135M never answers the simulator's state object: the run fails, naming why, with its
    records kept; allowing every step to fail, the same command finishes from the cache and counts
    each unusable step (a useless simulator was a success: exit 0, 100% of the steps invalid)."""
    out = isolated_env / "sim"
    before = local_model.requests()
    command = (
        "sim", "eval", "--model", local_model.model, "--simulator", local_model.model, "--limit", "1", "--horizon", "1",
        "--max-tokens", "48", "--simulator-max-tokens", "96", "--display", "none", "--out", str(out),
    )
    sent, replies = _fails_then_finishes_from_the_cache(local_model, command, isolated_env / "cache", out, before, steps=1)
    run = _run(out)
    assert run["kind"] == "sim" and run["status"] == "success" and run["failure"] is None
    assert run["counts"]["steps"] == run["counts"]["unusable_steps"] == run["counts"]["invalid_simulator_steps"] == 1, run["counts"]
    assert run["counts"]["failed_steps"] == 0  # every call answered; the answers are what is unusable
    (episode,) = _jsonl(out / "results" / "sim.jsonl")
    assert episode["simulator"] == local_model.model and len(episode["steps"]) == 1
    (step,) = episode["steps"]
    chain = [answer["raw"] for answer in step["chain"].values()]
    simulator = step["simulator"]["raw"]
    assert chain and simulator and all(chain) and all(simulator)
    # the agent's answers and the simulator's (each attempt: one, or two when re-asked) are the
    # server's replies, all of them, byte for byte
    assert Counter(chain + simulator) == Counter(replies)
    assert sent == len(chain) + len(simulator) == run["calls"]["agent_total"] + run["calls"]["simulator_total"]
    # the step's simulator answers are unusable: no state, excluded from J, with the reason
    assert not step["simulator"]["valid"] and step["state"] is None
    assert step["excluded"] and step["simulator"]["error"]


def test_sim_fidelity_with_the_model_as_simulator(local_model: LocalModel, isolated_env: Path):
    """The simulator's unusable answers fail the fidelity run past --max-failed-share, each kept
    with its reason; allowed, the same command finishes from the cache."""
    out = isolated_env / "fidelity"
    before = local_model.requests()
    command = (
        "sim", "fidelity", "--simulator", local_model.model, "--limit", "2", "--simulator-max-tokens", "96",
        "--no-bertscore", "--display", "none", "--out", str(out),
    )
    sent, replies = _fails_then_finishes_from_the_cache(local_model, command, isolated_env / "cache", out, before, steps=2)
    run = _run(out)
    assert run["kind"] == "sim_fidelity" and run["status"] == "success"
    assert run["counts"]["steps"] == run["counts"]["unusable_steps"] == run["counts"]["invalid_simulator_steps"] == 2, run["counts"]
    assert run["counts"]["failed_steps"] == 0
    records = _jsonl(out / "results" / "fidelity.jsonl")
    assert len(records) == 2 and all(r["simulator"] == local_model.model for r in records)
    # one call per point, and one more for each re-ask: 2 to 4 calls, every one answered
    assert 2 <= sent == len(replies) == run["calls"]["simulator_total"] <= 4
    assert all(reply.strip() for reply in replies)
    assert all(not r["valid"] and r["error"] for r in records), records


def _couple_assets(folder: Path) -> Path:
    """The synthetic couple segment of the offline pipeline example (subtitles only), prepared."""
    from rescue_bench.annotate import prepare
    from rescue_bench.testing.media import COUPLE, make_segment

    make_segment(folder / "segments", "couple/c1", COUPLE, video=None)
    prepare(folder / "segments", folder / "assets")
    return folder / "assets"


def test_annotate_draft_drafts_a_segment_from_the_models_real_replies(local_model: LocalModel, isolated_env: Path):
    assets = _couple_assets(isolated_env)
    before = local_model.requests()
    result = local_model.rescue(
        "annotate", "draft", str(assets), "--model", local_model.model, "--media", "none", "--max-tokens", "128",
        "--display", "none", cache=isolated_env / "cache",
    )
    assert result.exit_code == 0, result.output
    sent = local_model.requests() - before
    (run_json,) = (assets / ".draft-run").glob("*/run.json")
    run = _run(run_json.parent)
    assert run["kind"] == "draft" and run["status"] == "success"
    assert run["counts"] == {"segments": 1, "written": 1, "failed": 0, "kept": 0}
    (clip,) = _jsonl(assets / "drafts.jsonl")
    assert clip["sample_id"] == "couple/c1" and clip["draft"]["model"] == local_model.model
    # the draft's calls and tokens are the server's: one call, or two with the re-ask, as logged
    (calls,) = wire_calls(run_json.parent).values()
    assert 1 <= sent == len(calls) == clip["draft"]["calls"] <= 2
    assert clip["draft"]["input_tokens"] == sum(c.input_tokens for c in calls) > 0
    assert clip["draft"]["output_tokens"] == sum(c.output_tokens for c in calls) > 0
    # every cue is in a row; a row the model's answer did not give holds the subtitles and says so
    assert len(clip["rows"]) >= 1
    for row in clip["rows"]:
        problems = row.get("draft_problems") or []
        assert row["dialogue_cleaned"] and all(p["field"] and p["problem"] for p in problems)


DRY_RUNS = {
    "eval": ("eval", "--model", "{model}", "--judge", "{model}", "--limit", "1"),
    "agent eval": ("agent", "eval", "--model", "{model}", "--judge", "{model}", "--limit", "1"),
    "sim eval": ("sim", "eval", "--model", "{model}", "--simulator", "{model}", "--limit", "1", "--horizon", "1"),
    "sim fidelity": ("sim", "fidelity", "--simulator", "{model}", "--limit", "1", "--no-bertscore"),
}


@pytest.mark.parametrize("command", [*DRY_RUNS, "annotate draft"])
def test_dry_run_sends_nothing_and_writes_nothing(local_model: LocalModel, isolated_env: Path, command: str):
    if command == "annotate draft":
        assets = _couple_assets(isolated_env)
        args = ["annotate", "draft", str(assets), "--model", local_model.model, "--media", "none"]
        written = [assets / "drafts.jsonl", assets / ".draft-run"]
    else:
        out = isolated_env / "run"
        args = [a.format(model=local_model.model) for a in DRY_RUNS[command]] + ["--out", str(out)]
        written = [out]
    before = local_model.requests()
    result = local_model.rescue(*args, "--dry-run", cache=isolated_env / "cache")
    assert result.exit_code == 0, result.output
    assert "nothing sent" in result.output and "calls" in result.output
    assert local_model.requests() == before  # the server answered nothing
    assert not any(path.exists() for path in written)


def _family_clip(folder: Path) -> Path:
    """The demo's first family clip alone (its RPP prompts with every earlier row run from about 970 to
    1,500 tokens of this model)."""
    line = next(x for x in demo_path().read_text(encoding="utf-8").splitlines() if '"family"' in x)
    path = folder / "family.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    return path


def test_a_window_too_small_is_counted_and_warned_and_trim_makes_the_prompts_fit(llama: LlamaServers, isolated_env: Path):
    small = llama.server(1024)
    data = _family_clip(isolated_env)
    common = ("eval", "--model", small.model, "--tasks", "rpp", "--context", "-1", "--data", str(data),
              "--max-tokens", "32", "--display", "none", "--no-bertscore")
    out = isolated_env / "wrong"
    result = small.rescue(*common, "--out", str(out), cache=isolated_env / "cache")
    assert result.exit_code == 0, result.output
    records = read_records(out)
    over = [r for r in records if r["cause"] == "context_overflow"]
    assert 0 < len(over) < len(records)
    assert all(r["raw"] is None and "maximum context length is 1024 tokens" in r["error"] for r in over)
    run = json.loads((out / "run.json").read_text())
    assert run["overflow"]["overflow"] == len(over) and run["overflow"]["per_task"]["rpp"]["family"]["overflow"] == len(over)
    assert result.output.rstrip().splitlines()[-1].startswith(f"warning: {len(over)} of {len(records)} prompts do not fit")

    trimmed_out = isolated_env / "trim"
    result = small.rescue(*common, "--on-overflow", "trim", "--out", str(trimmed_out), cache=isolated_env / "cache")
    assert result.exit_code == 0, result.output
    records = read_records(trimmed_out)
    assert not [r for r in records if r["cause"] == "context_overflow"]
    trimmed = [r for r in records if r.get("trimmed_rows")]
    assert {r["id"] for r in trimmed} == {r["id"] for r in over}
    assert all(r["raw"] is not None for r in trimmed)  # the model answered the trimmed prompt
    assert json.loads((trimmed_out / "run.json").read_text())["overflow"]["trimmed"] == len(over)
    assert "warning" not in result.output and f"note: {len(over)} of {len(records)} prompts were longer" in result.output
