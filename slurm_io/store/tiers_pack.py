"""`jobio db pack`: moving closed hours of raw deltas into the packed tier (sql/0021).

What "closed" means (`closed`, a pure policy): an hour [h, h + 1 h) of ts_end is packed once
(1) it ended `min_age` ago (default 6 h: the collectors' normal lateness, a spool drained
after a short outage, stays hot), and (2) every job that overlapped it and has ended has a
complete stored attribution -- so attribution's first read of a job, and the re-reads of
`jobio show` right after it ends, stay on the hot tier -- or, failing that, it ended
`max_wait` ago (default 2 d: one job whose attribution cannot complete must not keep a
site's hours hot for ever). Correctness never depends on it: every reader reads both tiers
(store.tiers), and a delta that arrives later for a packed hour is read from the hot tier
until the next pack merges it.

How: per hour, in chunks of entries (`hashtext(raw_id)` modulo the number of chunks, so a
chunk holds ~`rows_per_transaction` hot rows), ONE statement per chunk deletes the chunk's
hot rows and the packed rows of the same entries and hour, and inserts them merged, one row
per entry -- in its own transaction. A kill at any point leaves each chunk either packed or
not: no delta lost or counted twice, and running it again goes on where it stopped. It is
online: the DELETE takes the same ROW EXCLUSIVE lock as the collectors' COPY (they never
wait for each other), and the rows it deletes are ones no collector writes again; a late
delta COPYed into the hour meanwhile is not in the statement's snapshot and stays hot.
`lock_timeout` keeps a chunk from queueing behind DDL (a `prune` DROP), which would queue
the COPYs behind it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

import psycopg
from psycopg import sql

from slurm_io.store import partitions
from slurm_io.store.sqlutil import ts as _ts
from slurm_io.store.tiers import ENTRY_COLUMNS, HOT, PACKED, array_columns, columns

HOUR = 3600.0
MIN_AGE = 6 * HOUR
MAX_WAIT = 2 * 86400.0
ROWS_PER_TRANSACTION = 50_000


class HourState(NamedTuple):
    """An hour of the hot tier, as the policy sees it."""

    hour: float  # its start (epoch, a multiple of 3600)
    hot_rows: int  # deltas still in jobstats_delta
    pending_jobs: int  # jobs that overlapped it, have ended, and lack a complete attribution


def closed(h: HourState, now: float, min_age: float = MIN_AGE,
           max_wait: float = MAX_WAIT) -> bool:
    """Whether hour `h` is to be packed now (the module's docstring says why)."""
    end = h.hour + HOUR
    if h.hot_rows <= 0 or end > now - min_age:
        return False
    return h.pending_jobs == 0 or end <= now - max_wait


def chunks(hot_rows: int, rows_per_transaction: int) -> int:
    """How many transactions an hour of `hot_rows` deltas is packed in."""
    return max(1, math.ceil(hot_rows / max(1, rows_per_transaction)))


_HOUR_OF = "to_timestamp(floor(extract(epoch FROM ts_end) / 3600) * 3600)"


def hour_states(conn: psycopg.Connection, before: float, now: float) -> list[HourState]:
    """The hours with hot deltas ending before `before`, oldest first, with their jobs
    still to attribute."""
    rows = conn.execute(
        f"WITH h AS (SELECT {_HOUR_OF} AS hour, count(*) AS n FROM {HOT} "
        "WHERE ts_end < %(before)s GROUP BY 1) "
        "SELECT extract(epoch FROM h.hour)::float8, h.n, (SELECT count(*) FROM job j "
        "LEFT JOIN job_io io USING (job) WHERE j.start_time < h.hour + interval '1 hour' "
        "AND j.end_time > h.hour AND j.end_time <= %(now)s "
        "AND (io.job IS NULL OR NOT io.complete)) FROM h ORDER BY 1",
        {"before": _ts(before), "now": _ts(now)}).fetchall()
    return [HourState(float(h), int(n), int(p)) for h, n, p in rows]


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def ensure_packed_day(conn: psycopg.Connection, day: date) -> bool:
    """Create the packed partition of `day` if missing (as the owner: only it packs), with a
    low toast_tuple_target so that rows of a few deltas are compressed too. Commits."""
    name = partitions.packed_partition_name(day)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (partitions.PARTITION_LOCK_KEY,))
        if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() != (None,):
            return False
        conn.execute(sql.SQL(
            "CREATE TABLE {name} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
            "INCLUDING STORAGE INCLUDING COMPRESSION) WITH (toast_tuple_target = 128)"
        ).format(name=sql.Identifier(name), parent=sql.Identifier(PACKED)))
        conn.execute(sql.SQL(
            "ALTER TABLE {parent} ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})"
        ).format(parent=sql.Identifier(PACKED), name=sql.Identifier(name),
                 lo=sql.Literal(_day_start(day)),
                 hi=sql.Literal(_day_start(day + timedelta(days=1)))))
    return True


def _pack_sql() -> str:
    """The one statement that packs a chunk of an hour (parameters h0, h1, k, i, no %)."""
    cols = columns()
    arrays = array_columns()
    unnested = ", ".join(f"p.{c}" if c in ENTRY_COLUMNS else f"u.{c}" for c in cols)
    aggs = []
    for c in arrays:
        agg = f"array_agg({c} ORDER BY rn)"
        if c in ("target_id", "ts_end", "ts_start"):
            aggs.append(agg)
        elif c == "flags":
            aggs.append(f"CASE WHEN bool_and(flags = 0) THEN NULL ELSE {agg} END")
        else:
            aggs.append(f"CASE WHEN count({c}) = 0 THEN NULL ELSE {agg} END")
    entry = ", ".join(ENTRY_COLUMNS)
    return (
        f"WITH h AS (DELETE FROM {HOT} WHERE ts_end >= %(h0)s AND ts_end < %(h1)s "
        "AND (hashtext(raw_id) & 2147483647) %% %(k)s = %(i)s "
        f"RETURNING {', '.join(cols)}), "
        f"p AS (DELETE FROM {PACKED} WHERE hour = %(h0)s "
        "AND raw_id IN (SELECT raw_id FROM h) RETURNING *), "
        f"u AS (SELECT {', '.join(cols)} FROM h UNION ALL SELECT {unnested} FROM p "
        f"CROSS JOIN LATERAL unnest({', '.join('p.' + c for c in arrays)}) "
        f"AS u({', '.join(arrays)})), "
        # a total order: every array of a row lists the same deltas in the same order
        "o AS (SELECT u.*, row_number() OVER (ORDER BY target_id, ts_end, ts_start, "
        "last_update, flags) AS rn FROM u), "
        f"ins AS (INSERT INTO {PACKED} (hour, {entry}, n, {', '.join(arrays)}) "
        f"SELECT %(h0)s, {entry}, count(*), {', '.join(aggs)} FROM o GROUP BY {entry} "
        "RETURNING 1) "
        "SELECT (SELECT count(*) FROM h), (SELECT count(*) FROM ins)"
    )


class Packed(NamedTuple):
    """What one `pack` run did."""

    hours: int
    deltas: int  # hot rows moved into the packed tier
    transactions: int
    skipped: int  # hours with hot deltas left hot by the policy (young or pending jobs)


def pack_hour(conn: psycopg.Connection, hour: float, hot_rows: int,
              rows_per_transaction: int = ROWS_PER_TRANSACTION, *,
              lock_timeout: str = "5s") -> tuple[int, int]:
    """Pack the hot deltas of the hour starting at `hour` (epoch), merging them with what is
    packed of the same entries; returns (deltas moved, transactions). Commits each chunk."""
    ensure_packed_day(conn, partitions.day_of(hour))
    k = chunks(hot_rows, rows_per_transaction)
    statement = _pack_sql()
    moved = 0
    for i in range(k):
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                sql.Literal(lock_timeout)))
            row = conn.execute(statement,  # type: ignore[arg-type]
                               {"h0": _ts(hour), "h1": _ts(hour + HOUR), "k": k,
                                "i": i}).fetchone()
            moved += int(row[0]) if row else 0
    return moved, k


def pack(conn: psycopg.Connection, now: float, *, min_age: float = MIN_AGE,
         max_wait: float = MAX_WAIT, rows_per_transaction: int = ROWS_PER_TRANSACTION,
         progress: Callable[[float, int], None] | None = None) -> Packed:
    """Pack every closed hour (oldest first); `progress(hour, deltas)` after each."""
    with conn.transaction():
        states = hour_states(conn, now - min_age, now)
    todo = [h for h in states if closed(h, now, min_age, max_wait)]
    moved = txns = 0
    for h in todo:
        n, k = pack_hour(conn, h.hour, h.hot_rows, rows_per_transaction)
        moved += n
        txns += k
        if progress is not None:
            progress(h.hour, n)
    return Packed(len(todo), moved, txns, len(states) - len(todo))
