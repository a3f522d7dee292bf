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

Partitions for the batch's days are ensured before the batch transaction, in their own
short transaction: partition DDL is idempotent and harmless if the batch then fails, and
this keeps its locks out of the (longer) COPY transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from weakref import WeakKeyDictionary

import psycopg
from psycopg import errors, pq, sql

from slurm_io.model import Batch
from slurm_io.store import partitions
from slurm_io.store.rows import delta_column_types, delta_columns, parse_target_name, to_row

AHEAD_DAYS = 2  # partitions created ahead of a batch's newest day

_COPY_SQL = sql.SQL("COPY jobstats_delta ({}) FROM STDIN (FORMAT BINARY)").format(
    sql.SQL(", ").join(sql.Identifier(c) for c in delta_columns())
)
_COPY_TYPES = delta_column_types()


@dataclass
class _Dimensions:
    """Committed name -> id maps of one connection."""

    targets: dict[str, int] = field(default_factory=dict)
    hosts: dict[str, int] = field(default_factory=dict)


_dimensions: WeakKeyDictionary[psycopg.Connection, _Dimensions] = WeakKeyDictionary()


def write_batch(conn: psycopg.Connection, batch: Batch) -> bool:
    """Write `batch` and commit; False (and nothing written) if it was already ingested.

    `conn` must have no transaction in progress: the commit here must not commit a caller's
    unrelated work, and exactly-once needs the ingest_batch row and the rows to share one
    transaction of their own. A missing partition (dropped by another process after this
    connection cached it) is repaired by one retry.
    """
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        raise ValueError("write_batch() needs a connection with no transaction in progress")
    try:
        return _write(conn, batch)
    except errors.CheckViolation:
        # "no partition of relation found for row": our cache was stale. The transaction
        # rolled back, so retrying from scratch is safe; a real check failure raises again.
        partitions.forget(conn)
        return _write(conn, batch)


def _batch_days(batch: Batch) -> set[date]:
    ends = {delta.t1 for delta, _ in batch.deltas}
    days = {partitions.day_of(t) for t in ends}
    if days:
        newest = max(days)
        days.update(newest + timedelta(days=i) for i in range(1, AHEAD_DAYS + 1))
    return days


def _write(conn: psycopg.Connection, batch: Batch) -> bool:
    dims = _dimensions.get(conn)
    if dims is None:
        dims = _dimensions[conn] = _Dimensions()
    partitions.ensure_days(conn, _batch_days(batch))

    with conn.transaction(), conn.cursor() as cur:
        cur.execute(
            """
            INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries,
                n_problems, n_repaired, n_unattributable, targets)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
            ON CONFLICT (collector, seq) DO NOTHING
            RETURNING 1
            """,
            (
                batch.collector, batch.seq, datetime.fromtimestamp(batch.read_time, UTC),
                len(batch.deltas), batch.n_entries, batch.n_problems, batch.n_repaired,
                batch.n_unattributable, list(batch.targets),
            ),
        )
        if cur.fetchone() is None:
            return False  # already ingested: the empty transaction just commits
        new_targets = _target_ids(cur, {d.target for d, _ in batch.deltas} - dims.targets.keys())
        new_hosts = _host_ids(
            cur, {j.host for _, j in batch.deltas if j.host} - dims.hosts.keys()
        )
        targets = dims.targets | new_targets if new_targets else dims.targets
        hosts = dims.hosts | new_hosts if new_hosts else dims.hosts
        if batch.deltas:
            host_id = hosts.get
            with cur.copy(_COPY_SQL) as copy:
                copy.set_types(_COPY_TYPES)
                write_row = copy.write_row
                for delta, jid in batch.deltas:
                    host = jid.host
                    write_row(
                        to_row(delta, jid, targets[delta.target], host_id(host) if host else None)
                    )
    # Committed: only now may the new ids enter the cache.
    dims.targets.update(new_targets)
    dims.hosts.update(new_hosts)
    return True


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


def _host_ids(cur: psycopg.Cursor, names: set[str | None]) -> dict[str, int]:
    """Ids of hosts not yet cached, inserting the unknown ones (sorted, as for targets)."""
    if not names:
        return {}
    ordered = sorted(n for n in names if n)
    cur.execute(
        "INSERT INTO host (name) SELECT unnest(%s::text[]) ON CONFLICT (name) DO NOTHING",
        (ordered,),
    )
    cur.execute("SELECT name, host_id FROM host WHERE name = ANY(%s)", (ordered,))
    return dict(cur.fetchall())
