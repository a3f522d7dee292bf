"""Users' opt-out of the I/O mail: table mail_preference (sql/0006_mail.sql).

A user connected with their own role (peer authentication, `jobio db users`) writes their own
row: the uid is the database's `jobio_current_uid()`, and row-level security refuses any
other. A role without a mapped uid (the embedded superuser, a collector) names the uid itself.
"""

from __future__ import annotations

import os
import pwd
from datetime import datetime
from typing import NamedTuple

import psycopg


class Preference(NamedTuple):
    uid: int
    enabled: bool | None  # None: never set, the site policy applies
    changed_at: datetime | None


class NoUidError(LookupError):
    """The connected role has no uid and none was given."""


def role_uid(conn: psycopg.Connection) -> int | None:
    """The uid the database maps the connected role to (None when unmapped)."""
    row = conn.execute("SELECT jobio_current_uid()").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def user_uid(name: str) -> int:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError as e:
        raise NoUidError(f"no such user: {name!r}") from e


def resolve_uid(conn: psycopg.Connection, user: str | None = None) -> int:
    """The uid a `jobio mail` command is about: `user`'s when given, else the connected role's,
    else the uid running the command (a superuser or the embedded database's owner)."""
    if user is not None:
        return int(user) if user.isdigit() else user_uid(user)
    uid = role_uid(conn)
    return os.getuid() if uid is None else uid


def get(conn: psycopg.Connection, uid: int) -> Preference:
    row = conn.execute("SELECT enabled, changed_at FROM mail_preference WHERE uid = %s",
                       (uid,)).fetchone()
    return Preference(uid, None, None) if row is None else Preference(uid, row[0], row[1])


def enabled(conn: psycopg.Connection, uid: int | None) -> bool | None:
    """The user's choice (None: never set, or the job has no uid)."""
    return None if uid is None else get(conn, uid).enabled


def set_enabled(conn: psycopg.Connection, uid: int, on: bool) -> Preference:
    """Store the choice of `uid` and commit. Row-level security refuses another user's uid
    (psycopg.errors.InsufficientPrivilege)."""
    row = conn.execute(
        """INSERT INTO mail_preference (uid, enabled) VALUES (%s, %s)
           ON CONFLICT (uid) DO UPDATE SET enabled = EXCLUDED.enabled
           RETURNING enabled, changed_at""", (uid, on)).fetchone()
    conn.commit()
    assert row is not None
    return Preference(uid, row[0], row[1])
