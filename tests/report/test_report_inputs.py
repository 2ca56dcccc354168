"""Bad input to `rescue report`: one line naming the file (and line), exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from tests.factories import make_run, run_instances, run_records, write_run

runner = CliRunner()


def _report(*args: str):
    return runner.invoke(app, ["report", *args, "--resamples", "50"])


def _assert_bad(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_missing_run_dir(tmp_path: Path):
    _assert_bad(_report(str(tmp_path / "nope"), "--out", str(tmp_path / "out")), "nope", "no such run folder")


def test_a_file_that_is_no_inspect_log(tmp_path: Path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    _assert_bad(_report(str(f), "--out", str(tmp_path / "out")), "file.txt", "neither an inspect log", "nor a `rescue eval` output folder")


def test_missing_summary(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    (run / "summary.json").unlink()
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "summary.json", "missing")


def test_missing_results(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    for f in (run / "results").iterdir():
        f.unlink()
    (run / "results").rmdir()
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "results", "missing")


def test_empty_results(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    for f in (run / "results").iterdir():
        f.unlink()
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "results", "no records")


def test_malformed_jsonl_line(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    path = run / "results" / "rpp.jsonl"
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:-10]  # truncated JSON on line 5
    path.write_text("\n".join(lines) + "\n")
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "rpp.jsonl:5", "malformed JSON")


def test_record_missing_a_field(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    path = run / "results" / "itp.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[2])
    del record["gold"]
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "itp.jsonl:3", "gold")


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [("row", True, "field row"), ("scenario", "group", "field scenario"), ("valid", "yes", "field valid"), ("n_rows", 0, "field n_rows")],
)
def test_record_with_a_wrong_type_names_the_field(tmp_path: Path, field: str, value, needle: str):
    """Every line is checked against the one record schema (``scoring.ResultRecord``)."""
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    path = run / "results" / "stp.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record[field] = value
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "stp.jsonl:2", needle)


def test_record_of_the_wrong_task(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    path = run / "results" / "ssp.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["task"] = "stp"
    lines[0] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "ssp.jsonl:1", "task")


def test_malformed_summary_and_run_json(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    (run / "summary.json").write_text('{"itp": \n  {oops}')
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "summary.json:2", "malformed JSON")
    run2 = make_run(tmp_path / "run2", "openai/m", 0.5)
    (run2 / "run.json").write_text("[1, 2")
    _assert_bad(_report(str(run2), "--out", str(tmp_path / "out")), "run.json:1")


def test_bad_data_path(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    _assert_bad(_report(str(run), "--data", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "out")), "missing.jsonl")


def test_recorded_data_not_found_is_a_warning(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5, data=["relative/not/here.jsonl"])
    result = _report(str(run), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "not found" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert any("not found" in w for w in report["warnings"])
    # the data figures fall back to / are skipped, the rest is there
    assert (tmp_path / "out" / "figures" / "fig4_rpp_accuracy_by_position.png").is_file()
    assert not (tmp_path / "out" / "figures" / "fig3_transitions_couple.png").exists()


@pytest.mark.slow
def test_stale_summary_is_reported(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    summary = json.loads((run / "summary.json").read_text())
    summary["rpp"]["both"]["accuracy"] = 0.99
    (run / "summary.json").write_text(json.dumps(summary))
    result = _report(str(run), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "disagrees with its records" in result.output


@pytest.mark.parametrize("args", [["--resamples", "0"], ["--confidence", "1.5"]])
def test_bad_options(tmp_path: Path, args):
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    result = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_unexpected_failure_is_one_line(tmp_path: Path, monkeypatch):
    import rescue_bench.report.build as build

    def boom(*args, **kwargs):
        raise RuntimeError("something broke")

    monkeypatch.setattr(build, "compute_report", boom)
    monkeypatch.delenv("RESCUE_DEBUG", raising=False)
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "unexpected RuntimeError", "something broke")


def _failed(run: Path, status: str, failure: str | None) -> Path:
    """``run`` as a run that did not finish: run.json's status (and its one line), no summary.json."""
    (run / "summary.json").unlink()
    info = json.loads((run / "run.json").read_text())
    info.update(kind="eval", status=status, failure=failure)
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    return run


def test_a_failed_run_is_named_failed_with_its_cause(tmp_path: Path):
    """The attack: a failed run's folder. The report said "summary.json: missing (is this a `rescue
    eval` output folder?)", as if the folder were something else."""
    line = "connection failed (nothing answered at the endpoint): 6 of 6 instances without an answer (HTTP 503: busy)"
    run = _failed(make_run(tmp_path / "run", "openai/m", 0.5), "failed", line)
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "run.json", "the run failed", line, "no scores to report")


def test_an_unfinished_run_is_named_unfinished(tmp_path: Path):
    run = _failed(make_run(tmp_path / "run", "openai/m", 0.5), "running", None)
    _assert_bad(_report(str(run), "--out", str(tmp_path / "out")), "run.json", "has not finished", "run the same command again")


def test_the_report_names_every_run_kind_it_reads(tmp_path: Path):
    kinds = ("rescue eval", "rescue agent eval", "rescue sim eval", "rescue sim fidelity", "inspect eval")
    help_text = " ".join(runner.invoke(app, ["report", "--help"], env={"COLUMNS": "200"}).output.replace("│", " ").split())
    assert all(kind in help_text for kind in kinds), help_text
    run = make_run(tmp_path / "run", "openai/m", 0.5)
    (run / "summary.json").unlink()
    (run / "run.json").unlink()  # no run.json either: a folder that says nothing about itself
    result = _report(str(run), "--out", str(tmp_path / "out"))
    _assert_bad(result, "summary.json", "missing", *kinds[:4])


def test_the_tokens_table_says_what_refused_prompts_cost(tmp_path: Path):
    """The attack: an overflow run's tokens table set 5,362 tokens used beside 204,994 estimated and
    said nothing of the prompts the model refused, which cost nothing."""
    records = run_records(run_instances(12, 4, 6), 0.5)
    refused = [r for r in records if r["task"] == "itp"]
    for r in refused:  # what the scorer writes for a prompt the model refused
        r.update(raw=None, valid=False, prediction=None, cause="context_overflow", error="context overflow: too long")
    run = write_run(tmp_path / "run", records, "openai/m")
    info = json.loads((run / "run.json").read_text())
    info.update(
        kind="eval",
        usage_by_role={"model": {"input_tokens": 5362, "output_tokens": 90, "total_tokens": 5452}},
        estimate={"by_role": {"model": {"calls": 40, "prompt_chars": 819976, "prompt_tokens": 204994, "max_output_tokens": 1280}}},
    )
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    result = _report(str(run), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    usage = " ".join((tmp_path / "out" / "tables" / "usage.md").read_text(encoding="utf-8").split())
    assert f"openai/m: {len(refused)} of {len(records)} prompts were refused as longer than the model's context window" in usage
    assert "a refused prompt costs no tokens" in usage
    # the control: a run without refusals gets no such note
    plain = make_run(tmp_path / "plain", "openai/p", 0.5)
    assert _report(str(plain), "--out", str(tmp_path / "out2")).exit_code == 0
    assert "refused" not in (tmp_path / "out2" / "tables" / "usage.md").read_text(encoding="utf-8")
