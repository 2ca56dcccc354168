"""Server-rendered pages (Jinja2, autoescaped) and media (HTTP range requests, assets folder only)."""

from __future__ import annotations

import functools
from typing import Any

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from rescue_bench import labels
from rescue_bench.review import access, adjudication, edits, progress, ratings
from rescue_bench.review.assets import RowText, row_number, subtitles, times_changed
from rescue_bench.review.deps import AppState, Auth, AuthError, state
from rescue_bench.review.errors import NotFound
from rescue_bench.review.fields import FIELDS, LABEL_KINDS, SECTIONS, choices, compact, readable
from rescue_bench.review.models import REVIEW_MODES, dumps
from rescue_bench.review.security import safe_next

router = APIRouter(include_in_schema=False)

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("rescue_bench.review", "templates"),
    autoescape=True,  # every template, whatever its name: annotation text is user input
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
    auto_reload=False,  # templates ship with the package: no mtime check per render
)


def compile_templates() -> None:
    """Compile every page's template (about 0.1 s for the largest on a busy machine), so no first
    request of a page waits for it; the app calls it in a worker thread at start."""
    for name in _env.list_templates(extensions=["html"]):
        _env.get_template(name)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 segment``, ``2 segments`` (``many``: an irregular plural)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


_env.filters["compact"] = compact
_env.filters["plural"] = plural
_env.filters["dumps"] = dumps
_env.filters["readable"] = readable

KINDS = {f.name: f.kind for f in FIELDS}
"""How each row field is edited (the adjudication page offers an own value of the same kind)."""


def shown(name: str, value: Any) -> str:
    """A field value as the pages show it: label keys by their readable name, lists on one line."""
    if KINDS.get(name) in LABEL_KINDS and isinstance(value, str) and value:
        return readable(value)
    if name == "support_strategy" and isinstance(value, list):
        value = [{**v, "strategy_type": readable(v["strategy_type"])} if isinstance(v, dict) and isinstance(v.get("strategy_type"), str) and v["strategy_type"] else v for v in value]
    return compact(value)


def diff_options(name: str, options: list[adjudication.OptionOut]) -> list[list[tuple[str, str]]]:
    """Per option of a disputed field, its items as ``(text, status)``: a list field is compared item
    by item (``same``: every other option holds this item too; ``differs``: not), a scalar is one item."""
    if KINDS.get(name) not in ("list", "names", "ints"):
        return [[(shown(name, o.value) if o.present else "(absent)", "differs")] for o in options]
    lists = [[dumps(v) for v in o.value] if isinstance(o.value, list) else [] for o in options]
    out = []
    for i, o in enumerate(options):
        if not o.present or not isinstance(o.value, list) or not o.value:
            out.append([("(absent)" if not o.present else "(none)", "differs")])
            continue
        others = [set(items) for j, items in enumerate(lists) if j != i]
        out.append([(shown(name, [v]), "same" if all(lists[i][k] in other for other in others) else "differs") for k, v in enumerate(o.value)])
    return out


_env.globals["diff_options"] = diff_options
_env.globals["shown"] = shown
_FIELD_LABELS = {f.name: f.label for f in FIELDS}
_env.globals["field_label"] = lambda name: _FIELD_LABELS.get(name, name)

SHORTCUTS = (
    ("Ctrl+Enter", "save, reviewed, next row"),
    ("Ctrl+S", "save"),
    ("Ctrl+Space", "skip / discard row"),
    ("Alt+J / Alt+Shift+J", "next / previous label list"),
    ("P, A, 1…", "pick the choice (0 none)"),
    ("Alt+N / Alt+P", "next / previous row"),
    ("Alt+Shift+N", "next segment"),
    ("Alt+C", "comment"),
    ("Esc", "leave a field"),
    ("Alt+K / Alt+R", "play-pause / replay"),
    ("Alt+, / Alt+.", "slower / faster"),
    ("Alt+L", "loop"),
)
"""The row page's keyboard shortcuts (row.js binds them): every one in view at the bottom of the page
(the key bar), and in the keys dialog (``?``) with :data:`DIALOG_KEYS`."""

DIALOG_KEYS = (
    ("Ctrl+Enter in the comment box", "post the comment"),
    ("Enter or Ctrl+Enter in the skip dialog", "skip the row"),
    ("Alt+D in the skip dialog", "discard the row"),
    ("?", "this list"),
)
"""The keys of the row page's boxes and dialogs, listed in the keys dialog only."""

SUBTITLE_NEIGHBOURS = 2
"""Rows of subtitles shown on each side of the current row."""


@functools.lru_cache(maxsize=512)
def _form_html(scenario: str, participants: tuple[str, ...]) -> Markup:
    """The editor's fields for a segment's choices (no row values in it): rendered once, reused."""
    opts = choices(scenario, list(participants))
    return Markup(_env.get_template("row_form.html").render(fields=FIELDS, sections=SECTIONS, choices=opts))


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """Render a page (straight through Jinja: Starlette's TemplateResponse adds per-request work the
    templates do not use)."""
    data = state(request).session_data(request)
    base = {"csrf_token": data.csrf if data else "", "user": None}
    return HTMLResponse(_env.get_template(name).render({**base, **context}), status_code=status)


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    user = None
    try:
        user = state(request).user(request)
    except AuthError:
        pass
    return render(request, "error.html", {"user": user, "status": status, "message": message}, status)


@router.get("/login")
def login_page(request: Request, next: str = "/") -> Response:
    return render(request, "login.html", {"next": safe_next(next)})  # never off-site after login


@router.get("/")
def dashboard(request: Request, auth: Auth) -> Response:
    with auth.read() as (session, user):
        segments = progress.segment_list(session, user)
        figures = progress.figures(session, user, segments)
        overview = progress.overview(session) if user.is_admin else None
        annotators = progress.with_progress(progress.per_annotator(session), overview) if overview else []
        recent = edits.audit_entries(session, limit=15) if user.is_admin else []
        questionnaires = ratings.sets_for(session, user)
        reveal = access.reveal_rule(session)
        return render(
            request,
            "dashboard.html",
            {
                "user": user,
                "segments": segments,
                "figures": figures,
                "overview": overview,
                "annotators": annotators,
                "recent": recent,
                "questionnaires": questionnaires,
                "reveal": reveal,
                "reveal_choices": access.REVEAL_CHOICES,
                "independent": sum(1 for s in segments if s.mode == "independent"),
            },
        )


@router.get("/segments/{segment}")
def segment_page(segment: str, request: Request, st: AppState, auth: Auth) -> Response:
    with auth.read() as (session, user):
        seg, copy = access.get_segment_and_copy(session, user, segment)
        seen = access.SegmentView(seg, *access.status_for(session, user, seg, copy))  # an annotator's own discard in independent mode
        rows = edits.segment_rows(session, user, seg, copy=copy)
        comments = edits.comments(session, seg, viewer=user)
        assigned = access.assignees(session, seg)
        all_users = _active_usernames(session) if user.is_admin else []
        manifest = st.assets.manifest(seg.sample_id)
        video = st.assets.video(seg.sample_id) is not None
        listed = progress.segment_list(session, user, only=seg)  # the status and counts the dashboard shows
        return render(
            request,
            "segment.html",
            {
                "user": user,
                "seg": seen,
                "entry": listed[0] if listed else None,
                "states": progress.row_states(session, seg) if user.is_admin else {},
                "rows": rows,
                "comments": comments,
                "assignees": assigned,
                "all_users": all_users,
                "has_video": video,
                "manifest_problem": manifest.problem,
                "has_manifest": manifest.manifest is not None,
                "modes": REVIEW_MODES,
            },
        )


@router.get("/segments/{segment}/next")
def next_segment(segment: str, auth: Auth) -> Response:
    """The first row not reviewed of the next segment after this one (in the user's list) that is
    neither done nor discarded, wrapping around; the dashboard when there is none."""
    with auth.read() as (session, user):
        listed = progress.segment_list(session, user)
        keys = [s.id for s in listed]
        start = keys.index(segment) + 1 if segment in keys else 0
        for s in listed[start:] + listed[:start]:
            if s.id == segment or s.status == "discarded" or s.reviewed >= s.rows:
                continue
            seg, copy = access.get_segment_and_copy(session, user, s.id)
            todo = next((r.position for r in edits.segment_rows(session, user, seg, copy=copy) if not r.reviewed), 1)
            return RedirectResponse(f"/segments/{s.id}/rows/{todo}", status_code=303)
        return RedirectResponse("/", status_code=303)


def adjudication_media(request: Request, seg: Any, rows: list[adjudication.RowComparisonOut]) -> dict[str, Any]:
    """What the adjudication page shows beside each row: whether the segment has a video and which rows
    have their own clip, each row's subtitles (with one row on each side), and the segment's choices
    for a value of the adjudicator's own."""
    st = state(request)
    manifest = st.assets.manifest(seg.sample_id).manifest
    finals: list[RowText | None] = [None] * seg.row_count
    for r in rows:
        if 1 <= r.row_index <= seg.row_count:
            finals[r.row_index - 1] = RowText.of(r.final.row)
    clips = {r.row_index: st.assets.row_clip(seg.sample_id, row_number(r.final.row, r.row_index)) is not None for r in rows}
    return {
        "has_video": st.assets.video(seg.sample_id) is not None,
        "clips": clips,
        "clip_numbers": {r.row_index: row_number(r.final.row, r.row_index) for r in rows},
        "row_subs": {r.row_index: subtitles(finals, r.row_index, manifest, neighbours=1) for r in rows},
        "choices": choices(seg.scenario, list(seg.participants)),
        "kinds": KINDS,
    }


def _active_usernames(session: Any) -> list[str]:
    from rescue_bench.review.users import list_users

    return [u.username for u in list_users(session) if u.active]


@router.get("/segments/{segment}/rows/{row_index}")
def row_page(segment: str, row_index: int, request: Request, st: AppState, auth: Auth) -> Response:
    with auth.read() as (session, user):
        seg, copy = access.get_segment_and_copy(session, user, segment)
        # the status this viewer sees: their own copy's discard in independent mode, never another's
        seen = access.SegmentView(seg, *access.status_for(session, user, seg, copy))
        if not 1 <= row_index <= seg.row_count:
            raise NotFound(f"segment has no row {row_index}")
        reach = range(row_index - SUBTITLE_NEIGHBOURS, row_index + SUBTITLE_NEIGHBOURS + 1)
        near = edits.segment_rows(session, user, seg, [p for p in reach if 1 <= p <= seg.row_count], copy=copy)
        comments = [c for c in edits.comments(session, seg, viewer=user) if c.row in (None, row_index)]
        mine = next(r for r in near if r.position == row_index)
        # a row never saved has no history (comments are listed on their own); an annotator of an
        # independent segment sees the history of their own copy only (the others' values are blind)
        # (a shared segment, the common case, needs no lookup: everyone there edits the final copy)
        editing_final, own_copy = True, None
        if seg.review_mode == "independent":
            editing_final = copy.kind == "final"
            own_copy = None if editing_final else copy.id
        history = edits.audit_entries(session, row_id=mine.row_id, copy_id=own_copy, limit=30) if mine.version else []
        other = adjudication.other_copies(session, user, seg, row_index)
        by_pos = {r.position: r for r in near}
        current = by_pos[row_index]
        manifest = st.assets.manifest(seg.sample_id)
        number = row_number(current.row, row_index)
        clip = st.assets.row_clip(seg.sample_id, number) is not None
        keyframe = st.assets.row_keyframe(seg.sample_id, number) is not None
        video = st.assets.video(seg.sample_id) is not None
        # subtitles of this row and its neighbours: a padded list so positions line up
        rows_for_subs: list[RowText | None] = [None] * seg.row_count
        for pos, item in by_pos.items():
            rows_for_subs[pos - 1] = RowText.of(item.row)
        subs = subtitles(rows_for_subs, row_index, manifest.manifest, neighbours=SUBTITLE_NEIGHBOURS)
        form_html = _form_html(seg.scenario, tuple(seg.participants))
        known = {f.name for f in FIELDS}
        extras = {k: v for k, v in current.row.items() if k not in known}
        return render(
            request,
            "row.html",
            {
                "user": user,
                "seg": seen,
                "state": current,
                "position": row_index,
                "form_html": form_html,
                "extras": extras,
                "subs": subs,
                "has_clip": clip,
                "clip_number": number,
                "has_keyframe": keyframe,
                "has_video": video,
                "manifest_problem": manifest.problem,
                "comments": comments,
                "history": history,
                "others": other,
                "editing_final": editing_final,
                "labels": {f.name: f.label for f in FIELDS},
                "shortcuts": SHORTCUTS,
                "dialog_keys": DIALOG_KEYS,
                "therapist": labels.THERAPIST,
                "group_labels": sorted(labels.GROUP_LABELS.values()),
                "page_data": {
                    "user": user.username,
                    "segment": seg.key,
                    "position": row_index,
                    "rows": seg.row_count,
                    "version": current.version,
                    "row": current.row,
                    "draft": current.draft,
                    "reviewed": current.reviewed,
                    "edited": current.edited,
                    "updatedBy": current.updated_by,
                    "flag": current.flag,
                    "flagReason": current.flag_reason,
                    "segmentStatus": seen.status,
                    "clipStale": clip and times_changed(current.row, current.draft),
                },
            },
        )


# ------------------------------------------------------------------------------------------------
# media: only files inside the assets folder, only for segments the user may see
# ------------------------------------------------------------------------------------------------


def _file(path: Any, media_type: str) -> Response:
    if path is None:
        raise NotFound("no such media file")
    return FileResponse(path, media_type=media_type, headers={"Cache-Control": "private, max-age=3600"})


@router.get("/media/{segment}/video")
def segment_video(segment: str, st: AppState, auth: Auth) -> Response:
    with auth.read() as (session, user):
        seg = access.get_segment(session, user, segment)
        return _file(st.assets.video(seg.sample_id), "video/mp4")


@router.get("/media/{segment}/rows/{row_index}.mp4")
def row_clip(segment: str, row_index: int, st: AppState, auth: Auth) -> Response:
    with auth.read() as (session, user):
        seg = access.get_segment(session, user, segment)
        return _file(st.assets.row_clip(seg.sample_id, row_index), "video/mp4")


@router.get("/media/{segment}/rows/{row_index}.jpg")
def row_keyframe(segment: str, row_index: int, st: AppState, auth: Auth) -> Response:
    with auth.read() as (session, user):
        seg = access.get_segment(session, user, segment)
        return _file(st.assets.row_keyframe(seg.sample_id, row_index), "image/jpeg")


@router.get("/favicon.ico")
def favicon() -> Response:
    return RedirectResponse("/static/favicon.svg", status_code=301)
