"""The mail package's query module: users' opt-out rows (mail_preference, sql/0006_mail.sql)
and the uid the database maps the connected role to. Typed and thin: what a choice means is
in `preferences`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from psycopg import Connection


class Preference(NamedTuple):
    """A user's choice about the I/O mail."""

    uid: int
    enabled: bool | None  # None: never set, the site policy applies
    changed_at: datetime | None


def role_uid(conn: Connection) -> int | None:
    """The uid the database maps the connected role to (None when unmapped)."""
    row = conn.execute("SELECT jobio_current_uid()").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def preference(conn: Connection, uid: int) -> Preference:
    """The stored choice of `uid` (enabled None when there is no row)."""
    row = conn.execute("SELECT enabled, changed_at FROM mail_preference WHERE uid = %s",
                       (uid,)).fetchone()
    return Preference(uid, None, None) if row is None else Preference(uid, row[0], row[1])


def store_preference(conn: Connection, uid: int, on: bool) -> Preference:
    """Insert or update the choice of `uid` (not committed). Row-level security refuses
    another user's uid (InsufficientPrivilege)."""
    row = conn.execute(
        """INSERT INTO mail_preference (uid, enabled) VALUES (%s, %s)
           ON CONFLICT (uid) DO UPDATE SET enabled = EXCLUDED.enabled
           RETURNING enabled, changed_at""", (uid, on)).fetchone()
    assert row is not None
    return Preference(uid, row[0], row[1])
