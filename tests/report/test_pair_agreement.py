"""People check the closed loop: `rescue agreement sample` and `score` on `rescue sim eval` runs, with
synthetic raters whose answers are known (always the higher J, always the lower, a coin), and the
section `rescue report` shows beside the runs it scored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.judge_ratings import read_pair_sample
from rescue_bench.report.pairs import score_pairs
from rescue_bench.report.runs import load_run, load_runs
from tests.report.pair_helpers import coin, episode_J, higher, lower, make_runs, synthetic_ratings

pytestmark = pytest.mark.slow  # real closed-loop runs (offline, about 10 s for the four)

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_runs(tmp_path_factory.mktemp("closed-loop"))


@pytest.fixture(scope="module")
def sample(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "pairs.jsonl"
    result = runner.invoke(app, ["agreement", "sample", *map(str, runs), "--n", "40", "--raters", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _score(ratings: Path, runs: list[Path], **kwargs: object):
    return score_pairs(ratings, load_runs(runs), n_resamples=300, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# the sample
# ------------------------------------------------------------------------------------------------


def test_the_sample_pairs_two_agents_on_one_start_stratified_seeded_and_blind(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    pairs = read_pair_sample(sample)
    J = episode_J(runs)
    names = {r.name for r in runs}
    assert len(pairs) == 40
    for pair in pairs:
        assert pair.a.run != pair.b.run and {pair.a.run, pair.b.run} <= names
        assert pair.a.episode == pair.b.episode  # the same start
        assert abs(J[(pair.a.run, pair.a.episode)] - J[(pair.b.run, pair.b.episode)]) > 1e-9  # the simulator tells them apart
        record = next(json.loads(line) for line in (runs[0].parent / pair.a.run / "results" / "sim.jsonl").read_text().splitlines()
                      if json.loads(line)["id"] == pair.a.episode)
        assert len(pair.context) == record["start"]["transcript_rows"] and pair.start_row == record["row"]
        assert pair.a.turns[0].speaker == "Therapist" and pair.a.turns != pair.b.turns
    assert {p.scenario for p in pairs} == {"couple", "family"}
    assert {p.a.run for p in pairs} == names  # sides in random order: every run is some pair's A
    # what the file holds: the pairs' parts only, never a J, a metric or an agent's name
    text = sample.read_text(encoding="utf-8")
    for line in text.splitlines():
        assert set(json.loads(line)) <= {"pair_id", "a", "b", "scenario", "sample_id", "start_row", "context"}
    assert '"J"' not in text and "metrics" not in text and "baseline/" not in text
    # seeded: the same seed draws the same file, another seed another
    again, other = tmp_path / "again.jsonl", tmp_path / "other.jsonl"
    for out, seed in ((again, "0"), (other, "1")):
        result = runner.invoke(app, ["agreement", "sample", *map(str, runs), "--n", "40", "--seed", seed, "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert again.read_bytes() == sample.read_bytes() and other.read_bytes() != sample.read_bytes()
    # it says how wide the agreement interval will be, and what it left out
    assert "±" in result.output and "if raters judge independently" in result.output and "Not drawn:" in result.output


def test_the_sample_refuses_runs_that_cannot_be_paired(runs: list[Path], tmp_path: Path) -> None:
    other = make_runs(tmp_path, ("group",), prefix="short-", horizon=2)[0]  # another objective: J not comparable
    for args, words in (
        ([runs[0], other], "J compares agents under one simulator and objective"),
        ([runs[0]], "pairs need two or more closed-loop runs"),
        ([runs[0], runs[1], tmp_path / "copy"], "both agent"),
    ):
        if args[-1] == tmp_path / "copy":
            shutil.copytree(runs[1], tmp_path / "copy")
        result = runner.invoke(app, ["agreement", "sample", *map(str, args), "--out", str(tmp_path / "s.jsonl")])
        assert result.exit_code == 2 and words in result.output, result.output
        assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "s.jsonl").exists()


# ------------------------------------------------------------------------------------------------
# synthetic raters: the simulator's agreement with people, the ranking, agreement among raters
# ------------------------------------------------------------------------------------------------


def test_raters_who_prefer_the_higher_J_agree_fully_and_those_who_prefer_the_lower_not_at_all(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    up = _score(synthetic_ratings(sample, runs, higher, tmp_path / "higher.csv"), runs)
    down = _score(synthetic_ratings(sample, runs, lower, tmp_path / "lower.csv"), runs)
    for result, value in ((up, 1.0), (down, 0.0)):
        for scenario in ("couple", "family", "both"):
            share = result.agreement[scenario]
            assert share.value == value and share.ratings > 0, scenario
        both = result.agreement["both"]
        assert both.ratings == 120 and both.pairs == 40 and both.clips == len({p.sample_id for p in read_pair_sample(sample)}) >= 6
        assert both.ci_low == both.ci_high == value  # every resample agrees
        assert result.excluded == {"people_tie": 0, "tied_J": 0, "unscored": 0}
        # raters who answer alike agree among themselves perfectly; the ceiling is theirs
        assert result.alpha["alpha"] == pytest.approx(1.0) and result.floors.ceiling == 1.0
        # the floors beside it: chance, and a constant side (the sample puts sides in random order)
        assert result.floors.chance == 0.5 and 0.3 < (result.floors.side_a or 0) < 0.7
    # the ranking: people who follow J rank the agents as J does, people who reverse it reverse it
    assert (up.tau.tau or 0) > 0.5 and (down.tau.tau or 0) < -0.5
    assert up.ranking[0].run == max(up.ranking, key=lambda e: e.mean_J or -99).run
    assert [e.rank_people for e in up.ranking] == [1, 2, 3, 4]
    for e in up.ranking:
        assert e.ci_low is not None and e.ci_low <= (e.strength or 0) <= (e.ci_high or 0)


def test_coin_tossing_raters_agree_half_the_time_and_their_intervals_cover_it(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    loaded = load_runs(runs)
    values, covered, alphas = [], 0, []
    replicates = 30
    for seed in range(replicates):
        result = score_pairs(synthetic_ratings(sample, runs, coin, tmp_path / f"coin{seed}.csv", seed=seed), loaded, n_resamples=300, seed=seed)
        share = result.agreement["both"]
        assert share.ci_low is not None and share.ci_high is not None
        assert abs((share.value or 0) - 0.5) < 0.18  # four standard errors of 120 coin tosses
        values.append(share.value)
        covered += share.ci_low <= 0.5 <= share.ci_high
        alphas.append(result.alpha["alpha"])
    assert abs(float(np.mean(values)) - 0.5) < 0.03
    # 6-9 clips: the report says a 95% interval covers ~85% at this many (bench/bootstrap_coverage.py)
    assert covered >= 0.8 * replicates, covered
    assert abs(float(np.mean(alphas))) < 0.1  # raters who toss coins do not agree with each other


def test_the_judge_is_scored_against_people_on_the_same_pairs(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    """A judge whose mean turn rating follows J agrees with higher-J raters; one that reverses it does not;
    a run whose turns were never judged has no judge row."""
    assert _score(synthetic_ratings(sample, runs, higher, tmp_path / "h.csv"), runs).judge is None
    for direction, expected in ((1, 1.0), (-1, 0.0)):
        judged = []
        for run in runs:
            copy = tmp_path / f"judge{direction}" / run.name
            shutil.copytree(run, copy)
            lines = []
            for line in (copy / "results" / "sim.jsonl").read_text().splitlines():
                record = json.loads(line)
                J = record["metrics"]["J"]
                # as a judged run records it: the sum and count of its turns' 1-5 ratings
                record["metrics"]["judge_sum"], record["metrics"]["judge_n"] = (int(1000 * (3 + direction * J)), 1000) if J is not None else (0, 0)
                lines.append(json.dumps(record))
            (copy / "results" / "sim.jsonl").write_text("\n".join(lines) + "\n")
            judged.append(copy)
        result = _score(synthetic_ratings(sample, judged, higher, tmp_path / f"j{direction}.csv"), judged)
        assert result.judge is not None and result.judge.value == expected and result.judge.ratings == 120


def test_ties_unscored_and_unrated_lines_are_left_out_and_counted(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    ratings = synthetic_ratings(sample, runs, higher, tmp_path / "r.csv")
    lines = ratings.read_text().splitlines()
    lines[1] = lines[1].replace(",A,because", ",tie,because").replace(",B,because", ",tie,because")
    lines[2] = lines[2].rsplit(",", 2)[0] + ",,"  # not rated yet
    ratings.write_text("\n".join(lines) + "\n")
    result = _score(ratings, runs)
    assert result.excluded["people_tie"] == 1 and result.unrated == 1 and result.agreement["both"].ratings == 118
    assert result.agreement["both"].value == 1.0
    tie = next(e for e in result.ranking if e.ties)  # a tie is half a win each way
    assert tie.ties == 1


def test_score_refuses_bad_ratings_in_one_line_naming_file_and_line(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    good = synthetic_ratings(sample, runs, higher, tmp_path / "good.csv")
    header, first, *rest = good.read_text().splitlines()
    cells = first.split(",")  # pair_id, a_run, a_episode, b_run, b_episode, rater, preferred, reason
    others = [line for line in rest if not line.startswith(cells[0] + ",")]  # the first pair's other raters out
    cases = {
        "unknown run": (",".join([cells[0], "sim-nobody", *cells[2:]]), "is not among the runs given"),
        "bad answer": (",".join([*cells[:6], "maybe", cells[7]]), "preferred must be A, B or tie"),
    }
    for name, (line, words) in cases.items():
        bad = tmp_path / f"{name}.csv"
        bad.write_text("\n".join([header, line, *others]) + "\n")
        result = runner.invoke(app, ["agreement", "score", str(bad), *map(str, runs)])
        assert result.exit_code == 2 and words in result.output and f"{bad}:2" in result.output, (name, result.output)
        assert result.output.count("\n") == 1
    # a file with only pair_id, rater, preferred needs the sample
    bare = synthetic_ratings(sample, runs, higher, tmp_path / "bare.csv", refs=False)
    result = runner.invoke(app, ["agreement", "score", str(bare), *map(str, runs)])
    assert result.exit_code == 2 and "--sample" in result.output
    with_sample = _score(bare, runs, sample=sample)
    assert with_sample.agreement["both"].value == 1.0 and with_sample.agreement["both"].ratings == 120


# ------------------------------------------------------------------------------------------------
# the folder, and the report beside the runs
# ------------------------------------------------------------------------------------------------


def test_score_writes_its_folder_and_the_report_shows_it_beside_the_runs_it_scored(runs: list[Path], sample: Path, tmp_path: Path) -> None:
    ratings = synthetic_ratings(sample, runs, coin, tmp_path / "coin.csv", seed=3)
    out = tmp_path / "people"
    result = runner.invoke(app, ["agreement", "score", str(ratings), *map(str, runs), "--out", str(out), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    assert "Kendall's tau-b" in result.output and "Krippendorff" in result.output and "rescue report" in result.output
    saved = json.loads((out / "agreement.json").read_text())
    assert saved["kind"] == "closed_loop_pairs" and {r["run"] for r in saved["runs"]} == {r.name for r in runs}
    assert (out / "tables" / "agreement_people.md").is_file() and (out / "agreement.html").is_file()

    report = tmp_path / "report"
    result = runner.invoke(app, ["report", *map(str, runs), str(out), "--out", str(report), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    data = json.loads((report / "report.json").read_text())
    entry = data["agreement"][0]
    assert entry["names"] == {r.name: load_run(r).model for r in runs} and entry["warnings"] == []
    html = (report / "report.html").read_text()
    assert html.index("Closed-loop evaluation") < html.index("People and the closed loop")
    people = (report / "tables" / "agreement_people.md").read_text()
    assert "simulator (higher J), both" in people and "ceiling" in people and "always side A" in people
    ranking = (report / "tables" / "agreement_ranking.md").read_text()
    assert all(load_run(r).model in ranking for r in runs)
    # a report without one of the runs it scored says so; a run changed since it was scored too
    partial = runner.invoke(app, ["report", *map(str, runs[1:]), str(out), "--out", str(tmp_path / "partial"), "--resamples", "200"])
    assert partial.exit_code == 0 and "not among this report's runs" in partial.output
    changed = tmp_path / "changed"
    shutil.copytree(runs[0].parent, changed)
    results = changed / runs[0].name / "results" / "sim.jsonl"
    results.write_text(results.read_text() + "\n")
    moved = [changed / r.name for r in runs]
    again = runner.invoke(app, ["agreement", "score", str(ratings), *map(str, runs), "--out", str(tmp_path / "p2"), "--resamples", "50"])
    assert again.exit_code == 0
    text = (tmp_path / "p2" / "agreement.json").read_text().replace(str(runs[0].parent), str(changed))
    (tmp_path / "p2" / "agreement.json").write_text(text)
    stale = runner.invoke(app, ["report", *map(str, moved), str(tmp_path / "p2"), "--out", str(tmp_path / "stale"), "--resamples", "50"])
    assert stale.exit_code == 0 and "its episodes changed since the ratings were scored" in stale.output
