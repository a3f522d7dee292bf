"""Small helpers every query module shares: times as the server takes them, JIT off for
reports, hashing for the day's scans, whether the LASSi tables exist.

One copy here instead of one per query module (attribute, lassi, report, alerts, store each
wrote its own `_ts`); a leaf of store/ that imports nothing of slurm_io.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import overload

import psycopg
from psycopg import pq


@overload
def ts(t: float) -> datetime: ...
@overload
def ts(t: None) -> None: ...
def ts(t: float | None) -> datetime | None:
    """Unix seconds as an aware UTC datetime (what a timestamptz parameter takes); None
    stays None (SQL NULL)."""
    return None if t is None else datetime.fromtimestamp(t, UTC)


def no_jit(conn: psycopg.Connection) -> None:
    """Turn JIT compilation off for the current transaction (the session when autocommit).

    The row estimate of the bucket spreading (generate_series: 1000 rows) makes the planner
    believe in millions of rows, and JIT then costs seconds on queries that take a fraction
    of one; reports never profit from JIT anyway.
    """
    conn.execute("SET jit = off" if conn.autocommit else "SET LOCAL jit = off")


@contextmanager
def hash_groups(conn: psycopg.Connection) -> Iterator[None]:
    """Within the block, aggregate by hashing (enable_sort off; as it was after it, unless
    the transaction failed): the day's scans first sum their deltas per bucket range, a few
    hundred thousand groups out of tens of millions of rows, but the planner cannot
    estimate groups of expressions and sorted the whole day instead (external merge of
    4 GB, then one process summing 48 M rows: bench/README.md, "A day at a site")."""
    scope = "" if conn.autocommit else "LOCAL "
    row = conn.execute("SHOW enable_sort").fetchone()
    before = row[0] if row else "on"
    conn.execute(f"SET {scope}enable_sort = off")
    try:
        yield
    finally:
        if conn.info.transaction_status != pq.TransactionStatus.INERROR:
            conn.execute(f"SET {scope}enable_sort = {'on' if before == 'on' else 'off'}")


def has_tables(conn: psycopg.Connection) -> bool:
    """Whether the LASSi tables exist (sql/ migrations that add them may not have run):
    readers of LASSi hours (show's summary, slowdown, alerts) answer 'none' otherwise."""
    row = conn.execute("SELECT to_regclass('lassi_job_hour') IS NOT NULL").fetchone()
    return bool(row and row[0])
