"""Users: add, list, change passwords, deactivate, and log in (with throttling)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from rescue_bench.review.errors import Invalid, NotFound, Throttled
from rescue_bench.review.models import ROLES, AuditEntry, User, dumps, utcnow
from rescue_bench.review.security import (
    ThrottlePolicy,
    check_password_strength,
    hash_password,
    record_failure,
    record_success,
    throttle_keys,
    throttle_wait,
    verify_password,
)

USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""User names: letters, digits, ``.``, ``_``, ``-``; up to 64 characters (they appear in URLs and logs)."""


def get_user(session: Session, username: str) -> User:
    user = session.scalars(select(User).where(User.username == username)).first()
    if user is None:
        raise NotFound(f"no such user: {username}")
    return user


def add_user(session: Session, username: str, password: str, role: str, *, now: datetime | None = None) -> User:
    if not USERNAME_RE.match(username or ""):
        raise Invalid(f"user name {username!r} is not allowed: use letters, digits, '.', '_' or '-' (at most 64)", "username")
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}, got {role!r}", "role")
    problem = check_password_strength(password)
    if problem:
        raise Invalid(problem, "password")
    if session.scalars(select(User.id).where(User.username == username)).first() is not None:
        raise Invalid(f"user {username!r} already exists", "username")
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


def list_users(session: Session) -> list[dict[str, Any]]:
    return [
        {"username": u.username, "role": u.role, "active": u.active, "created_at": u.created_at.isoformat()}
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
    """The user if the credentials are right; ``None`` if not (the failure is counted).

    Raises :class:`Throttled` while the user name or the address is locked, before the password is
    checked, so guessing gains nothing during a lock.
    """
    now = now or utcnow()
    keys = throttle_keys(username or "", client_ip)
    wait = throttle_wait(session, keys, now)
    if wait > 0:
        raise Throttled(wait)
    user = session.scalars(select(User).where(User.username == username)).first() if username else None
    ok = verify_password(user.password_hash if user else None, password or "")
    if ok and user is not None and user.active:
        record_success(session, username)
        return user
    record_failure(session, keys, now, policy)
    return None
