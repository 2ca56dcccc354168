"""`rescue eval`'s options reach the instances: --limit, --tasks, --context and --mode."""

from __future__ import annotations

import json

from rescue_bench.data.load import load_clips
from rescue_bench.prompts import render
from rescue_bench.tasks import BuildOptions, build_instances
from tests.factories import read_records


def test_limit_tasks_context_and_mode_reach_the_instances(isolated_env, eval_cli):
    from inspect_ai.log import read_eval_log

    out = isolated_env / "opts"
    result = eval_cli(
        "--model", "baseline/majority", "--tasks", "itp,er", "--limit", "4", "--context", "-1",
        "--mode", "audiovisual", "--no-bertscore", "--out", str(out),
    )
    assert result.exit_code == 0, result.output
    records = read_records(out)
    assert sorted(p.name for p in (out / "results").iterdir()) == ["er.jsonl", "itp.jsonl"]
    clips = load_clips(None)
    options = BuildOptions(mode="audiovisual").with_context(-1)
    for task in ("itp", "er"):
        mine = [r for r in records if r["task"] == task]
        assert len(mine) == 4
        first = build_instances(clips, task, options)[:4]
        assert {r["id"] for r in mine} == {i.id for i in first}  # --limit keeps the first N

    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["mode"] == "audiovisual" and run["settings"]["limit"] == 4
    assert run["settings"]["tasks"] == ["itp", "er"]
    assert set(run["context_windows"].values()) == {-1}

    logs = [read_eval_log(str(p)) for p in sorted((out / "logs").glob("*.eval"))]
    assert sorted(log.eval.metadata["rescue_task"] for log in logs) == ["er", "itp"]
    for log in logs:
        task = log.eval.metadata["rescue_task"]
        assert log.eval.metadata["context"] == -1 and log.eval.metadata["mode"] == "audiovisual"
        built = {i.id: i for i in build_instances(clips, task, options)[:4]}
        assert len(log.samples or []) == 4
        for sample in log.samples or []:
            inst = built[sample.id]
            # the prompt really holds every previous row and the audiovisual cues
            assert sample.input[0].text == render(inst).system and "visible behaviour" in sample.input[0].text
            assert sample.input[1].text == render(inst).user
            assert len(inst.context) == (inst.row if task == "itp" else inst.row - 1)
    default = build_instances(clips, "er")[:4]
    assert sum(len(i.context) for i in default) < sum(len(i.context) for i in build_instances(clips, "er", options)[:4])
