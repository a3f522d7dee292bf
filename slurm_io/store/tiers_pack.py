"""`jobio db pack`: moving closed hours of raw deltas into the packed tier (sql/0025: one row
per entry and UTC day, the `derived` layout of store.tiers).

What "closed" means (`closed`, a pure policy): an hour [h, h + 1 h) of ts_end is packed once
(1) it ended `min_age` ago (default 6 h: the collectors' normal lateness, a spool drained
after a short outage, stays hot), and (2) every job that overlapped it and has ended has a
complete stored attribution -- so attribution's first read of a job, and the re-reads of
`jobio show` right after it ends, stay on the hot tier -- or, failing that, it ended
`max_wait` ago (default 2 d: one job whose attribution cannot complete must not keep a
site's hours hot for ever). Correctness never depends on it: every reader reads both tiers
(store.tiers), and a delta that arrives later for a packed hour is read from the hot tier
until the next pack merges it.

How: a day's contiguous closed hours are one run (`runs`), so the daily maintenance writes
each entry's day row once. One scan of the day's hot partition plans the run (`_plan`: each
hot row's chunk, `hashtext(raw_id)` modulo the number of chunks so that a chunk holds
~`rows_per_transaction` rows, and its ctid); then ONE statement per chunk deletes the
chunk's hot rows (a TID scan, re-checked against the run and chunk), the packed day rows of
the same entries (late data, or hours of the day closed earlier), and inserts them merged,
one row per entry -- in its own transaction. Entries without hot deltas keep their rows
untouched. A kill at any point leaves each chunk either packed or not: no delta lost or
counted twice, and running it again plans again and goes on where it stopped. It is
online: the DELETE takes the same ROW EXCLUSIVE lock as the collectors' COPY (they never
wait for each other), and the rows it deletes are ones no collector writes again; a late
delta COPYed into the run meanwhile is not in the plan (nor the statement's snapshot) and
stays hot. `lock_timeout` keeps a chunk from queueing behind DDL (a `prune` DROP), which
would queue the COPYs behind it. sql/0021's hour rows (renamed jobstats_packed_0021 by
sql/0025) are re-packed day by day first (`convert_old`), in the same statement.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

import psycopg
from psycopg import sql

from slurm_io.store import partitions, tiers
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


def runs(hours: list[float]) -> list[tuple[float, float]]:
    """The hours (starts, epoch) as runs [h0, h1) of contiguous hours of one UTC day, in
    order: a day's closed hours are packed together, so that its rows are written once."""
    out: list[tuple[float, float]] = []
    for h in sorted(hours):
        if out and out[-1][1] == h and partitions.day_of(h) == partitions.day_of(out[-1][0]):
            out[-1] = (out[-1][0], h + HOUR)
        else:
            out.append((h, h + HOUR))
    return out


def _is_zero(c: str) -> str:
    """Whether a residual array of column c is NULL (sql/0025): every residual 0, and its
    NULLs exactly where min is NULL (so the prediction gives every element back)."""
    mn = f"{c.split('_bytes')[0]}_bytes_min"
    return (f"bool_and(CASE WHEN {c} IS NULL THEN {mn} IS NULL ELSE coalesce({mn} IS NOT "
            f"NULL AND x_{c} = 0, false) END)")


def _encoded() -> dict[str, str]:
    """Each delta's array elements in sql/0025's layout, from jobstats_delta's columns (the
    inverse of tiers.decoded, with its `predicted_*` expressions); %(day)s is the row's day."""
    out = {c: c for c in array_columns()}
    out["ts_end"] = "(extract(epoch FROM ts_end - %(day)s::timestamptz) * 1000000)::int8"
    for c in tiers.TIMES:
        out[c] = f"(extract(epoch FROM ts_end - {c}) * 1000000)::int8"
    for b in tiers.BYTES:
        mn, s = f"{b}_min", f"{b}_sumsq"
        out[f"{b}_max"] = f"{b}_max - {tiers.predicted_max(mn)}"
        out[b] = f"{b} - {tiers.predicted_bytes(f'{b}_samples', mn)}"
        # exact through int8: an integer in [-2^62, 2^63) (NaN and infinities are not)
        escape = (f"NOT ({s} = floor({s}) AND {s} >= -{tiers.LIMIT}::float8 AND "
                  f"{s} < 9223372036854775808::float8)")
        out[s] = f"CASE WHEN {escape} THEN NULL ELSE {s}::int8 - " \
                 f"{tiers.predicted_sumsq(b, mn)} END"
        out[f"{s}_raw"] = f"CASE WHEN {escape} THEN {s} END"
    return out


def _aggregates() -> list[str]:
    """The packed row's arrays, aggregated from the encoded elements (x_<column>)."""
    residuals = {f"{b}{k}" for b in tiers.BYTES for k in ("", "_max", "_sumsq")}
    out = []
    for c in tiers.packed_arrays():
        agg = f"array_agg(x_{c} ORDER BY rn)"
        if c in ("target_id", "ts_end", "ts_start"):
            out.append(agg)
        elif c == "flags":
            out.append(f"CASE WHEN bool_and(flags = 0) THEN NULL ELSE {agg} END")
        elif c in residuals:
            out.append(f"CASE WHEN {_is_zero(c)} THEN NULL ELSE {agg} END")
        else:
            out.append(f"CASE WHEN count(x_{c}) = 0 THEN NULL ELSE {agg} END")
    return out


def _pack_sql(hot_table: str, old: bool) -> str:
    """The one statement that packs a chunk of a run (parameters h0, h1, day, k, i; no %
    of its own): the chunk's hot rows of the run (ctids planned in pack_plan, re-checked),
    with `old` the chunk's sql/0021 rows of the day, and the packed day rows of the same
    entries, decoded, merged, encoded and inserted as one row per entry."""
    cols = columns()
    entry = ", ".join(ENTRY_COLUMNS)
    chunk = "(hashtext(raw_id) & 2147483647) %% %(k)s = %(i)s"
    enc = _encoded()
    parts = [
        f"h AS (DELETE FROM {hot_table} WHERE ctid = ANY(ARRAY(SELECT t FROM pack_plan "
        f"WHERE b = %(i)s)) AND ts_end >= %(h0)s AND ts_end < %(h1)s AND {chunk} "
        f"RETURNING {', '.join(cols)})"]
    ids = "SELECT raw_id FROM h"
    union = [f"SELECT {', '.join(cols)} FROM h"]
    if old:
        parts.append(f"o AS (DELETE FROM {tiers.PACKED_0021} WHERE hour >= %(day)s AND hour < "
                     f"%(day)s::timestamptz + interval '1 day' AND {chunk} RETURNING *)")
        ids += " UNION SELECT raw_id FROM o"
        union.append(tiers.select_0021("o"))
    parts.append(f"p AS (DELETE FROM {PACKED} WHERE hour = %(day)s AND raw_id IN ({ids}) "
                 "RETURNING *)")
    union.append(tiers.packed_select("p"))
    parts += [
        f"u AS ({' UNION ALL '.join(union)})",
        # a total order: every array of a row lists the same deltas in the same order
        "s AS (SELECT u.*, row_number() OVER (ORDER BY target_id, ts_end, ts_start, "
        "last_update, flags) AS rn FROM u)",
        f"e AS (SELECT s.*, {', '.join(f'{x} AS x_{c}' for c, x in enc.items())} FROM s)",
        f"ins AS (INSERT INTO {PACKED} (hour, {entry}, n, {', '.join(tiers.packed_arrays())}) "
        f"SELECT %(day)s, {entry}, count(*), {', '.join(_aggregates())} FROM e "
        f"GROUP BY {entry} RETURNING 1)"]
    return (f"WITH {', '.join(parts)} SELECT (SELECT count(*) FROM h), "
            "(SELECT count(*) FROM ins)")


class Packed(NamedTuple):
    """What one `pack` run did."""

    hours: int
    deltas: int  # hot rows moved into the packed tier
    transactions: int
    skipped: int  # hours with hot deltas left hot by the policy (young or pending jobs)
    converted: int = 0  # days of sql/0021's hour rows re-packed into day rows


def _plan(conn: psycopg.Connection, hot_table: str, h0: float, h1: float, k: int) -> None:
    """pack_plan: the ctid and chunk of each hot row of the run, from ONE scan of its day's
    partition, so that each chunk's DELETE is a TID scan (a chunk that scanned the run for
    its rows by hash would read the whole day once per chunk: k x N rows)."""
    with conn.transaction():
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS pack_plan (b int4, t tid)")
        conn.execute("TRUNCATE pack_plan")
        conn.execute(sql.SQL(  # type: ignore[arg-type]
            "INSERT INTO pack_plan SELECT (hashtext(raw_id) & 2147483647) % {k}, ctid "
            "FROM {hot} WHERE ts_end >= {h0} AND ts_end < {h1}").format(
                k=sql.Literal(k), hot=sql.Identifier(hot_table), h0=sql.Literal(_ts(h0)),
                h1=sql.Literal(_ts(h1))))
        conn.execute("CREATE INDEX IF NOT EXISTS pack_plan_b ON pack_plan (b)")
        conn.execute("ANALYZE pack_plan")


def pack_run(conn: psycopg.Connection, h0: float, h1: float, hot_rows: int,
             rows_per_transaction: int = ROWS_PER_TRANSACTION, *, old_rows: int = 0,
             lock_timeout: str = "5s") -> tuple[int, int]:
    """Pack the hot deltas of [h0, h1) (hours of one UTC day), merging them with what is
    packed of the same entries that day -- and, with `old_rows` (sql/0021 deltas of the
    day), re-pack those too; returns (hot deltas moved, transactions: the plan's and one
    per chunk). Commits each chunk."""
    day = partitions.day_of(h0)
    ensure_packed_day(conn, day)
    hot_table = partitions.partition_name(day)
    with conn.transaction():
        if conn.execute("SELECT to_regclass(%s)", (hot_table,)).fetchone() == (None,):
            hot_table = HOT  # no hot partition that day: nothing hot to pack
    k = chunks(hot_rows + old_rows, rows_per_transaction)
    _plan(conn, hot_table, h0, h1, k)
    statement = _pack_sql(sql.Identifier(hot_table).as_string(conn), old_rows > 0)
    moved = 0
    for i in range(k):
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                sql.Literal(lock_timeout)))
            row = conn.execute(statement,  # type: ignore[arg-type]
                               {"h0": _ts(h0), "h1": _ts(h1), "k": k, "i": i,
                                "day": _day_start(day)}).fetchone()
            moved += int(row[0]) if row else 0
    return moved, k + 1


def pack_hour(conn: psycopg.Connection, hour: float, hot_rows: int,
              rows_per_transaction: int = ROWS_PER_TRANSACTION, *,
              lock_timeout: str = "5s") -> tuple[int, int]:
    """Pack the hot deltas of the hour starting at `hour` (epoch): a run of one hour."""
    return pack_run(conn, hour, hour + HOUR, hot_rows, rows_per_transaction,
                    lock_timeout=lock_timeout)


def old_days(conn: psycopg.Connection) -> list[tuple[date, int]]:
    """The days of sql/0021's hour rows still to re-pack, with their deltas, oldest first."""
    rows = conn.execute(
        f"SELECT (hour AT TIME ZONE 'UTC')::date, sum(n) FROM {tiers.PACKED_0021} "
        "GROUP BY 1 ORDER BY 1").fetchall()
    return [(d, int(n)) for d, n in rows]


def convert_old(conn: psycopg.Connection, rows_per_transaction: int = ROWS_PER_TRANSACTION,
                *, lock_timeout: str = "5s") -> tuple[int, int]:
    """Re-pack every day of sql/0021's rows as day rows (merged with what is packed of the
    day), dropping each emptied partition; returns (days, transactions)."""
    with conn.transaction():
        todo = old_days(conn)
    txns = 0
    for day, n in todo:
        d0 = _day_start(day).timestamp()
        txns += pack_run(conn, d0, d0, 0, rows_per_transaction, old_rows=n,
                         lock_timeout=lock_timeout)[1]
        try:
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                    sql.Literal(lock_timeout)))
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                    sql.Identifier(partitions.packed_0021_name(day))))
        except psycopg.errors.LockNotAvailable:
            pass  # empty: read as nothing; the next run (or prune) drops it
    return len(todo), txns


def pack(conn: psycopg.Connection, now: float, *, min_age: float = MIN_AGE,
         max_wait: float = MAX_WAIT, rows_per_transaction: int = ROWS_PER_TRANSACTION,
         progress: Callable[[float, int], None] | None = None) -> Packed:
    """Re-pack what is left of sql/0021's rows, then pack every closed hour, a day's
    contiguous closed hours in one run (oldest first); `progress(h0, deltas)` after each."""
    days, txns = convert_old(conn, rows_per_transaction)
    with conn.transaction():
        states = hour_states(conn, now - min_age, now)
    todo = [h for h in states if closed(h, now, min_age, max_wait)]
    rows = {h.hour: h.hot_rows for h in todo}
    moved = 0
    for h0, h1 in runs(list(rows)):
        hot = sum(n for h, n in rows.items() if h0 <= h < h1)
        n, k = pack_run(conn, h0, h1, hot, rows_per_transaction)
        moved += n
        txns += k
        if progress is not None:
            progress(h0, n)
    return Packed(len(todo), moved, txns, len(states) - len(todo), days)
