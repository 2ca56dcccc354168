"""``rescue review``: the review web app's commands (init, users, import, assign, settings, serve,
export, agreement, import-ratings, raters, export-ratings, import-practice, export-practice).

A thin layer over :mod:`rescue_bench.review.operations` (every database action of a command is a
function there): this module parses arguments and prints. Every command takes ``--db URL`` (or the environment
variable ``RESCUE_REVIEW_DB``): ``sqlite:///FILE`` (the default is ``rescue_review.db`` in the working
directory) or ``postgresql://user:password@host/db``. Passwords are never flags: they come from a
prompt or ``RESCUE_REVIEW_PASSWORD``; a database password shown in a message is masked.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from rescue_bench.cli._common import command, fail, load_data, resolve_data_option, setting, table_console
from rescue_bench.sim.options import DEFAULT_SIMULATOR, SimOptions

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="The review web app: experts verify drafts row by row, beside the video.",
)
users_app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, help="Manage review accounts.")
app.add_typer(users_app, name="users")

DB_HELP = "Database URL: sqlite:///FILE or postgresql://user:pw@host/db (env RESCUE_REVIEW_DB). Default: sqlite file rescue_review.db here."


def _db_option() -> Any:
    return typer.Option(None, "--db", envvar="RESCUE_REVIEW_DB", help=DB_HELP, show_default=False)


def _open(db_url: Optional[str], *, check: bool = True) -> Any:
    """The database, checked to be at the newest schema (one-line error otherwise). A SQLite file
    readable by other users is made private first (it holds the cookie-signing secret); without
    ``check`` (``init``) a missing one is created, else it is refused and nothing is created."""
    from rescue_bench.review.db import (
        Database,
        DatabaseError,
        check_schema,
        normalize_url,
        private_sqlite_file,
        shown_url,
        sqlite_file,
    )

    try:
        url = normalize_url(db_url)
        path = sqlite_file(url)
        if check and path is not None and not path.exists():
            raise DatabaseError(f"{shown_url(url)}: no such database file: run `rescue review init --db URL` first")
        if private_sqlite_file(url):
            typer.echo(f"note: {shown_url(url)} was readable by other users; made it private (0600): it holds the cookie-signing secret", err=True)
        db = Database(url)
        if check:
            check_schema(db)
    except DatabaseError as exc:
        raise fail(str(exc)) from None
    return db


def _service(call: Any) -> Any:
    """Run an operation; a refusal (:class:`~rescue_bench.review.errors.ReviewError`) or a database
    error (one line without the statement or its parameters) becomes one error line."""
    from rescue_bench.review.db import DatabaseError
    from rescue_bench.review.errors import ReviewError

    try:
        return call()
    except ReviewError as exc:
        raise fail(exc.message) from None
    except DatabaseError as exc:
        raise fail(str(exc)) from None


def _password(confirm: bool = True) -> str:
    from rescue_bench.review.config import ENV_PASSWORD

    env = os.environ.get(ENV_PASSWORD)
    if env:
        return env
    if not sys.stdin.isatty():
        raise fail(f"no terminal to ask for the password: set {ENV_PASSWORD}")
    return str(typer.prompt("Password", hide_input=True, confirmation_prompt=confirm))


# ------------------------------------------------------------------------------------------------
# init
# ------------------------------------------------------------------------------------------------


@command(app)
def init(db: Optional[str] = _db_option()) -> None:
    """Create the review database, or upgrade it to this version's schema (Alembic migrations)."""
    from rescue_bench.review import operations
    from rescue_bench.review.db import DatabaseError, upgrade

    database = _open(db, check=False)
    try:
        before, after = upgrade(database)
    except DatabaseError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - cannot connect, permission denied: one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise fail(f"cannot initialise {database.shown_url}: {type(exc).__name__}: {first}") from None
    _service(lambda: operations.ensure_secret(database))
    if before == after:
        typer.echo(f"{database.shown_url}: schema is up to date ({after})")
    else:
        typer.echo(f"{database.shown_url}: schema {before or 'empty'} -> {after}")


# ------------------------------------------------------------------------------------------------
# users
# ------------------------------------------------------------------------------------------------


@command(users_app, "add")
def users_add(
    name: str = typer.Argument(..., help="User name (letters, digits, '.', '_', '-')."),
    role: str = typer.Option("annotator", "--role", help="admin | annotator"),
    db: Optional[str] = _db_option(),
) -> None:
    """Add a user; the password comes from a prompt or RESCUE_REVIEW_PASSWORD (never a flag)."""
    from rescue_bench.review import operations

    database = _open(db)
    password = _password()
    _service(lambda: operations.add_user(database, name, password, role))
    typer.echo(f"added {role} {name}")


@command(users_app, "list")
def users_list(db: Optional[str] = _db_option()) -> None:
    """List users with their role and whether they are active."""
    from rescue_bench.review import operations

    database = _open(db)
    for u in _service(lambda: operations.list_users(database)):
        typer.echo(f"{u['username']}\t{u['role']}\t{'active' if u['active'] else 'deactivated'}")


@command(users_app, "passwd")
def users_passwd(name: str = typer.Argument(...), db: Optional[str] = _db_option()) -> None:
    """Set a new password (prompt or RESCUE_REVIEW_PASSWORD); the user's sessions end."""
    from rescue_bench.review import operations

    database = _open(db)
    password = _password()
    _service(lambda: operations.set_password(database, name, password))
    typer.echo(f"password of {name} changed; their sessions ended")


@command(users_app, "deactivate")
def users_deactivate(name: str = typer.Argument(...), db: Optional[str] = _db_option()) -> None:
    """Stop a user from logging in (their work and history stay)."""
    from rescue_bench.review import operations

    database = _open(db)
    _service(lambda: operations.set_active(database, name, False))
    typer.echo(f"{name} deactivated")


@command(users_app, "activate")
def users_activate(name: str = typer.Argument(...), db: Optional[str] = _db_option()) -> None:
    """Let a deactivated user log in again."""
    from rescue_bench.review import operations

    database = _open(db)
    _service(lambda: operations.set_active(database, name, True))
    typer.echo(f"{name} activated")


# ------------------------------------------------------------------------------------------------
# import, assign, export
# ------------------------------------------------------------------------------------------------


@command(app, "import")
def import_(
    file: Path = typer.Argument(..., help="Release-format JSONL (drafts from `rescue annotate draft`, or the release)."),
    db: Optional[str] = _db_option(),
    assets: Optional[Path] = typer.Option(None, "--assets", help="Assets folder (videos, clips, manifests); remembered as serve's default."),
    assign: Optional[list[str]] = typer.Option(None, "--assign", help="Assign every imported segment to this user (repeatable)."),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="Leave out clips already in the database instead of failing."),
    strict: bool = typer.Option(False, "--strict", help="With --assets: refuse (exit 2, nothing imported) drafts older than their manifest; default: warn."),
    lenient: bool = typer.Option(False, "--lenient", help="Let in the published release's quirks (evidence row 0, a group target beside names ...) that `rescue data validate --strict` refuses."),
) -> None:
    """Import clips as segments to review; the file is validated first and nothing is written on an error."""
    from rescue_bench.review import operations
    from rescue_bench.review.assets import Assets

    database = _open(db)
    if not file.is_file():
        raise fail(f"{file}: no such file")
    clips = load_data([file])  # any problem: listed one per line, exit 2, nothing imported
    from rescue_bench.data.load import DataError
    from rescue_bench.review.store import import_problems

    errors = import_problems(clips, file_name=str(file), strict=not lenient)
    if errors:  # listed one per line by the command guard, exit 2
        raise DataError(errors + ([] if lenient else [_lenient_hint(file)]))
    if assets is not None and not assets.is_dir():
        raise fail(f"--assets {assets}: no such folder")
    if assets is not None:
        from rescue_bench.cli.annotate import warn_stale

        warn_stale(assets, clips, strict=strict)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    summary = _service(
        lambda: operations.import_clips(
            database, clips, file_name=file.name, sha256=digest, skip_existing=skip_existing, strict=not lenient, assign=assign or (), assets=assets
        )
    )
    typer.echo(f"imported {summary.segments} segment(s), {summary.rows} row(s) from {file}" + (f"; skipped {len(summary.skipped)} already present" if summary.skipped else ""))
    if assets is not None:
        store = Assets(assets)
        fresh = [c for c in clips if c.sample_id not in set(summary.skipped)]
        manifests = sum(1 for c in fresh if store.manifest(c.sample_id).manifest is not None)
        videos = sum(1 for c in fresh if store.video(c.sample_id) is not None)
        row_clips = sum(1 for c in fresh for i, r in enumerate(c.rows, 1) if store.row_clip(c.sample_id, r.row_index or i) is not None)
        rows = sum(len(c.rows) for c in fresh)
        typer.echo(f"assets {assets}: {manifests}/{len(fresh)} segments with a manifest, {videos} with a video, {row_clips}/{rows} row clips")


def _lenient_hint(file: Path) -> Any:
    from rescue_bench.data.load import Problem

    return Problem(str(file), "these are refused by --strict (every save is held to it); --lenient imports the release's quirks anyway", severity="warning")


@command(app)
def assign(
    user: Optional[list[str]] = typer.Option(None, "--user", help="The annotator (repeatable). With --overlap: the annotators to draw from (default: every active annotator)."),
    segment: Optional[list[str]] = typer.Option(None, "--segment", help="Sample id to assign (repeatable). Default: every segment."),
    overlap: Optional[int] = typer.Option(None, "--overlap", min=1, help="Give each segment K annotators, balancing the load in rows; K > 1 gives each an independent copy."),
    seed: int = typer.Option(0, "--seed", help="With --overlap: the tie-break order of equally loaded annotators."),
    remove: bool = typer.Option(False, "--remove", help="Remove the assignment instead."),
    db: Optional[str] = _db_option(),
) -> None:
    """Assign segments to annotators: to the given users (in each segment's review mode), or with
    --overlap K to K annotators per segment, balanced (independent copies when K > 1)."""
    from rescue_bench.review import operations

    if overlap is None and not user:
        raise fail("give --user NAME (repeatable), or --overlap K to balance K annotators per segment")
    if overlap is not None and remove:
        raise fail("--remove takes --user, not --overlap")
    database = _open(db)
    if overlap is None:
        changed = _service(lambda: operations.assign_users(database, user or [], segment, remove=remove))
        names = ", ".join(user or [])
        if len(user or []) == 1:
            typer.echo(f"{'unassigned' if remove else 'assigned'} {changed} segment(s) {'from' if remove else 'to'} {names}")
        else:
            typer.echo(f"{'removed' if remove else 'made'} {changed} assignment(s) {'of' if remove else 'for'} {names}")
        return
    summary = _service(lambda: operations.assign_overlap(database, overlap, seed=seed, usernames=user or [], sample_ids=segment))
    typer.echo(f"overlap {summary.k}: {len(summary.added)} assignment(s) made over {summary.segments} segment(s); {len(summary.switched)} switched to independent copies")
    for sample_id in summary.skipped:
        typer.echo(f"skipped {sample_id}: saved work in its shared copy (independent copies must start from the draft)", err=True)
    for sample_id in summary.over:
        typer.echo(f"note: {sample_id} already has more than {summary.k} annotators (nobody is unassigned)", err=True)
    typer.echo("rows per annotator: " + ", ".join(f"{name} {rows}" for name, rows in summary.load.items()))


@command(app)
def settings(
    reveal: Optional[str] = typer.Option(None, "--reveal", help="When annotators of an independent segment see each other's values: adjudicated (default), never, always."),
    db: Optional[str] = _db_option(),
) -> None:
    """Show or change the review database's settings."""
    from rescue_bench.review import operations

    database = _open(db)
    typer.echo(f"reveal: {_service(lambda: operations.reveal_rule(database, reveal))}")


@command(app)
def export(
    out: Path = typer.Option(..., "--out", "-o", help="Output JSONL ('-' for standard output)."),
    db: Optional[str] = _db_option(),
    include_discarded: bool = typer.Option(False, "--include-discarded", help="Also write discarded segments."),
    include_saved: bool = typer.Option(False, "--include-saved", help="Also write edits that were saved but not marked reviewed (default: their draft)."),
    annotator: Optional[str] = typer.Option(None, "--annotator", help="Write one annotator's version (the segments they have a copy of) instead."),
    mark_unadjudicated: bool = typer.Option(
        False, "--mark-unadjudicated",
        help='Write segments awaiting adjudication too (their unadjudicated rows as the draft), each marked "review_status": "awaiting_adjudication". Default: refuse them.',
    ),
) -> None:
    """Write the release format: the adjudicated value, else a single annotator's reviewed value, else
    the draft. Refuses segments awaiting adjudication (named) unless marked; prints how many rows
    were submitted, adjudicated, awaiting adjudication and draft-only, and the discarded segments."""
    from rescue_bench.data.load import iter_jsonl_lines
    from rescue_bench.fileio import atomic_open
    from rescue_bench.review import operations
    from rescue_bench.review.store import ExportCounts, strict_problems

    database = _open(db)
    counts = ExportCounts()
    clips = _service(
        lambda: operations.export_clips(
            database, annotator=annotator, include_discarded=include_discarded, include_saved=include_saved, mark_unadjudicated=mark_unadjudicated, counts=counts
        )
    )
    lines = (line + "\n" for line in iter_jsonl_lines(clips))

    def audit() -> None:
        _service(lambda: operations.audit_export(database, counts=counts, include_discarded=include_discarded, include_saved=include_saved, annotator=annotator))

    if str(out) == "-":
        for line in lines:
            sys.stdout.write(line)
        audit()
    else:
        try:
            with atomic_open(out) as handle:
                for line in lines:
                    handle.write(line)
                audit()  # before the file appears: an export nobody can account for never leaves
        except OSError as exc:
            raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {counts.summary()} to {out}", err=True)
    problems = strict_problems(clips, file_name=str(out))
    if problems:
        typer.echo(f"note: {len(problems)} problem(s) that `rescue data validate --strict` refuses (imported with --lenient?); first: {problems[0]}", err=True)


# ------------------------------------------------------------------------------------------------
# agreement between annotators
# ------------------------------------------------------------------------------------------------


def _fmt(value: Any, ci: Any = None, digits: int = 3, percent: bool = False) -> str:
    if value is None:
        return "–"
    scale, unit = (100.0, "%") if percent else (1.0, "")
    text = f"{scale * value:.{1 if percent else digits}f}{unit}"
    if ci:
        text += f" [{scale * ci[0]:.{0 if percent else 2}f}, {scale * ci[1]:.{0 if percent else 2}f}]"
    return text


@command(app)
def agreement(
    db: Optional[str] = _db_option(),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON instead of tables."),
    resamples: int = typer.Option(1000, "--resamples", min=0, help="Bootstrap resamples of segments (0: no intervals)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    confidence: float = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="Confidence level of the intervals."),
    bertscore: bool = typer.Option(True, "--bertscore/--no-bertscore", help="Semantic similarity of free-text fields (needs the bertscore extra)."),
) -> None:
    """Inter-annotator agreement: Krippendorff's alpha, Cohen's/Fleiss' kappa with bootstrap intervals
    over segments per field and scenario, free-text similarity, and how much reviewers changed the drafts."""
    import json

    from rich.table import Table

    from rescue_bench.review import operations
    from rescue_bench.review.agreement import ALL

    database = _open(db)
    report = _service(lambda: operations.agreement_report(database, n_resamples=resamples, seed=seed, confidence=confidence, use_bertscore=bertscore))
    if json_out:
        typer.echo(json.dumps(report, indent=2))
        return
    console = table_console()
    console.print(
        f"{report['segments']} segment(s), {report['rows']} row(s) reviewed by two or more annotators "
        f"({', '.join(report['annotators']) or 'none'}); intervals: {100 * confidence:.0f}% bootstrap over segments, {resamples} resamples."
    )
    for note in report["notes"]:
        console.print(f"note: {note}")
    console.print("Intervals from fewer than 10 segments are rough; a scope with one segment has none (--json lists every note).")
    scopes = list(dict.fromkeys(f["scope"] for f in report["fields"]))
    for scope in scopes:
        table = Table(title=f"Agreement per field: {scope if scope != ALL else 'all segments'}")
        for col in ("field", "level", "units", "segments", "alpha [CI]", "Cohen kappa [CI]", "Fleiss kappa [CI]"):
            table.add_column(col, justify="left" if col in ("field", "level") else "right")
        for f in (x for x in report["fields"] if x["scope"] == scope):
            table.add_row(f["field"], f["level"], str(f["units"]), str(f["segments"]), _fmt(f["alpha"], f["alpha_ci"]), _fmt(f["cohen_kappa"], f["cohen_ci"]), _fmt(f["fleiss_kappa"], f["fleiss_ci"]))
        console.print(table)
    table = Table(title="Free text between annotators")
    for col in ("field", "scope", "pairs", "exact match [CI]", "BERTScore F1 [CI]"):
        table.add_column(col, justify="left" if col in ("field", "scope") else "right")
    notes = set()
    for t in report["text"]:
        table.add_row(t["field"], t["scope"], str(t["pairs"]), _fmt(t["exact"], t["exact_ci"], percent=True), _fmt(t["bertscore"], t["bertscore_ci"]))
        if t["note"]:
            notes.add(t["note"])
    console.print(table)
    for note in sorted(notes):
        console.print(f"note: {note}")
    table = Table(title="Draft vs human: share of reviewed rows where the reviewer changed the field (all segments)")
    for col in ("field", "reviewed rows", "changed", "rate"):
        table.add_column(col, justify="left" if col == "field" else "right")
    for c in sorted((c for c in report["changes"] if c["scope"] == ALL and c["rows"]), key=lambda c: -(c["rate"] or 0)):
        table.add_row(c["field"], str(c["rows"]), str(c["changed"]), _fmt(c["rate"], percent=True))
    console.print(table)


# ------------------------------------------------------------------------------------------------
# the judge-rating questionnaire (Table 12)
# ------------------------------------------------------------------------------------------------


@command(app, "import-ratings")
def import_ratings(
    sample: Path = typer.Argument(
        ..., help="The sample `rescue agreement sample` wrote: a CSV of judged records (its judge_score column is never imported), "
        "or JSON Lines of closed-loop pairs (no J or agent name is read).",
    ),
    db: Optional[str] = _db_option(),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the questionnaire (admins only see it). Default: the file name."),
    rater: Optional[list[str]] = typer.Option(None, "--rater", help="A user who rates every item (repeatable; several raters per item are allowed)."),
) -> None:
    """Turn a rating sample into a questionnaire: raters see the reference and the model's answer, never the judge's score or the
    model's name; or, for closed-loop pairs, the session up to a start and two continuations, never an agent's name or a J."""
    from rescue_bench.judge_ratings import is_pair_sample, read_pair_sample, read_sample_csv
    from rescue_bench.labels import JUDGED_TASKS
    from rescue_bench.review import operations

    database = _open(db)
    who = ', '.join(rater or []) or 'nobody yet: add --rater or use `rescue review raters`'
    if is_pair_sample(sample):
        pairs = read_pair_sample(sample)  # a bad line: one error naming file and line, nothing imported
        digest = hashlib.sha256(sample.read_bytes()).hexdigest()
        key, title = _service(lambda: operations.import_pairs(database, pairs, name=name or sample.name, file_name=sample.name, sha256=digest, raters=rater or []))
        typer.echo(f"imported {len(pairs)} pair(s) as {title} ({name or sample.name}), rated by {who}; raters open /ratings/{key}")
        return
    items = read_sample_csv(sample)  # a bad line: one error naming file and line, nothing imported
    digest = hashlib.sha256(sample.read_bytes()).hexdigest()
    key, title = _service(lambda: operations.import_ratings(database, items, name=name or sample.name, file_name=sample.name, sha256=digest, raters=rater or []))
    by_task = ", ".join(f"{t.upper()} {sum(i['task'] == t for i in items)}" for t in JUDGED_TASKS)
    typer.echo(f"imported {len(items)} item(s) ({by_task}) as {title} ({name or sample.name}), rated by {who}; raters open /ratings/{key}")


@command(app)
def raters(
    questionnaire: str = typer.Argument(..., help="The questionnaire's name (or id)."),
    add: Optional[list[str]] = typer.Option(None, "--add", help="Let this user rate it (repeatable)."),
    remove: Optional[list[str]] = typer.Option(None, "--remove", help="Stop this user rating it; their scores stay (repeatable)."),
    db: Optional[str] = _db_option(),
) -> None:
    """List, add or remove the raters of a questionnaire."""
    from rescue_bench.review import operations

    database = _open(db)
    set_name, names = _service(lambda: operations.change_raters(database, questionnaire, add=add or [], remove=remove or []))
    typer.echo(f"{set_name}: " + (", ".join(names) or "no raters"))


@command(app, "export-ratings")
def export_ratings(
    out: Path = typer.Option(
        ..., "--out", "-o",
        help="Output CSV ('-' for standard output): id, task, sample_id, scenario, row, rater, human_score; for pairs pair_id, a_run, "
        "a_episode, b_run, b_episode, scenario, sample_id, rater, preferred (A, B, tie), reason, support_a, support_b, shown_first.",
    ),
    db: Optional[str] = _db_option(),
    questionnaire: Optional[str] = typer.Option(None, "--set", help="The questionnaire (name or id); needed when there are several."),
) -> None:
    """Write the answers for `rescue agreement score RATINGS.csv RUN...` (Table 12 beside the paper's figures, or the closed loop against people)."""
    import csv
    import io

    from rescue_bench.review import operations

    database = _open(db)
    columns, rows = _service(lambda: operations.rating_rows(database, questionnaire))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    if str(out) == "-":
        sys.stdout.write(buffer.getvalue())
        return
    try:
        out.write_text(buffer.getvalue(), encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    if "preferred" in columns:
        answered = sum(1 for r in rows if r["preferred"] != "")
        typer.echo(f"wrote {answered} answer(s) of {len(rows)} (pair, rater) line(s) to {out}; next: rescue agreement score {out} RUN... --out DIR", err=True)
        return
    rated = sum(1 for r in rows if r["human_score"] != "")
    typer.echo(f"wrote {rated} score(s) of {len(rows)} (item, rater) pair(s) to {out}; next: rescue agreement score {out} RUN_DIR", err=True)


# ------------------------------------------------------------------------------------------------
# the practice page (a person plays the therapist against an offline simulator)
# ------------------------------------------------------------------------------------------------


@command(app, "import-practice")
def import_practice(
    data: Optional[list[Path]] = typer.Argument(
        None, callback=lambda values: resolve_data_option(values), help="Release file(s) or folder(s), or hf:OWNER/NAME[@REVISION]. Default: the bundled demo."
    ),
    db: Optional[str] = _db_option(),
    horizon: int = setting(SimOptions, "horizon", "--horizon"),
    per_clip: Optional[int] = typer.Option(
        None, "--episodes-per-clip", min=1, show_default=False,
        help="Starts per clip (its decision points, picked evenly); default 1 (the practice page's, not sim eval's).",
    ),
    gamma: float = setting(SimOptions, "gamma", "--gamma"),
    lam: float = setting(SimOptions, "lam", "--lambda"),
    simulator: str = typer.Option(
        DEFAULT_SIMULATOR, "--simulator",
        help="Who plays the clients: fitted (counted from annotated sessions; hears the words) or scripted (fixed rules: a smoke test).",
    ),
    sim_model: Optional[str] = typer.Option(
        None, "--sim-model", show_default=False, help="The fitted simulator's model file (rescue sim fit); default: the bundled one, fitted on the demo.",
    ),
) -> None:
    """Add episode starts to the practice page's catalogue (role cards and states stay on the server);
    the fitted model they play is stored with them."""
    from rescue_bench.review import operations, practice

    clips = load_data(data)
    database = _open(db)
    options = practice.practice_options(horizon=horizon, gamma=gamma, lam=lam, **({"per_clip": per_clip} if per_clip is not None else {}))
    done = _service(lambda: operations.import_practice(database, clips, options, simulator, sim_model))
    typer.echo(
        f"added {done.added} practice start(s) from {len(clips)} clip(s){f'; {done.kept} already there, kept as they were' if done.kept else ''}"
        f"{f' but for the simulator: {done.switched} now play {simulator} in new episodes (episodes begun keep theirs)' if done.switched else ''}; "
        f"{done.simulator_line()}; people play them at /practice"
    )
    if done.repaired:
        typer.echo(done.repair_line(), err=True)


@command(app, "export-practice")
def export_practice(
    out: Path = typer.Option(..., "--out", "-o", help="Output folder: results/sim.jsonl, summary.json, run.json (one sub-folder per person without --user)."),
    db: Optional[str] = _db_option(),
    user: Optional[str] = typer.Option(None, "--user", help="Only this person's episodes, written to --out itself."),
    simulator: Optional[str] = typer.Option(
        None, "--simulator", show_default=False, help="Only episodes played against this simulator (fitted or scripted); a run has one.",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a folder that holds another run (another export with other episodes, say)."),
) -> None:
    """Write the finished practice episodes as `rescue sim eval` runs (agent human/<user>) for `rescue report`,
    through the run lifecycle of every run command (run.json running, then success)."""
    from contextlib import ExitStack

    from rescue_bench.engine.runfolder import RunStatus, claim_folder, finish_run, run_identity, start_run
    from rescue_bench.review import operations
    from rescue_bench.runinfo import SimCalls, SimRunInfo

    database = _open(db)
    runs = _service(lambda: operations.plan_practice_export(database, out, user, simulator))
    planned = [(run, _practice_settings(run), [{"path": f"practice starts of {run.agent}", "sha256": run.starts_sha256}]) for run in runs]
    if not overwrite:  # every folder checked before the first is claimed: all written, or nothing
        for run, settings, files in planned:
            claim_folder(run.folder, run_identity("sim", settings, files), overwrite=False)
    with ExitStack() as stack:
        starts = [stack.enter_context(start_run(run.folder, "sim", settings, overwrite=overwrite, files=files)) for run, settings, files in planned]
        _service(lambda: operations.export_practice(database, out, runs))
        for run, start in zip(runs, starts):
            steps = sum(len(r["steps"]) for r in run.records)
            finish_run(
                start, RunStatus("success", {"steps": steps, "failed_steps": 0, "failed_agent_calls": 0, "failed_simulator_calls": 0, "judge_failures": 0}),
                SimRunInfo, source="rescue review export-practice", agent=run.agent, simulator=run.simulator, gamma=run.gamma, lam=run.lam,
                horizon=run.horizon, clips=run.clips, episodes=len(run.records),
                calls=SimCalls(episodes=len(run.records), agent_total=0, simulator_total=0, agent_per_episode=0.0, simulator_per_episode=0.0, judge=0),
            )
    for run in runs:
        typer.echo(f"wrote {len(run.records)} episode(s) of {run.agent} to {run.folder}")
        seen = sum(1 for r in run.records if r["practice"]["debrief_open"])
        if seen:
            typer.echo(f"note: {seen} of them began after {run.username} could read scores and debriefs (records: practice.debrief_open)", err=True)


def _practice_settings(run: Any) -> Any:
    """The settings a practice export records: the person as the agent, the catalogue's simulator and objective."""
    from rescue_bench.engine.settings import SimSettings
    from rescue_bench.review import practice

    options = practice.practice_options(horizon=run.horizon, gamma=run.gamma, lam=run.lam, subgroups=True)
    return SimSettings(model=run.agent, simulator=run.simulator, sim_model=run.sim_model, options=options, out=str(run.folder))


# ------------------------------------------------------------------------------------------------
# serve
# ------------------------------------------------------------------------------------------------


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (a port in use, an address this machine does not have),
    found by binding it as uvicorn will (``SO_REUSEADDR``) and letting go; ``None`` when it can."""
    import socket

    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return exc.strerror or str(exc)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return (exc.strerror or str(exc)).lower()
    return None


@command(app)
def serve(
    db: Optional[str] = _db_option(),
    assets: Optional[Path] = typer.Option(None, "--assets", help="Assets folder (default: the one given to import)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0 or :: for every interface, which requires --allowed-host)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes (use PostgreSQL for more than one)."),
    secure_cookies: bool = typer.Option(False, "--secure-cookies", envvar="RESCUE_REVIEW_SECURE_COOKIES", help="Mark the session cookie Secure (behind HTTPS)."),
    forwarded_allow_ips: str = typer.Option("127.0.0.1", "--forwarded-allow-ips", help="Proxies whose X-Forwarded-For/-Proto headers are trusted (comma-separated, '*' for any)."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
    session_hours: float = typer.Option(
        12.0, "--session-hours", envvar="RESCUE_REVIEW_SESSION_HOURS", min=0.05, max=720.0,
        help="Hours a login lasts (the session cookie's lifetime; env RESCUE_REVIEW_SESSION_HOURS).",
    ),
    login_delay: float = typer.Option(1.0, "--login-delay", min=0.1, max=900.0, help="Seconds a user name is locked after 5 failed logins; doubles with each further failure (at most 15 minutes)."),
    allowed_host: Optional[list[str]] = typer.Option(
        None, "--allowed-host", help="A host name users reach the app by (repeatable; '*' for any). Other Host headers answer 400. Default: 127.0.0.1, localhost, ::1 and --host."
    ),
    max_body_bytes: Optional[int] = typer.Option(None, "--max-body-bytes", min=1024, help="Largest request body, in bytes (413 beyond). Default: 1,000,000.", show_default=False),
    max_field_chars: Optional[int] = typer.Option(None, "--max-field-chars", min=100, help="Longest text in a field, comment or reason (422 beyond). Default: 20,000.", show_default=False),
    db_password_file: Optional[Path] = typer.Option(
        None, "--db-password-file", help="File whose first line is the PostgreSQL password (keeps it out of --db, ps and the workers' environment)."
    ),
) -> None:
    """Run the review web app (uvicorn). Refuses a database whose schema is not up to date."""
    import tempfile

    import uvicorn

    from rescue_bench.review import operations
    from rescue_bench.review.config import LOOPBACK_HOSTS, ReviewConfig, listens_everywhere
    from rescue_bench.review.db import ENV_DB_PASSWORD, ENV_DB_PASSWORD_FILE, is_sqlite, without_password
    from rescue_bench.review.limits import MAX_BODY_BYTES, MAX_FIELD_CHARS
    from rescue_bench.review.security import ThrottlePolicy

    if db_password_file is not None:
        if not db_password_file.is_file():
            raise fail(f"--db-password-file {db_password_file}: no such file")
        os.environ[ENV_DB_PASSWORD_FILE] = str(db_password_file.resolve())
    database = _open(db)
    if assets is None:
        assets = _service(lambda: operations.assets_folder(database))
    if assets is not None and not assets.is_dir():
        raise fail(f"assets folder {assets} does not exist")
    if workers > 1 and is_sqlite(database.url):
        typer.echo("note: several workers on one SQLite file queue their writes; PostgreSQL is the tested setup for --workers", err=True)
    hosts = list(allowed_host or [])
    if not hosts:
        if listens_everywhere(host):
            raise fail(f"--host {host} listens on every interface: name the host users reach it by with --allowed-host NAME (repeatable; '*' for any)")
        hosts = [*LOOPBACK_HOSTS, host]
    config = ReviewConfig(
        db_url=str(database.url.render_as_string(hide_password=False)),
        assets=assets,
        secure_cookies=secure_cookies,
        session_hours=session_hours,
        throttle=ThrottlePolicy(base_delay=login_delay),
        allowed_hosts=tuple(dict.fromkeys(hosts)),
        max_body_bytes=max_body_bytes or MAX_BODY_BYTES,
        max_field_chars=max_field_chars or MAX_FIELD_CHARS,
    )
    database.dispose()
    busy = _cannot_listen(host, port)
    if busy:
        raise fail(f"cannot listen on {host}:{port}: {busy} (another server? choose another --port)")
    typer.echo(f"rescue review on http://{host}:{port} (database {database.shown_url}, assets {assets or 'none'}, {workers} worker(s))", err=True)
    common = dict(host=host, port=port, proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips, log_level=log_level, server_header=False)
    if workers == 1:
        from rescue_bench.review.app import create_app

        uvicorn.run(create_app(config), **common)  # type: ignore[arg-type]
        return
    # the workers read their settings from the environment: the database password goes to them in
    # a private file instead (an environment is readable in /proc and inherited by every child)
    password = database.url.password
    bare_url = without_password(database.url).render_as_string(hide_password=False) if password else config.db_url
    made: str | None = None
    if password and not os.environ.get(ENV_DB_PASSWORD_FILE):
        fd, made = tempfile.mkstemp(prefix="rescue-review-db-", suffix=".secret")  # created 0600
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(str(password) + "\n")
        os.environ[ENV_DB_PASSWORD_FILE] = made
    os.environ.pop(ENV_DB_PASSWORD, None)
    os.environ.update(config.with_(db_url=bare_url).to_env())
    try:
        uvicorn.run("rescue_bench.review.app:app_from_env", factory=True, workers=workers, **common)  # type: ignore[arg-type]
    finally:
        if made:
            Path(made).unlink(missing_ok=True)
