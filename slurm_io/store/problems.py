"""The quarantine: records from outside that could not be taken, kept where an admin sees them.

Every intake (sacct lines, hook spool files, job_stats entries, spooled batches, collector
state files) reports a refused record here instead of raising, so that one bad record never
blocks the ones after it and nothing is dropped silently. `jobio problems` lists them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from slurm_io.model import Problem
from slurm_io.text import clean

__all__ = ["Problem", "StoredProblem", "clean_opt", "counts", "database_identity", "recent",
           "record"]

log = logging.getLogger(__name__)

MAX_RECORD_BYTES = 64 * 1024


class StoredProblem(NamedTuple):
    id: int
    seen_at: datetime
    source: str
    origin: str | None
    reason: str
    lost: str | None
    record: bytes | None


def _record_bytes(record: bytes | str | None) -> bytes | None:
    if record is None:
        return None
    if isinstance(record, str):
        record = record.encode("utf-8", "surrogateescape")
    return bytes(record[:MAX_RECORD_BYTES])


def _safe_bytes(record: bytes | str | None) -> bytes | None:
    try:
        return _record_bytes(record)
    except UnicodeEncodeError:  # lone surrogates other than surrogateescape's
        return clean(record).encode("utf-8") if isinstance(record, str) else None


def record(conn: Any, problems: Iterable[Problem]) -> int:
    """Insert `problems` (in the caller's transaction); return how many.

    Text is cleaned (slurm_io.text) so that the quarantine itself can never refuse a row.
    """
    rows = [
        (clean(p.source), clean_opt(p.origin), clean(p.reason)[:2000], clean_opt(p.lost),
         _safe_bytes(p.record))
        for p in problems
    ]
    if rows:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO problem (source, origin, reason, lost, record)"
                " VALUES (%s, %s, %s, %s, %s)",
                rows,
            )
    return len(rows)


def clean_opt(value: str | None) -> str | None:
    return None if value is None else clean(value)


def recent(conn: Any, *, source: str | None = None, since: float | None = None,
           limit: int = 100) -> list[StoredProblem]:
    """The newest problems first (admins; others get a permission error from the server)."""
    where = []
    params: list[Any] = []
    if source:
        where.append("source = %s")
        params.append(source)
    if since is not None:
        where.append("seen_at >= to_timestamp(%s)")
        params.append(since)
    sql = ("SELECT id, seen_at, source, origin, reason, lost, record FROM problem"
           + (" WHERE " + " AND ".join(where) if where else "")
           + " ORDER BY seen_at DESC, id DESC LIMIT %s")
    params.append(limit)
    return [StoredProblem(*r) for r in conn.execute(sql, params).fetchall()]


class SourceProblems(NamedTuple):
    """Problems of one source: how many, and how many lost data."""

    source: str
    n: int
    losses: int


def by_source(conn: Any, s: datetime, e: datetime) -> list[SourceProblems]:
    """Problems recorded in (s, e] per source (`jobio usage`). Admins only: others get the
    database's InsufficientPrivilege (in a savepoint: the caller's transaction goes on)."""
    with conn.transaction():
        return [SourceProblems(*r) for r in conn.execute(
            """SELECT source, count(*)::bigint, count(lost)::bigint FROM problem
               WHERE seen_at > %s AND seen_at <= %s GROUP BY 1 ORDER BY 1""",
            (s, e)).fetchall()]


def one(conn: Any, problem_id: int) -> StoredProblem | None:
    """The problem `problem_id`, or None."""
    row = conn.execute("SELECT id, seen_at, source, origin, reason, lost, record FROM problem"
                       " WHERE id = %s", (problem_id,)).fetchone()
    return None if row is None else StoredProblem(*row)


def counts(conn: Any, *, since: float | None = None) -> dict[str, int]:
    """Problems per source (for `jobio usage` and health views)."""
    sql = "SELECT source, count(*) FROM problem"
    params: list[Any] = []
    if since is not None:
        sql += " WHERE seen_at >= to_timestamp(%s)"
        params.append(since)
    sql += " GROUP BY source ORDER BY source"
    return {s: int(n) for s, n in conn.execute(sql, params).fetchall()}


def kept_recently(conn: Any, sources: Iterable[str], records: Iterable[bytes]) -> set[bytes]:
    """Which of `records` the quarantine already holds from one of `sources`, seen in the last
    week: a periodic sync reads overlapping windows, and a bad line is kept once."""
    with conn.transaction():
        return {bytes(r) for (r,) in conn.execute(
            "SELECT record FROM problem WHERE source = ANY(%s) AND record = ANY(%s) "
            "AND seen_at > now() - interval '7 days'",
            (sorted(set(sources)), list(records)))}


def database_identity(conn: Any) -> str:
    """The database's identity (sql/0009): what a collector state is bound to."""
    row = conn.execute("SELECT id::text FROM db_identity").fetchone()
    if row is None:
        raise RuntimeError("db_identity is empty: run `jobio db upgrade`")
    return str(row[0])
