"""``rescue eval --mode video``: each shown row's clip goes to the model as video, after its transcript line."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("av", reason="PyAV (the av package) is needed to make and cut test media")

from rescue_bench.annotate import probe  # noqa: E402
from rescue_bench.cli import app  # noqa: E402
from rescue_bench.data import load_clips  # noqa: E402
from rescue_bench.engine.video_mode import VIDEO_NOTE  # noqa: E402
from rescue_bench.prompts import render  # noqa: E402
from rescue_bench.tasks import BuildOptions, build_instances  # noqa: E402
from rescue_bench.testing import DraftResponder, FakeOpenAI, ValidAnswers  # noqa: E402
from rescue_bench.testing.drafts import message_text  # noqa: E402
from rescue_bench.testing.media import COUPLE, FAMILY, make_segment  # noqa: E402
from tests.factories import read_records  # noqa: E402

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
MODEL = "openai-video/fake/watcher"


@pytest.fixture(scope="module")
def clips_dir(tmp_path_factory) -> Path:
    """Assets with drafts (scripted drafting model) and every row's clip; one segment has no video."""
    root = tmp_path_factory.mktemp("video_mode")
    src = root / "src"
    make_segment(src, "couple/c1", COUPLE, size=(160, 120))
    make_segment(src, "family/f1", FAMILY, size=(160, 120))
    make_segment(src, "couple/c2_textonly", COUPLE, video=None)
    assets = root / "assets"
    assert runner.invoke(app, ["annotate", "prepare", str(src), "--out", str(assets)]).exit_code == 0
    env = {"FAKE_BASE_URL": "", "FAKE_API_KEY": "k", "RESCUE_CACHE_DIR": str(root / "draft-cache")}
    with FakeOpenAI(DraftResponder("valid")) as server:
        env["FAKE_BASE_URL"] = server.base_url
        result = runner.invoke(app, ["annotate", "draft", str(assets), "--model", "openai-video/fake/d", "--display", "none"], env=env)
        assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["annotate", "clips", str(assets)]).exit_code == 0
    return assets


class Watcher:
    """Answers every task validly from the text parts, and keeps each request's parts."""

    def __init__(self) -> None:
        self.answers = ValidAnswers()
        self.requests: list[list[dict]] = []
        self.lock = threading.Lock()

    def __call__(self, messages):
        with self.lock:
            self.requests.append(messages)
        flat = [{"role": m["role"], "content": message_text(m)} for m in messages]
        return self.answers(flat)


def _eval(server, assets, out, *extra, model=MODEL):
    return runner.invoke(
        app,
        ["eval", "--model", model, "--mode", "video", "--assets", str(assets), "--data", str(assets / "drafts.jsonl"),
         "--out", str(out), "--display", "none", "--no-bertscore", "--max-retries", "2", *extra],
        env={"FAKE_BASE_URL": server.base_url, "FAKE_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url},
    )


def _shown(instance):
    return [v.row_index for v in instance.context] + ([instance.current.row_index] if instance.current else [])


def _instances(assets):
    clips = load_clips([assets / "drafts.jsonl"])
    out = []
    for task in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        out += build_instances(clips, task, BuildOptions(mode="dialogue"))
    return out


def test_video_mode_sends_each_shown_rows_clip(isolated_env, clips_dir, tmp_path):
    watcher = Watcher()
    with FakeOpenAI(watcher) as server:
        result = _eval(server, clips_dir, tmp_path / "run")
        assert result.exit_code == 0, result.output + result.stderr
        sent = server.stats.requests
        again = _eval(server, clips_dir, tmp_path / "run2")
        assert again.exit_code == 0 and server.stats.requests == sent  # resumed from the cache
    instances = {i.id: i for i in _instances(clips_dir)}
    # the subtitles-only segment has no clips: its instances that show a row cannot run (one that
    # shows no row at all, e.g. STP at the first row, needs no clip)
    missing = [i for i in instances.values() if i.sample_id == "couple/c2_textonly" and _shown(i)]
    complete = [i for i in instances.values() if i not in missing]
    assert complete and missing
    records = read_records(tmp_path / "run")
    assert sorted(r["id"] for r in records) == sorted(i.id for i in complete)
    assert all(r["valid"] for r in records)

    drafts = {c.sample_id: c for c in load_clips([clips_dir / "drafts.jsonl"])}
    checked = 0
    for messages in watcher.requests:
        parts = messages[-1]["content"]
        text = "".join(p["text"] for p in parts if p["type"] == "text")
        instance = next(i for i in complete if render(i).user in text)
        assert text == VIDEO_NOTE + render(instance).user  # the dialogue prompt, unchanged, plus the note
        shown = _shown(instance)
        videos = [p for p in parts if p["type"] == "video_url"]
        assert len(videos) == len(shown)
        # each clip directly follows its row's line
        kinds = [p["type"] for p in parts]
        assert kinds == ["text"] + ["text", "video_url"] * len(shown) + ["text"]
        for part, row_index in zip(videos, shown):
            url = part["video_url"]["url"]
            assert url.startswith("data:video/mp4;base64,")
            clip = tmp_path / "sent.mp4"
            clip.write_bytes(base64.b64decode(url.split(",", 1)[1]))
            row = drafts[instance.sample_id].rows[row_index - 1]
            assert abs(probe(clip).duration - (row.end_time - row.start_time)) <= 0.1
            checked += 1
    assert checked > 0

    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["settings"]["mode"] == "video" and run["settings"]["assets"] == str(clips_dir)
    assert run["video"] == {"assets": str(clips_dir), "instances": len(instances), "evaluated": len(complete),
                            "missing_clips": len(missing), "missing_file": "missing_clips.jsonl"}
    listed = [json.loads(line) for line in (tmp_path / "run" / "missing_clips.jsonl").read_text().splitlines()]
    assert sorted(m["id"] for m in listed) == sorted(i.id for i in missing)
    assert all(m["missing_rows"] for m in listed)
    assert f"{len(missing)} of {len(instances)} instances were not evaluated" in result.stderr


def test_models_that_take_no_video_are_refused_before_any_call(isolated_env, clips_dir, tmp_path):
    with FakeOpenAI(Watcher()) as server:
        for model in ("openai/gpt-4o", "anthropic/claude-sonnet-4-5", "openai-api/fake/m"):
            result = _eval(server, clips_dir, tmp_path / "run", model=model)
            assert result.exit_code == 2 and "cannot take video" in result.stderr, result.output
            assert len(result.stderr.strip().splitlines()) == 1
        assert server.stats.requests == 0


def test_baselines_run_on_the_same_instances(isolated_env, clips_dir, tmp_path):
    with FakeOpenAI(Watcher()) as server:
        result = _eval(server, clips_dir, tmp_path / "run", model="baseline/majority")
        assert result.exit_code == 0, result.output
    records = read_records(tmp_path / "run")
    expected = [i.id for i in _instances(clips_dir) if not (i.sample_id == "couple/c2_textonly" and _shown(i))]
    assert sorted(r["id"] for r in records) == sorted(expected)


def test_options_and_clips_that_cannot_be_sent(isolated_env, clips_dir, tmp_path):
    base = ["eval", "--display", "none", "--no-bertscore", "--data", str(clips_dir / "drafts.jsonl")]
    result = runner.invoke(app, [*base, "--mode", "video"])
    assert result.exit_code == 2 and "--mode video needs --assets" in result.stderr
    result = runner.invoke(app, [*base, "--assets", str(clips_dir)])
    assert result.exit_code == 2 and "--assets is only used with --mode video" in result.stderr

    broken = tmp_path / "assets"
    import shutil

    shutil.copytree(clips_dir, broken)
    bad = broken / "couple/c1/rows/2.mp4"
    bad.write_bytes(b"not a video at all")
    with FakeOpenAI(Watcher()) as server:
        result = _eval(server, broken, tmp_path / "run")
        assert server.stats.requests == 0
    assert result.exit_code == 2 and str(bad) in result.stderr and "not an MP4 clip" in result.stderr

    for path in broken.rglob("rows/*.mp4"):
        path.unlink()
    with FakeOpenAI(Watcher()) as server:
        result = _eval(server, broken, tmp_path / "run")
    assert result.exit_code == 2 and "has its row clips" in result.stderr


def test_a_video_run_loads_the_clips_and_builds_each_task_once(isolated_env, clips_dir, tmp_path, monkeypatch):
    """The run is planned once (``plan_run``): the clips are loaded once and each task's instances
    built once, then the video check and the evaluation read that plan (they each loaded and built
    it again: three loads, three builds per task)."""
    import rescue_bench.data.load as load
    import rescue_bench.data.validate as validate
    import rescue_bench.tasks as tasks
    import rescue_bench.tasks.build as build

    calls = {"load": 0, "build": 0}
    real_read, real_build = load.read_paths, build.build_checked

    def counted_read(*args, **kwargs):
        calls["load"] += 1
        return real_read(*args, **kwargs)

    def counted_build(*args, **kwargs):
        calls["build"] += 1
        return real_build(*args, **kwargs)

    # Every way in is counted: load_clips and load_checked read through read_paths; build_instances
    # and the plan's build_checked through build_checked.
    for module in (load, validate):
        monkeypatch.setattr(module, "read_paths", counted_read)
    for module in (tasks, build):
        monkeypatch.setattr(module, "build_checked", counted_build)
    with FakeOpenAI(Watcher()) as server:
        result = _eval(server, clips_dir, tmp_path / "run", "--workers", "1", "--tasks", "itp,er")
    assert result.exit_code == 0, result.output + result.stderr
    assert calls == {"load": 1, "build": 2}, calls


def test_video_workers_evaluate_the_parents_plan(isolated_env, clips_dir, tmp_path):
    """Two workers evaluate the plan the parent made (its video plan included: each shown row's
    clip), and write what one process writes."""
    with FakeOpenAI(Watcher()) as server:
        one = _eval(server, clips_dir, tmp_path / "one", "--workers", "1", "--tasks", "itp,stp")
        assert one.exit_code == 0, one.output + one.stderr
        two = _eval(server, clips_dir, tmp_path / "two", "--workers", "2", "--tasks", "itp,stp")
        assert two.exit_code == 0, two.output + two.stderr
    assert json.loads((tmp_path / "two" / "run.json").read_text())["workers"] == 2
    for name in ("summary.json", "results/itp.jsonl", "results/stp.jsonl", "missing_clips.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
