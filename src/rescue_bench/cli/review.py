"""``rescue review``: the review web app's commands (init, users, import, assign, serve, export).

A thin layer over :mod:`rescue_bench.review`. Every command takes ``--db URL`` (or the environment
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

from rescue_bench.cli._common import command, fail, load_data

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="The review web app: experts verify drafts row by row, beside the video.",
)
users_app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, help="Manage review accounts.")
app.add_typer(users_app, name="users")

DB_HELP = "Database URL: sqlite:///FILE or postgresql://user:pw@host/db (env RESCUE_REVIEW_DB). Default: sqlite file rescue_review.db here."
ASSETS_SETTING = "assets_dir"


def _db_option() -> Any:
    return typer.Option(None, "--db", envvar="RESCUE_REVIEW_DB", help=DB_HELP, show_default=False)


def _open(db_url: Optional[str], *, check: bool = True) -> Any:
    """The database, checked to be at the newest schema (one-line error otherwise)."""
    from rescue_bench.review.db import Database, DatabaseError, check_schema

    try:
        db = Database(db_url)
        if check:
            check_schema(db)
    except DatabaseError as exc:
        raise fail(str(exc)) from None
    return db


def _service(call: Any) -> Any:
    """Run a service call; a :class:`~rescue_bench.review.errors.ReviewError` becomes one error line."""
    from rescue_bench.review.errors import ReviewError

    try:
        return call()
    except ReviewError as exc:
        raise fail(exc.message) from None


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
    from rescue_bench.review.db import DatabaseError, upgrade
    from rescue_bench.review.security import ensure_secret

    database = _open(db, check=False)
    try:
        before, after = upgrade(database)
    except DatabaseError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - cannot connect, permission denied: one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise fail(f"cannot initialise {database.shown_url}: {type(exc).__name__}: {first}") from None
    with database.write() as session:
        ensure_secret(session)
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
    from rescue_bench.review.users import add_user

    database = _open(db)
    password = _password()
    with database.write() as session:
        _service(lambda: add_user(session, name, password, role))
    typer.echo(f"added {role} {name}")


@command(users_app, "list")
def users_list(db: Optional[str] = _db_option()) -> None:
    """List users with their role and whether they are active."""
    from rescue_bench.review.users import list_users

    with _open(db).read() as session:
        for u in list_users(session):
            typer.echo(f"{u['username']}\t{u['role']}\t{'active' if u['active'] else 'deactivated'}")


@command(users_app, "passwd")
def users_passwd(name: str = typer.Argument(...), db: Optional[str] = _db_option()) -> None:
    """Set a new password (prompt or RESCUE_REVIEW_PASSWORD); the user's sessions end."""
    from rescue_bench.review.users import set_password

    database = _open(db)
    password = _password()
    with database.write() as session:
        _service(lambda: set_password(session, name, password))
    typer.echo(f"password of {name} changed; their sessions ended")


@command(users_app, "deactivate")
def users_deactivate(name: str = typer.Argument(...), db: Optional[str] = _db_option()) -> None:
    """Stop a user from logging in (their work and history stay)."""
    from rescue_bench.review.users import set_active

    with _open(db).write() as session:
        _service(lambda: set_active(session, name, False))
    typer.echo(f"{name} deactivated")


@command(users_app, "activate")
def users_activate(name: str = typer.Argument(...), db: Optional[str] = _db_option()) -> None:
    """Let a deactivated user log in again."""
    from rescue_bench.review.users import set_active

    with _open(db).write() as session:
        _service(lambda: set_active(session, name, True))
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
) -> None:
    """Import clips as segments to review; the file is validated first and nothing is written on an error."""
    from rescue_bench.review import access
    from rescue_bench.review.assets import Assets
    from rescue_bench.review.models import Segment, Setting
    from rescue_bench.review.store import import_clips
    from rescue_bench.review.users import get_user

    database = _open(db)
    if not file.is_file():
        raise fail(f"{file}: no such file")
    clips = load_data([file])  # any problem: listed one per line, exit 2, nothing imported
    if assets is not None and not assets.is_dir():
        raise fail(f"--assets {assets}: no such folder")
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    with database.write() as session:
        summary = _service(lambda: import_clips(session, clips, file_name=file.name, sha256=digest, skip_existing=skip_existing))
        if assign:
            people = [_service(lambda n=n: get_user(session, n)) for n in assign]
            from sqlalchemy import select

            new_ids = [c.sample_id for c in clips if c.sample_id not in set(summary.skipped)]
            for segment in session.scalars(select(Segment).where(Segment.sample_id.in_(new_ids))):
                for person in people:
                    _service(lambda s=segment, p=person: access.assign(session, s, p, by=None))
        if assets is not None:
            setting = session.get(Setting, ASSETS_SETTING) or Setting(key=ASSETS_SETTING, value="")
            setting.value = str(assets.resolve())
            session.add(setting)
    typer.echo(f"imported {summary.segments} segment(s), {summary.rows} row(s) from {file}" + (f"; skipped {len(summary.skipped)} already present" if summary.skipped else ""))
    if assets is not None:
        store = Assets(assets)
        fresh = [c for c in clips if c.sample_id not in set(summary.skipped)]
        manifests = sum(1 for c in fresh if store.manifest(c.sample_id).manifest is not None)
        videos = sum(1 for c in fresh if store.video(c.sample_id) is not None)
        row_clips = sum(1 for c in fresh for i, r in enumerate(c.rows, 1) if store.row_clip(c.sample_id, r.row_index or i) is not None)
        rows = sum(len(c.rows) for c in fresh)
        typer.echo(f"assets {assets}: {manifests}/{len(fresh)} segments with a manifest, {videos} with a video, {row_clips}/{rows} row clips")


@command(app)
def assign(
    user: str = typer.Option(..., "--user", help="The annotator."),
    segment: Optional[list[str]] = typer.Option(None, "--segment", help="Sample id to assign (repeatable). Default: every segment."),
    remove: bool = typer.Option(False, "--remove", help="Remove the assignment instead."),
    db: Optional[str] = _db_option(),
) -> None:
    """Assign segments to a user (shared mode: they edit the segment's one copy)."""
    from sqlalchemy import select

    from rescue_bench.review import access
    from rescue_bench.review.models import Segment
    from rescue_bench.review.users import get_user

    with _open(db).write() as session:
        person = _service(lambda: get_user(session, user))
        query = select(Segment).order_by(Segment.position)
        if segment:
            query = query.where(Segment.sample_id.in_(segment))
        found = session.scalars(query).all()
        missing = sorted(set(segment or []) - {s.sample_id for s in found})
        if missing:
            raise fail(f"no such segment: {missing[0]}" + (f" (+{len(missing) - 1} more)" if len(missing) > 1 else ""))
        changed = 0
        for seg in found:
            op = access.unassign if remove else access.assign
            changed += bool(_service(lambda s=seg, op=op: op(session, s, person, by=None)))
    typer.echo(f"{'unassigned' if remove else 'assigned'} {changed} segment(s) {'from' if remove else 'to'} {user}")


@command(app)
def export(
    out: Path = typer.Option(..., "--out", help="Output JSONL ('-' for standard output)."),
    db: Optional[str] = _db_option(),
    include_discarded: bool = typer.Option(False, "--include-discarded", help="Also write discarded segments."),
) -> None:
    """Write the release format: the human value where a row is reviewed, the draft otherwise."""
    from rescue_bench.review.store import export_lines

    with _open(db).read() as session:
        if str(out) == "-":
            n = 0
            for line in export_lines(session, include_discarded=include_discarded):
                sys.stdout.write(line)
                n += 1
            return
        tmp = out.with_name(out.name + ".tmp")
        n = 0
        try:
            with tmp.open("w", encoding="utf-8", newline="\n") as handle:
                for line in export_lines(session, include_discarded=include_discarded):
                    handle.write(line)
                    n += 1
            tmp.replace(out)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {n} clip(s) to {out}", err=True)


# ------------------------------------------------------------------------------------------------
# serve
# ------------------------------------------------------------------------------------------------


@command(app)
def serve(
    db: Optional[str] = _db_option(),
    assets: Optional[Path] = typer.Option(None, "--assets", help="Assets folder (default: the one given to import)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for every interface)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes (use PostgreSQL for more than one)."),
    secure_cookies: bool = typer.Option(False, "--secure-cookies", envvar="RESCUE_REVIEW_SECURE_COOKIES", help="Mark the session cookie Secure (behind HTTPS)."),
    forwarded_allow_ips: str = typer.Option("127.0.0.1", "--forwarded-allow-ips", help="Proxies whose X-Forwarded-For/-Proto headers are trusted (comma-separated, '*' for any)."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
    login_delay: float = typer.Option(1.0, "--login-delay", min=0.1, max=900.0, help="Seconds a user name is locked after 5 failed logins; doubles with each further failure (at most 15 minutes)."),
) -> None:
    """Run the review web app (uvicorn). Refuses a database whose schema is not up to date."""
    import uvicorn

    from rescue_bench.review.config import ReviewConfig
    from rescue_bench.review.db import is_sqlite
    from rescue_bench.review.models import Setting
    from rescue_bench.review.security import ThrottlePolicy

    database = _open(db)
    if assets is None:
        with database.read() as session:
            stored = session.get(Setting, ASSETS_SETTING)
        assets = Path(stored.value) if stored else None
    if assets is not None and not assets.is_dir():
        raise fail(f"assets folder {assets} does not exist")
    if workers > 1 and is_sqlite(database.url):
        typer.echo("note: several workers on one SQLite file queue their writes; PostgreSQL is the tested setup for --workers", err=True)
    config = ReviewConfig(
        db_url=str(database.url.render_as_string(hide_password=False)),
        assets=assets,
        secure_cookies=secure_cookies,
        throttle=ThrottlePolicy(base_delay=login_delay),
    )
    database.dispose()
    typer.echo(f"rescue review on http://{host}:{port} (database {database.shown_url}, assets {assets or 'none'}, {workers} worker(s))", err=True)
    common = dict(host=host, port=port, proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips, log_level=log_level, server_header=False)
    if workers == 1:
        from rescue_bench.review.app import create_app

        uvicorn.run(create_app(config), **common)  # type: ignore[arg-type]
    else:
        os.environ.update(config.to_env())
        uvicorn.run("rescue_bench.review.app:app_from_env", factory=True, workers=workers, **common)  # type: ignore[arg-type]
