"""Users' opt-out of the I/O mail: table mail_preference (sql/0006_mail.sql).

A user connected with their own role (peer authentication, `jobio db users`) writes their own
row: the uid is the database's `jobio_current_uid()`, and row-level security refuses any
other. A role without a mapped uid (the embedded superuser, a collector) names the uid itself.
"""

from __future__ import annotations

import os
import pwd
from typing import TYPE_CHECKING

from slurm_io.mail import sql
from slurm_io.mail.sql import Preference, role_uid

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["NoUidError", "Preference", "enabled", "get", "resolve_uid", "role_uid",
           "set_enabled", "user_uid"]


class NoUidError(LookupError):
    """The connected role has no uid and none was given."""


def user_uid(name: str) -> int:
    """The uid of user `name` on this host (NoUidError when there is none)."""
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError as e:
        raise NoUidError(f"no such user: {name!r}") from e


def resolve_uid(conn: Connection, user: str | None = None) -> int:
    """The uid a `jobio mail` command is about: `user`'s when given, else the connected role's,
    else the uid running the command (a superuser or the embedded database's owner)."""
    if user is not None:
        return int(user) if user.isdigit() else user_uid(user)
    uid = role_uid(conn)
    return os.getuid() if uid is None else uid


def get(conn: Connection, uid: int) -> Preference:
    """The choice of `uid` (enabled None: never set)."""
    return sql.preference(conn, uid)


def enabled(conn: Connection, uid: int | None) -> bool | None:
    """The user's choice (None: never set, or the job has no uid)."""
    return None if uid is None else get(conn, uid).enabled


def set_enabled(conn: Connection, uid: int, on: bool) -> Preference:
    """Store the choice of `uid` and commit. Row-level security refuses another user's uid
    (store.errors.InsufficientPrivilege)."""
    pref = sql.store_preference(conn, uid, on)
    conn.commit()
    return pref
