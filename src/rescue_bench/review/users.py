"""Users: add, list, change passwords, deactivate, and log in (with throttling)."""

from __future__ import annotations

import json
import re
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from rescue_bench.review.errors import Invalid, NotFound, Throttled
from rescue_bench.review.models import ROLES, AuditEntry, User, dumps, utcnow
from rescue_bench.review.security import (
    ThrottlePolicy,
    check_password_strength,
    hash_password,
    reserve_attempt,
    take_back_attempt,
    throttle_keys,
    verify_password,
)

USERNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""User names (the whole name, :meth:`re.Pattern.fullmatch`): letters, digits, ``.``, ``_``, ``-``, up to
64 characters; no space, newline or control character (they appear in URLs, logs and the audit).
Unique whatever the case: ``Ann`` and ``ann`` are one name, and either logs in."""


def find_user(session: Session, username: str) -> User | None:
    """The user named ``username``, the exact spelling first, else the same name in another case."""
    if not isinstance(username, str) or not USERNAME_RE.fullmatch(username):
        return None  # nothing else can be a user name (and a NUL byte never reaches the database)
    user = session.scalars(select(User).where(User.username == username)).first()
    if user is None:
        user = session.scalars(select(User).where(func.lower(User.username) == username.lower()).order_by(User.id)).first()
    return user


def get_user(session: Session, username: str) -> User:
    user = find_user(session, username)
    if user is None:
        shown = username if isinstance(username, str) and USERNAME_RE.fullmatch(username) else repr(username)
        raise NotFound(f"no such user: {shown}")
    return user


def add_user(session: Session, username: str, password: str, role: str, *, now: datetime | None = None) -> User:
    if not isinstance(username, str) or not USERNAME_RE.fullmatch(username):
        raise Invalid(f"user name {username!r} is not allowed: use letters, digits, '.', '_' or '-' (at most 64)", "username")
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}, got {role!r}", "role")
    problem = check_password_strength(password)
    if problem:
        raise Invalid(problem, "password")
    taken = find_user(session, username)
    if taken is not None:
        same = "" if taken.username == username else f" (as {taken.username!r}: names are unique whatever the case)"
        raise Invalid(f"user {username!r} already exists{same}", "username")
    now = now or utcnow()
    user = User(username=username, password_hash=hash_password(password), role=role, active=True, auth_epoch=0, created_at=now)
    session.add(user)
    session.flush()
    session.add(AuditEntry(at=now, action="user", field="user", new_json=dumps({"username": username, "role": role})))
    return user


def set_password(session: Session, username: str, password: str) -> None:
    """New password; every existing session of the user ends (``auth_epoch`` bumped)."""
    problem = check_password_strength(password)
    if problem:
        raise Invalid(problem, "password")
    user = get_user(session, username)
    user.password_hash = hash_password(password)
    user.auth_epoch += 1
    session.add(AuditEntry(at=utcnow(), action="user", field="password", note=username))


def set_active(session: Session, username: str, active: bool) -> None:
    user = get_user(session, username)
    user.active = active
    user.auth_epoch += 1
    session.add(AuditEntry(at=utcnow(), action="user", field="active", new_json=dumps(active), note=username))


def end_sessions(session: Session, user_id: int) -> None:
    """Log the user out everywhere (every cookie issued before stops working)."""
    session.execute(update(User).where(User.id == user_id).values(auth_epoch=User.auth_epoch + 1))


def audit_logout(session: Session, user: User, *, client_ip: str | None) -> None:
    """A ``logout`` entry in the audit log (note: the client's address)."""
    session.add(AuditEntry(at=utcnow(), user_id=user.id, action="logout", note=client_ip))


class UserOut(BaseModel):
    username: str
    role: str
    active: bool
    created_at: str


def list_users(session: Session) -> list[UserOut]:
    return [
        UserOut(username=u.username, role=u.role, active=u.active, created_at=u.created_at.isoformat())
        for u in session.scalars(select(User).order_by(User.username))
    ]


def authenticate(
    session: Session,
    username: str,
    password: str,
    *,
    client_ip: str | None,
    policy: ThrottlePolicy,
    now: datetime | None = None,
) -> User | None:
    """The user if the credentials are right; ``None`` if not (the failure is counted), in one
    transaction (the web app splits it: :func:`begin_login`, the password check, :func:`finish_login`).

    Raises :class:`Throttled` while the user name or the address is locked, before the password is
    checked, so guessing gains nothing during a lock.
    """
    now = now or utcnow()
    attempt = begin_login(session, username, client_ip=client_ip, policy=policy, now=now)
    ok = verify_password(attempt.password_hash, password or "")
    return finish_login(session, attempt, ok, policy=policy)


class LoginAttempt:
    """A login attempt counted in advance by :func:`begin_login`: who it is for, the hash to check."""

    def __init__(self, username: str, client_ip: str | None, user_id: int | None, password_hash: str | None, active: bool):
        self.username, self.client_ip = username, client_ip
        self.user_id, self.password_hash, self.active = user_id, password_hash, active


def begin_login(session: Session, username: str, *, client_ip: str | None, policy: ThrottlePolicy, now: datetime | None = None) -> LoginAttempt:
    """Check the throttle and count the attempt as a failure in advance (the rows are locked until the
    caller's transaction ends: keep it short, and verify the password after it); :class:`Throttled`
    during a lock."""
    now = now or utcnow()
    name = username if isinstance(username, str) else ""
    keys = throttle_keys(name, client_ip)
    wait = reserve_attempt(session, keys, now, policy)
    if wait > 0:
        raise Throttled(wait)
    user = find_user(session, name) if name else None
    return LoginAttempt(name, client_ip, user.id if user else None, user.password_hash if user else None, bool(user and user.active))


def finish_login(session: Session, attempt: LoginAttempt, ok: bool, *, policy: ThrottlePolicy, now: datetime | None = None) -> User | None:
    """After the password check: the user (their counter cleared) or ``None``; audited either way
    (``login`` / ``login_failed`` with the name tried, never the password)."""
    now = now or utcnow()
    user = session.get(User, attempt.user_id) if attempt.user_id is not None else None
    if ok and user is not None and user.active and attempt.active:
        take_back_attempt(session, attempt.username, attempt.client_ip, policy)
        session.add(AuditEntry(at=now, user_id=user.id, action="login", note=attempt.client_ip))
        return user
    session.add(AuditEntry(at=now, user_id=None, action="login_failed", note=failed_login_note(attempt.username, attempt.client_ip)))
    return None


def failed_login_note(typed: str, client_ip: str | None) -> str:
    """``"<the name typed>" from <address>``: the name in JSON quotes, escaped to ASCII (no control
    character, no quote of its own), so a typed ``lead from 192.168.7.7`` cannot read as an address."""
    address = throttle_keys("", client_ip)[1].removeprefix("ip:")
    return f"{json.dumps(typed[:64])} from {address}"
