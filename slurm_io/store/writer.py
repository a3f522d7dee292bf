"""Writing one collector batch into PostgreSQL, exactly once.

Exactly-once: the batch's (collector, seq) row in ingest_batch is inserted in the same
transaction as its rows. If that key is already there the batch was written before --
including the case where a previous attempt's COMMIT reached the server but its
acknowledgement was lost -- and nothing is written again.

Speed: rows go in with binary COPY (measured ~10x faster than executemany INSERT, ~20 %
faster than text COPY), and target/host names are mapped to integer ids first (text in the
row costs ~30 % of ingest speed with indexes). The name -> id maps are cached per
connection; ids enter the cache only after the transaction that created them committed, so
a rolled-back batch can never leave an id in the cache that the database does not have.
The client and the server share two cores at >= 150k rows/s (bench/bench_ingest.py), so the
rows are made in small chunks while the server inserts the previous ones
(rows.copy_rows), and nothing scans the whole batch before the COPY starts: a name without
cached id sets its row aside for a second COPY in the same transaction.

Partitions for the batch's days are ensured before the batch transaction, in their own
short transaction: partition DDL is idempotent and harmless if the batch then fails, and
this keeps its locks out of the (longer) COPY transaction.

Per-record isolation: a batch that the server (or psycopg) refuses because of what a row
holds -- text that is not UTF-8 or holds a NUL, a value out of range -- is written again
carefully: its text cleaned (slurm_io.text), then copied under savepoints, halving the rows
that fail until each refused row stands alone. The refused rows go to the quarantine
(`problem`, with what was lost) in the same transaction as the others, so one bad row costs
one row, never the batch, and never blocks the spool.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from operator import attrgetter, itemgetter
from typing import NamedTuple
from weakref import WeakKeyDictionary

import psycopg
from psycopg import errors, pq, sql
from psycopg.copy import LibpqWriter

from slurm_io.model import Batch, Delta, JobId
from slurm_io.store import partitions, problems
from slurm_io.store.rows import copy_rows, copy_wire_types, delta_columns, parse_target_name
from slurm_io.text import clean

AHEAD_DAYS = 2  # partitions created ahead of a batch's newest day
# By default psycopg waits for the socket to drain after every 1 MB sent, so the client
# stops formatting rows while the server catches up and the two take turns. Letting up to
# this many bytes (~45k rows) queue in libpq's buffer keeps both busy (faster in most of our
# runs on 2 cores; the memory is bounded by the batch size anyway).
COPY_FLUSH_BYTES = 16 << 20
# Rows made per step of the COPY: the server gets work after the first chunk, and a chunk's
# rows (lists, tracked by the garbage collector) stay below its 700-allocation trigger.
COPY_CHUNK_ROWS = 500

_COPY_SQL = sql.SQL("COPY jobstats_delta ({}) FROM STDIN (FORMAT BINARY)").format(
    sql.SQL(", ").join(sql.Identifier(c) for c in delta_columns())
)
_COPY_TYPES = copy_wire_types()
_T1, _TARGET, _HOST = attrgetter("t1"), attrgetter("target"), attrgetter("host")
_DELTA, _JOBID = itemgetter(0), itemgetter(1)


@dataclass
class _Dimensions:
    """Committed name -> id maps of one connection."""

    targets: dict[str, int] = field(default_factory=dict)
    hosts: dict[str, int] = field(default_factory=dict)


_dimensions: WeakKeyDictionary[psycopg.Connection, _Dimensions] = WeakKeyDictionary()


class StoredBatch(NamedTuple):
    """A collector's newest stored batch: its number and the time of its read."""

    seq: int
    read_time: float


def newest_batch(conn: psycopg.Connection, collector: str) -> StoredBatch | None:
    """The newest batch stored of `collector` (None: none): what a collector state is
    checked against, so that no read is counted twice."""
    row = conn.execute(
        "SELECT seq, extract(epoch FROM read_time)::float8 FROM ingest_batch"
        " WHERE collector = %s ORDER BY seq DESC LIMIT 1", (collector,)).fetchone()
    return None if row is None else StoredBatch(int(row[0]), float(row[1]))


def write_batch(conn: psycopg.Connection, batch: Batch) -> bool:
    """Write `batch` and commit; False (and nothing written) if it was already ingested.

    `conn` must have no transaction in progress: the commit here must not commit a caller's
    unrelated work, and exactly-once needs the ingest_batch row and the rows to share one
    transaction of their own. A missing partition (dropped by another process after this
    connection cached it, or the day of a row that the first attempt did not look at) is
    repaired by one retry that ensures the day of every row.
    """
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        raise ValueError("write_batch() needs a connection with no transaction in progress")
    try:
        try:
            return _write(conn, batch, every_day=False)
        except errors.CheckViolation:
            # "no partition of relation found for row": our cache was stale or a row's day
            # was not ensured. The transaction rolled back, so retrying from scratch is
            # safe; a real check failure raises again.
            partitions.forget(conn)
            return _write(conn, batch, every_day=True)
    except RECORD_ERRORS:
        # what a row holds was refused: the transaction rolled back; isolate the bad rows
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.rollback()
        return _write_isolating(conn, batch)


# Errors that come from what a record holds rather than from the server or the connection:
# PostgreSQL's data exceptions (SQLSTATE class 22: bad encoding, NUL, out of range), and
# what psycopg raises while encoding a value (a lone surrogate, an int beyond int8).
RECORD_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.DataError, UnicodeError, OverflowError, ValueError, TypeError)


def _days(ends: set[float]) -> set[date]:
    """UTC days of the batch's interval ends, plus AHEAD_DAYS after the newest."""
    days = {partitions.day_of(t) for t in ends}
    if days:
        newest = max(days)
        days.update(newest + timedelta(days=i) for i in range(1, AHEAD_DAYS + 1))
    return days


def _write(conn: psycopg.Connection, batch: Batch, *, every_day: bool) -> bool:
    dims = _dimensions.get(conn)
    if dims is None:
        dims = _dimensions[conn] = _Dimensions()
    pairs = batch.deltas
    # Nothing here looks at every row before the COPY: that pass alone cost ~0.9 us per row
    # (a cache miss on each delta and id object) while the server waited for data. A batch
    # is one read of a server's targets, so the first and last rows give its days; a row of
    # another day that has no partition fails the COPY and write_batch retries with them all.
    # Targets and hosts not yet cached are found while the rows are made (see _copy).
    if not pairs:
        ends: set[float] = set()
    elif every_day:
        ends = set(map(_T1, map(_DELTA, pairs)))
    else:
        ends = {pairs[0][0].t1, pairs[-1][0].t1}
    partitions.ensure_days(conn, _days(ends))

    new_targets: dict[str, int] = {}
    new_hosts: dict[str, int] = {}
    with conn.transaction(), conn.cursor() as cur:
        if not _claim(cur, batch, batch.collector, len(pairs), list(batch.targets)):
            return False  # already ingested: the empty transaction just commits
        if pairs:
            # Rows naming a target or host without a cached id wait in `late` while the
            # others are copied; their names are then added (same transaction) and they
            # follow in a second COPY. In steady state `late` is empty.
            late = _copy(cur, pairs, dims.targets, dims.hosts)
            if late:
                names = set(map(_TARGET, map(_DELTA, late))) - dims.targets.keys()
                hosts = set(filter(None, map(_HOST, map(_JOBID, late)))) - dims.hosts.keys()
                new_targets = _target_ids(cur, names)
                new_hosts = _host_ids(cur, hosts)
                still = _copy(cur, late, dims.targets | new_targets, dims.hosts | new_hosts)
                if still:  # cannot happen: every name of `late` has just been given an id
                    raise RuntimeError(f"no id for the target/host of {len(still)} rows")
    # Committed: only now may the new ids enter the cache.
    dims.targets.update(new_targets)
    dims.hosts.update(new_hosts)
    return True


def _claim(cur: psycopg.Cursor, batch: Batch, collector: str, n_rows: int,
           targets: list[str]) -> bool:
    """Record the batch in ingest_batch (same transaction as its rows); False when it is
    there already, i.e. stored before (exactly once: its rows are not written again)."""
    cur.execute(
        """
        INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries,
            n_problems, n_repaired, n_unattributable, targets)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (collector, seq) DO NOTHING
        RETURNING 1
        """,
        (collector, batch.seq, datetime.fromtimestamp(batch.read_time, UTC), n_rows,
         batch.n_entries, batch.n_problems, batch.n_repaired, batch.n_unattributable,
         targets),
    )
    return cur.fetchone() is not None


def _copy(cur: psycopg.Cursor, pairs: list[tuple[Delta, JobId]], targets: dict[str, int],
          hosts: dict[str, int]) -> list[tuple[Delta, JobId]]:
    """Binary COPY of the rows whose target and host have ids; return the other pairs.

    The rows are made chunk by chunk so that the server works on one chunk while the next is
    being made (client and server run on different cores).
    """
    late: list[tuple[Delta, JobId]] = []
    writer = LibpqWriter(cur, flush_threshold=COPY_FLUSH_BYTES)
    with cur.copy(_COPY_SQL, writer=writer) as copy:
        copy.set_types(_COPY_TYPES)
        write_row = copy.write_row
        for i in range(0, len(pairs), COPY_CHUNK_ROWS):
            rows = copy_rows(pairs[i:i + COPY_CHUNK_ROWS], targets, hosts, late)
            deque(map(write_row, rows), 0)  # the write_row calls without a Python loop
    return late


def _target_ids(cur: psycopg.Cursor, names: set[str]) -> dict[str, int]:
    """Ids of targets not yet cached, inserting the unknown ones.

    Sorted insertion order: two writers adding the same new names lock them in the same
    order, so they wait for each other instead of deadlocking.
    """
    if not names:
        return {}
    ordered = sorted(names)
    parsed = [parse_target_name(n) for n in ordered]
    cur.execute(
        """
        INSERT INTO fs_target (name, fs, kind, idx)
        SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[])
        ON CONFLICT (name) DO NOTHING
        """,
        (ordered, [p[0] for p in parsed], [p[1] for p in parsed], [p[2] for p in parsed]),
    )
    cur.execute("SELECT name, target_id FROM fs_target WHERE name = ANY(%s)", (ordered,))
    return dict(cur.fetchall())


def _host_ids(cur: psycopg.Cursor, names: set[str]) -> dict[str, int]:
    """Ids of hosts not yet cached, inserting the unknown ones (sorted, as for targets)."""
    if not names:
        return {}
    ordered = sorted(names)
    cur.execute(
        "INSERT INTO host (name) SELECT unnest(%s::text[]) ON CONFLICT (name) DO NOTHING",
        (ordered,),
    )
    cur.execute("SELECT name, host_id FROM host WHERE name = ANY(%s)", (ordered,))
    return dict(cur.fetchall())


def _clean_pair(pair: tuple[Delta, JobId]) -> tuple[Delta, JobId]:
    """A delta whose text fields are storable (valid UTF-8, no NUL), else unchanged."""
    d, j = pair
    raw, target, host = clean(d.raw_id), clean(d.target), j.host and clean(j.host)
    if raw is d.raw_id and target is d.target and host is j.host:
        return pair
    return d._replace(raw_id=raw, target=target), j._replace(host=host)


def _write_isolating(conn: psycopg.Connection, batch: Batch) -> bool:
    """Write `batch` row-isolated: refused rows go to the quarantine, the others are stored.

    Slow (names and days are looked up for every row, refused rows are found by halving),
    but only ever run for a batch the fast path could not write.
    """
    pairs = list(map(_clean_pair, batch.deltas))
    collector = clean(batch.collector)
    ends: set[float] = set()
    for d, _ in pairs:
        try:
            partitions.day_of(d.t1)
        except RECORD_ERRORS:
            continue  # an impossible time: that row is refused below
        ends.add(d.t1)
    partitions.ensure_days(conn, _days(ends))
    refused: list[tuple[tuple[Delta, JobId], str]] = []
    with conn.transaction(), conn.cursor() as cur:
        if not _claim(cur, batch, collector, len(pairs), [clean(t) for t in batch.targets]):
            return False
        targets = _target_ids(cur, {d.target for d, _ in pairs})
        hosts = _host_ids(cur, {j.host for _, j in pairs if j.host})
        _copy_halving(conn, cur, pairs, targets, hosts, refused)
        if refused:
            cur.execute(
                "UPDATE ingest_batch SET n_rows = n_rows - %s, n_problems = n_problems + %s"
                " WHERE collector = %s AND seq = %s",
                (len(refused), len(refused), collector, batch.seq))
            problems.record(conn, [
                problems.Problem(
                    "batch", f"delta row refused by the database: {why}",
                    origin=f"{collector} seq {batch.seq}", record=repr(tuple(d))[:4000],
                    lost=f"I/O of {d.raw_id!r} on {d.target} in ({d.t0}, {d.t1}]")
                for (d, _), why in refused])
    return True


def _copy_halving(conn: psycopg.Connection, cur: psycopg.Cursor,
                  pairs: list[tuple[Delta, JobId]], targets: dict[str, int],
                  hosts: dict[str, int], refused: list) -> None:
    """COPY `pairs` under a savepoint; on a refusal, each half again, down to single rows."""
    if not pairs:
        return
    try:
        with conn.transaction():
            late = _copy(cur, pairs, targets, hosts)
            if late:  # cannot happen: every name was given an id above
                raise RuntimeError(f"no id for the target/host of {len(late)} rows")
    except RECORD_ERRORS as e:
        if len(pairs) == 1:
            refused.append((pairs[0], (str(e).strip().splitlines() or [type(e).__name__])[0]))
            return
        half = len(pairs) // 2
        _copy_halving(conn, cur, pairs[:half], targets, hosts, refused)
        _copy_halving(conn, cur, pairs[half:], targets, hosts, refused)
