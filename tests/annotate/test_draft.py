"""``rescue annotate draft`` against a scripted model on the loopback server, then validate and build."""

from __future__ import annotations

import base64
import json

import pytest
from typer.testing import CliRunner

from rescue_bench.annotate import load_assets, probe
from rescue_bench.cli import app
from rescue_bench.testing import DraftResponder, FakeOpenAI
from rescue_bench.testing.drafts import message_text
from tests.annotate.helpers import read_jsonl

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
MODEL = "openai-video/fake/drafter"


def _draft(server, assets, *extra):
    return runner.invoke(
        app,
        ["annotate", "draft", str(assets), "--model", MODEL, "--display", "none", "--max-retries", "2", *extra],
        env={"FAKE_BASE_URL": server.base_url},
    )


def _windows(assets, window_cues=40):
    from rescue_bench.annotate import split_windows

    return sum(len(split_windows(m.cues, window_cues)) for m in load_assets(assets))


def _requests(assets):
    """The distinct requests of the segments' (single) windows with --media none: the two couple
    segments have the same subtitles, so the same request, which is sent once (the cache and the
    channel's merging of identical requests)."""
    from rescue_bench.annotate import SegmentDraft

    drafts = [SegmentDraft(m, media="none") for m in load_assets(assets)]
    return len({d.request(w) for d in drafts for w in d.windows})


def test_valid_drafts_validate_build_and_resume_from_cache(isolated_env, assets, tmp_path):
    responder = DraftResponder("valid")
    with FakeOpenAI(responder) as server:
        result = _draft(server, assets)
        assert result.exit_code == 0, result.output + result.stderr
        assert _windows(assets) == 3 and server.stats.requests == _requests(assets) == 2  # one request per window, no re-ask
        drafts = read_jsonl(assets / "drafts.jsonl")
        again = _draft(server, assets)
        assert again.exit_code == 0, again.output
        assert server.stats.requests == 2  # the same command again: every call from the cache
    assert [d["sample_id"] for d in drafts] == ["couple/s01_seg01", "couple/s01_seg02_textonly", "family/f01_seg01"]
    couple = drafts[0]
    assert couple["scenario"] == "couple" and couple["participants"] == ["Robin", "Casey"]
    assert couple["source_file"] == "couple/s01_seg01/video.mp4"
    draft = couple["draft"]
    assert draft["model"] == MODEL and len(draft["prompt_sha"]) == 16 and draft["media"] == "none"
    assert draft["created"] and draft["calls"] == 1 and draft["reasked"] == 0
    rows = couple["rows"]
    assert [r["row_index"] for r in rows] == list(range(1, 10))
    assert rows[1]["start_time"] == 3.0 and rows[1]["end_time"] == 5.6
    assert not any("draft_problems" in r for d in drafts for r in d["rows"])
    resumed = read_jsonl(assets / "drafts.jsonl")
    for a, b in zip(drafts, resumed):
        a["draft"].pop("created"), b["draft"].pop("created")
        assert a == b

    validate = runner.invoke(app, ["data", "validate", str(assets / "drafts.jsonl")])
    assert validate.exit_code == 0, validate.output
    assert "0 errors, 0 warnings" in validate.output
    build = runner.invoke(app, ["tasks", "build", "--data", str(assets / "drafts.jsonl"), "--out", str(tmp_path / "tasks")])
    assert build.exit_code == 0, build.output
    for task in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        assert read_jsonl(tmp_path / "tasks" / f"{task}.jsonl"), task


def test_the_request_carries_the_cues_and_the_rules(isolated_env, assets):
    responder = DraftResponder("valid")
    with FakeOpenAI(responder) as server:
        assert _draft(server, assets, "--limit", "1").exit_code == 0
    (messages,) = responder.requests
    system, user = message_text(messages[0]), message_text(messages[1])
    assert "couple session" in system and "pursue_withdraw" in system and "goal_align" in system
    cues = json.loads(user.split(":\n", 1)[1].split("\n\n")[0])
    manifest = load_assets(assets)[0]
    assert cues == [c.model_dump(mode="json") for c in manifest.cues]


def test_a_draft_needing_the_reask_is_fixed_by_it(isolated_env, assets):
    responder = DraftResponder("reask")
    with FakeOpenAI(responder) as server:
        result = _draft(server, assets)
        assert result.exit_code == 0, result.output
        assert server.stats.requests == 2 * _requests(assets)
    drafts = read_jsonl(assets / "drafts.jsonl")
    assert not any("draft_problems" in r for d in drafts for r in d["rows"])
    assert all(d["draft"]["reasked"] == 1 for d in drafts)
    reask = next(m for m in responder.requests if len(m) > 2)
    follow_up = message_text(reask[-1])
    assert reask[2]["role"] == "assistant"  # the model sees its own answer
    assert "rows[1].internal_emotion[0].intensity: 14 is not an integer 0-10" in follow_up
    assert "rows[1].utterance_type" in follow_up and "only therapist rows have support_strategy" in follow_up
    assert "rows[0].support_strategy[0].strategy_type" in follow_up


def test_still_invalid_after_the_reask_is_dropped_and_recorded(isolated_env, assets, tmp_path):
    with FakeOpenAI(DraftResponder("invalid")) as server:
        result = _draft(server, assets, "--out", str(tmp_path / "d.jsonl"))
        assert result.exit_code == 0, result.output
    drafts = read_jsonl(tmp_path / "d.jsonl")
    couple = drafts[0]["rows"]
    problems = {p["field"]: p for p in couple[1]["draft_problems"]}
    assert set(problems) == {"internal_emotion[0].intensity", "utterance_type", "support_strategy"}
    assert problems["internal_emotion[0].intensity"]["value"] == 14
    assert couple[1]["internal_emotion"] == [{"person": "Robin", "emotion_description": "hurt and unheard"}]
    assert "utterance_type" not in couple[1] and "support_strategy" not in couple[1]
    assert couple[0]["draft_problems"][0]["field"] == "support_strategy[0].strategy_type"
    assert "support_strategy" not in couple[0] or couple[0]["support_strategy"] == []
    assert runner.invoke(app, ["data", "validate", str(tmp_path / "d.jsonl")]).exit_code == 0


def test_garbage_gives_subtitle_rows_with_problems_never_silence(isolated_env, assets):
    with FakeOpenAI(DraftResponder("garbage")) as server:
        result = _draft(server, assets)
        assert result.exit_code == 0, result.output
        assert server.stats.requests == 2 * _requests(assets)
    drafts = read_jsonl(assets / "drafts.jsonl")
    manifest = {m.segment_id: m for m in load_assets(assets)}
    for clip in drafts:
        assert len(clip["rows"]) == len(manifest[clip["sample_id"]].cues)
        assert all("subtitles only" in r["draft_problems"][0]["problem"] for r in clip["rows"])
    assert runner.invoke(app, ["data", "validate", str(assets / "drafts.jsonl")]).exit_code == 0


def test_the_problem_count_is_what_the_drafts_hold_and_validate_counts(isolated_env, assets):
    """The attack: a window whose answers hold no rows puts a problem on every row and two more on the
    window's record; the command counted both (12 against validate's 10 on a 9-cue segment)."""
    with FakeOpenAI(DraftResponder("garbage")) as server:
        result = _draft(server, assets, "--limit", "1")
        assert result.exit_code == 0, result.output
    (clip,) = read_jsonl(assets / "drafts.jsonl")
    on_rows = sum(len(r.get("draft_problems", [])) for r in clip["rows"])
    assert any(w["problems"] for w in clip["draft"]["windows"])  # the window's own record has some too
    validate = runner.invoke(app, ["data", "validate", str(assets / "drafts.jsonl")])
    assert f"{on_rows} draft problems left in {len(clip['rows'])} rows" in validate.output, validate.output
    (run_json,) = (assets / ".draft-run").glob("*/run.json")
    assert json.loads(run_json.read_text())["calls"]["problems"] == on_rows
    header = next(line for line in result.output.splitlines() if "rows" in line and "┃" in line)
    row = next(line for line in result.output.splitlines() if line.startswith("│"))
    columns = [c.strip() for c in header.strip("┃ ").split("┃")]
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[columns.index("rows") + 1] == str(on_rows)  # the column after rows: the problems kept
    assert f"Drafts of {MODEL} (subtitles only)" in result.output and "(none)" not in result.output  # the title says what was sent


def test_long_segments_go_in_windows_with_a_carried_summary(isolated_env, assets):
    responder = DraftResponder("valid")
    with FakeOpenAI(responder) as server:
        result = _draft(server, assets, "--window-cues", "4", "--limit", "1")
        assert result.exit_code == 0, result.output
    assert len(responder.requests) == 3
    second = message_text(responder.requests[1][1])
    assert "part 2 of 3" in second and "Summary of the session so far: Up to cue" in second
    assert "The first row you write is row " in second
    rows = read_jsonl(assets / "drafts.jsonl")[0]["rows"]
    assert [r["row_index"] for r in rows] == list(range(1, 10))
    assert not any("draft_problems" in r for r in rows)


def _parts(messages, kind):
    return [p for p in messages[1]["content"] if isinstance(messages[1]["content"], list) and p.get("type") == kind]


def test_media_video_sends_each_windows_span_as_video(isolated_env, assets, tmp_path):
    responder = DraftResponder("valid")
    with FakeOpenAI(responder) as server:
        result = _draft(server, assets, "--media", "video", "--window-cues", "5", "--limit", "1")
        assert result.exit_code == 0, result.output
    manifest = load_assets(assets)[0]
    for messages, window in zip(responder.requests, [(0.5, 11.0), (11.2, 20.2)]):
        (video,) = _parts(messages, "video_url")
        url = video["video_url"]["url"]
        assert url.startswith("data:video/mp4;base64,")
        clip = tmp_path / "sent.mp4"
        clip.write_bytes(base64.b64decode(url.split(",", 1)[1]))
        info = probe(clip)
        assert info.video_codec == "h264" and abs(info.duration - (window[1] - window[0])) <= 0.3
    assert "Attached: the video of 0.50-11.00 s" in message_text(responder.requests[0][1])
    assert manifest.segment_id == "couple/s01_seg01"


def test_media_frames_sends_images_and_sound(isolated_env, assets):
    responder = DraftResponder("valid")
    with FakeOpenAI(responder) as server:
        result = _draft(server, assets, "--media", "frames", "--limit", "1")
        assert result.exit_code == 0, result.output
    (messages,) = responder.requests
    images = _parts(messages, "image_url")
    assert len(images) == 4 and all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in images)
    (sound,) = _parts(messages, "input_audio")
    assert sound["input_audio"]["format"] == "mp3"


def test_text_only_segments_send_no_media(isolated_env, assets):
    responder = DraftResponder("valid")
    with FakeOpenAI(responder) as server:
        assert _draft(server, assets, "--media", "video").exit_code == 0
    text_only = [m for m in responder.requests if "Robin, Casey" in message_text(m[1]) and not isinstance(m[1]["content"], list)]
    assert len(text_only) == 1
    drafts = {d["sample_id"]: d for d in read_jsonl(assets / "drafts.jsonl")}
    assert drafts["couple/s01_seg02_textonly"]["draft"]["media"] == "none"
    assert drafts["couple/s01_seg01"]["draft"]["media"] == "video"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "openai/gpt-4o", "--media", "video"], "cannot take video"),
        (["--model", "anthropic/claude", "--media", "video"], "cannot take video"),
        (["--model", MODEL, "--media", "audio"], "--media must be one of video, frames, none"),
        (["--model", "baseline/majority"], "offline baseline"),
    ],
)
def test_bad_model_or_media_is_one_line_and_sends_nothing(isolated_env, assets, args, fragment):
    with FakeOpenAI(DraftResponder("valid")) as server:
        result = runner.invoke(app, ["annotate", "draft", str(assets), *args, "--display", "none"],
                               env={"FAKE_BASE_URL": server.base_url, "OPENAI_BASE_URL": server.base_url})
        assert server.stats.requests == 0
    assert result.exit_code == 2 and fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (assets / "drafts.jsonl").exists()


def test_not_an_assets_folder(isolated_env, tmp_path):
    result = runner.invoke(app, ["annotate", "draft", str(tmp_path), "--model", MODEL, "--display", "none"])
    assert result.exit_code == 2 and "no segments" in result.stderr


def test_a_segment_whose_calls_fail_is_listed_and_not_written(isolated_env, assets):
    def responder(messages):
        if "Dana" in message_text(messages[1]):
            return 400, "this segment is refused"
        return DraftResponder("valid")(messages)

    with FakeOpenAI(responder) as server:
        result = _draft(server, assets)
    assert result.exit_code == 2
    assert "segment family/f01_seg01: no draft" in result.stderr
    assert "1 of 3 segments have no draft" in result.stderr
    run = json.loads(next((assets / ".draft-run").glob("*/run.json")).read_text())
    assert run["kind"] == "draft" and run["status"] == "failed" and set(run["segments"]["failed"]) == {"family/f01_seg01"}
    written = [d["sample_id"] for d in read_jsonl(assets / "drafts.jsonl")]
    assert written == ["couple/s01_seg01", "couple/s01_seg02_textonly"]
