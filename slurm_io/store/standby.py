"""Readers on a streaming standby (`read_dsn`, docs/deploy.md "Readers on a standby"): how
stale the copy a reader sees is, and waiting for it to have what the primary just wrote.

Why the lag is not simply `now() - pg_last_xact_replay_timestamp()`: that grows without bound
while the primary is idle (no transaction to replay, the standby fully caught up), so a quiet
night would read as hours of staleness. A standby that has replayed everything it received
is 0 behind; otherwise the age of the last transaction it replayed says how far it is. A
primary is 0: its readers see every committed write.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

_LAG_SQL = (
    "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0::float8 "
    "WHEN pg_last_wal_receive_lsn() IS NOT NULL "
    " AND pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0::float8 "
    "ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, 0) "
    "END")


def replication_lag(conn: psycopg.Connection) -> float:
    """Seconds the data `conn` reads are behind the primary (0 on the primary itself or on a
    standby that replayed all it received). Read in a transaction block of its own (a
    savepoint inside a caller's transaction), so it leaves no transaction open."""
    with conn.transaction():
        row = conn.execute(_LAG_SQL).fetchone()
    return max(0.0, float(row[0])) if row and row[0] is not None else 0.0


def is_standby(conn: psycopg.Connection) -> bool:
    with conn.transaction():
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    return bool(row and row[0])


def primary_position(conn: psycopg.Connection) -> str:
    """The primary's WAL position now: everything committed before is at or before it."""
    with conn.transaction():
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    return str(row[0])


def wait_replayed(conn: psycopg.Connection, position: str, *, timeout: float = 60.0,
                  poll: float = 0.2) -> bool:
    """Wait until the standby of `conn` replayed the primary's WAL up to `position` (its
    writes are visible to `conn`'s next transaction); False after `timeout` seconds. True at
    once on a primary."""
    deadline = time.monotonic() + timeout
    while True:
        with conn.transaction():
            row = conn.execute(
                "SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= %s::pg_lsn",
                (position,)).fetchone()
        if row and row[0]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
