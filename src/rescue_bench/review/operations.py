"""What the ``rescue review`` commands do to the database, one function per action.

Each function takes the :class:`~rescue_bench.review.db.Database`, runs its transaction(s) and returns
plain values, so the command line only parses its arguments and prints; it holds no query and no
ORM class. Database errors come out as one-line :class:`~rescue_bench.review.db.DatabaseError`
(:func:`~rescue_bench.review.db.database_errors`), refusals as the services'
:class:`~rescue_bench.review.errors.ReviewError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from rescue_bench.data.models import Clip
from rescue_bench.judge_ratings import PAIR_RATINGS_COLUMNS, RATINGS_COLUMNS, PairLine, SampleItem
from rescue_bench.review import access, pairs, practice, ratings, store, users
from rescue_bench.review.db import Database, database_errors
from rescue_bench.review.errors import Invalid
from rescue_bench.review.models import RatingRater, RatingSet, Segment, Setting, User

ASSETS_SETTING = "assets_dir"
"""The database setting holding the assets folder ``import --assets`` gave (``serve``'s default)."""


# ------------------------------------------------------------------------------------------------
# set-up and accounts
# ------------------------------------------------------------------------------------------------


def ensure_secret(db: Database) -> None:
    """Create the cookie-signing secret if the database has none."""
    from rescue_bench.review.security import ensure_secret as make_secret

    with database_errors(), db.write() as session:
        make_secret(session)


def add_user(db: Database, name: str, password: str, role: str) -> None:
    with database_errors(), db.write() as session:
        users.add_user(session, name, password, role)


def list_users(db: Database) -> list[dict[str, Any]]:
    """Every user as the command line lists them (``username``, ``role``, ``active``, ``created_at``)."""
    with database_errors(), db.read() as session:
        return [u.model_dump() for u in users.list_users(session)]


def set_password(db: Database, name: str, password: str) -> None:
    with database_errors(), db.write() as session:
        users.set_password(session, name, password)


def set_active(db: Database, name: str, active: bool) -> None:
    with database_errors(), db.write() as session:
        users.set_active(session, name, active)


# ------------------------------------------------------------------------------------------------
# import, assets, assignments, settings
# ------------------------------------------------------------------------------------------------


def import_clips(
    db: Database,
    clips: Sequence[Clip],
    *,
    file_name: str,
    sha256: str,
    skip_existing: bool,
    strict: bool,
    assign: Sequence[str] = (),
    assets: Path | None = None,
) -> store.ImportSummary:
    """Import ``clips``, assign every new segment to the users of ``assign`` and remember ``assets``
    as ``serve``'s default folder; one transaction, so nothing is written on an error."""
    with database_errors(), db.write() as session:
        summary = store.import_clips(session, clips, file_name=file_name, sha256=sha256, skip_existing=skip_existing, strict=strict)
        if assign:
            people = [users.get_user(session, name) for name in assign]
            skipped = set(summary.skipped)
            new_ids = [c.sample_id for c in clips if c.sample_id not in skipped]
            for segment in session.scalars(select(Segment).where(Segment.sample_id.in_(new_ids))):
                for person in people:
                    access.assign(session, segment, person, by=None)
        if assets is not None:
            setting = session.get(Setting, ASSETS_SETTING) or Setting(key=ASSETS_SETTING, value="")
            setting.value = str(assets.resolve())
            session.add(setting)
    return summary


def assets_folder(db: Database) -> Path | None:
    """The assets folder ``import --assets`` remembered, if any."""
    with database_errors(), db.read() as session:
        stored = session.get(Setting, ASSETS_SETTING)
        return Path(stored.value) if stored else None


def _segments(session: Any, sample_ids: Sequence[str] | None) -> list[Segment]:
    found, missing = access.segments_by_sample_id(session, list(sample_ids) if sample_ids else None)
    if missing:
        raise Invalid(f"no such segment: {missing[0]}" + (f" (+{len(missing) - 1} more)" if len(missing) > 1 else ""), "segment")
    return found


def assign_users(db: Database, usernames: Sequence[str], sample_ids: Sequence[str] | None, *, remove: bool = False) -> int:
    """Assign (or with ``remove`` unassign) the segments of ``sample_ids`` (default: every segment) to
    each user; returns how many assignments changed."""
    with database_errors(), db.write() as session:
        people = [users.get_user(session, name) for name in usernames]
        found = _segments(session, sample_ids)
        op = access.unassign if remove else access.assign
        return sum(bool(op(session, segment, person, by=None)) for segment in found for person in people)


def assign_overlap(db: Database, k: int, *, seed: int, usernames: Sequence[str], sample_ids: Sequence[str] | None) -> access.OverlapSummary:
    """``k`` annotators per segment (of ``usernames``, default every active annotator), balanced: the
    segments of ``sample_ids``, or every open one."""
    with database_errors(), db.write() as session:
        people = [users.get_user(session, name) for name in usernames]
        found = _segments(session, sample_ids)
        chosen = [s for s in found if s.status == "open"] if not sample_ids else found
        return access.assign_overlap(session, k, seed=seed, annotators=people or None, segments=chosen)


def reveal_rule(db: Database, new: str | None = None) -> str:
    """The reveal rule, after setting it to ``new`` when given."""
    with database_errors(), db.write() as session:
        if new is not None:
            access.set_reveal_rule(session, new, by=None)
        return access.reveal_rule(session)


# ------------------------------------------------------------------------------------------------
# export, agreement
# ------------------------------------------------------------------------------------------------


def export_clips(
    db: Database, *, annotator: str | None, include_discarded: bool, include_saved: bool, mark_unadjudicated: bool, counts: store.ExportCounts
) -> list[Clip]:
    """The reviewed release as clips (``counts`` filled in; refused while segments await
    adjudication, unless marked: :func:`rescue_bench.review.store.export_clips`); audit it with
    :func:`audit_export` before it is published."""
    with database_errors(), db.read() as session:
        person = users.get_user(session, annotator) if annotator else None
        return store.export_clips(
            session, include_discarded=include_discarded, annotator=person, include_saved=include_saved, mark_unadjudicated=mark_unadjudicated, counts=counts
        )


def audit_export(db: Database, *, counts: store.ExportCounts, include_discarded: bool, include_saved: bool, annotator: str | None) -> None:
    """The ``export`` audit entry of a command-line export (no user)."""
    with database_errors(), db.write() as session:
        store.audit_export(session, user_id=None, counts=counts, include_discarded=include_discarded, include_saved=include_saved, annotator=annotator)


def agreement_report(db: Database, **kwargs: Any) -> dict[str, Any]:
    """:func:`rescue_bench.review.agreement.database_report` of the database, as the JSON document
    ``rescue review agreement --json`` prints."""
    from rescue_bench.review.agreement import database_report

    with database_errors(), db.read() as session:
        return database_report(session, **kwargs).model_dump()


# ------------------------------------------------------------------------------------------------
# the judge-rating questionnaire
# ------------------------------------------------------------------------------------------------


def import_ratings(db: Database, items: Sequence[SampleItem], *, name: str, file_name: str, sha256: str, raters: Sequence[str]) -> tuple[str, str]:
    """A questionnaire of ``items`` rated by ``raters``; returns its id and its title."""
    with database_errors(), db.write() as session:
        people = [users.get_user(session, n) for n in raters]
        rating_set = ratings.import_ratings(session, items, name=name, file_name=file_name, sha256=sha256, raters=people)
        return rating_set.key, ratings.title(rating_set)


def import_pairs(db: Database, items: Sequence[PairLine], *, name: str, file_name: str, sha256: str, raters: Sequence[str]) -> tuple[str, str]:
    """A pairwise questionnaire of ``items`` rated by ``raters``; returns its id and its title."""
    with database_errors(), db.write() as session:
        people = [users.get_user(session, n) for n in raters]
        rating_set = pairs.import_pairs(session, items, name=name, file_name=file_name, sha256=sha256, raters=people)
        return rating_set.key, ratings.title(rating_set)


def change_raters(db: Database, questionnaire: str, *, add: Sequence[str] = (), remove: Sequence[str] = ()) -> tuple[str, list[str]]:
    """Add and remove raters of a questionnaire (by name or id); returns its name and its raters."""
    with database_errors(), db.write() as session:
        rating_set = ratings.find_set(session, questionnaire)
        for n in add:
            ratings.add_rater(session, rating_set, users.get_user(session, n), by=None)
        for n in remove:
            ratings.remove_rater(session, rating_set, users.get_user(session, n), by=None)
        names = session.scalars(
            select(User.username).join(RatingRater, RatingRater.user_id == User.id).where(RatingRater.set_id == rating_set.id).order_by(User.username)
        ).all()
        return rating_set.name, list(names)


def rating_rows(db: Database, questionnaire: str | None) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """The columns and rows of a questionnaire's answers (by name or id; may be left out when the
    database has one): its scores, or a pairwise questionnaire's preferences."""
    with database_errors(), db.read() as session:
        if questionnaire:
            rating_set = ratings.find_set(session, questionnaire)
        else:
            count = session.scalar(select(func.count(RatingSet.id))) or 0
            if count == 0:
                raise Invalid("no questionnaire in this database: import one with `rescue review import-ratings SAMPLE.csv`", "set")
            if count > 1:
                names = ", ".join(session.scalars(select(RatingSet.name).order_by(RatingSet.id)))
                raise Invalid(f"{count} questionnaires ({names}): choose one with --set NAME (each is scored against its own run)", "set")
            rating_set = session.scalars(select(RatingSet)).one()
        if rating_set.kind == pairs.PAIRS:
            return PAIR_RATINGS_COLUMNS, pairs.export_rows(session, rating_set)
        return RATINGS_COLUMNS, ratings.export_rows(session, rating_set)


# ------------------------------------------------------------------------------------------------
# the practice page
# ------------------------------------------------------------------------------------------------


def import_practice(db: Database, clips: Sequence[Clip], options: Any, simulator: str, model: str | None) -> practice.Imported:
    """Add the episode starts of ``clips`` to the catalogue, played against ``simulator`` (and the
    fitted ``model`` file; the bundled one when ``None``)."""
    with database_errors(), db.write() as session:
        return practice.import_starts(session, clips, options, simulator, model)


def finished_practice(db: Database, user: str | None, simulator: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Each person's finished episodes (``user``: theirs only; ``simulator``: against it only), as
    ``export-practice`` writes them."""
    with db.read() as session:
        return practice.finished_records(session, user, simulator)


def _no_link_below(out: Path, dest: Path) -> None:
    """Refuse ``dest`` when a folder between ``out`` and it is a symbolic link (the export would be
    written wherever the link points)."""
    for parent in list(dest.relative_to(out).parents)[:-1]:
        if (out / parent).is_symlink():
            raise Invalid(f"cannot write {out / parent}: it is a symbolic link; export into a folder of its own", "out")


def plan_practice_export(db: Database, out: Path, user: str | None, simulator: str | None = None) -> list[practice.PracticeRun]:
    """Each person's finished episodes as the run the export writes (``out``, or ``out/<name>`` for
    several people), checked before anything is written: episodes to export, one simulator and
    objective per person, no file where a folder goes, no symbolic link on the way to a file it writes."""
    by_user = finished_practice(db, user, simulator)
    if not by_user:
        raise Invalid(f"no finished practice episode{f' of {user}' if user else ''}{f' against {simulator}' if simulator else ''} in this database", "user")
    runs = [practice.practice_run(name, records, out if user or len(by_user) == 1 else out / name) for name, records in by_user.items()]
    taken = next((f for f in [out, *(r.folder for r in runs)] if f.exists() and not f.is_dir()), None)
    if taken is not None:
        raise Invalid(f"cannot write {taken}: a file is where its folder goes", "out")
    for run in runs:  # OUT/<user> or OUT/<user>/results pointing elsewhere (/etc, as root) is never followed
        for file in practice.RESULT_FILES:
            _no_link_below(out, run.folder / file)
    return runs


def export_practice(db: Database, out: Path, runs: Sequence[practice.PracticeRun]) -> None:
    """Write each planned run's results and summary and audit them, all or nothing: every run is
    written into a staging folder inside ``out`` first, then every destination is checked (no
    symbolic link on its way) and every destination folder is made, then the audit entries are
    committed, and only then are the files moved into place (``run.json`` is the run lifecycle's,
    around this)."""
    import os
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".export-practice-", dir=out) as staging:
            for run in runs:
                practice.write_results(Path(staging) / run.username, run)
            for run in runs:  # checked before anything is audited or moved
                for file in (Path(staging) / run.username).rglob("*"):
                    _no_link_below(out, run.folder / file.relative_to(Path(staging) / run.username))
            for run in runs:
                run.folder.mkdir(parents=True, exist_ok=True)
            with database_errors(), db.write() as session:
                practice.audit_export(session, {run.username: len(run.records) for run in runs})
            for run in runs:
                staged = Path(staging) / run.username
                for file in sorted(f for f in staged.rglob("*") if f.is_file()):
                    dest = run.folder / file.relative_to(staged)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(file, dest)
    except OSError as exc:
        where = exc.filename or out
        raise Invalid(f"cannot write {where}: {exc.strerror or exc}", "out") from None
