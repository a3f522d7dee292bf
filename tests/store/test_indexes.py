"""jobstats_delta's indexes serve the queries that need them (sql/0001, 0007, 0008)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from slurm_io.attribute.sql import BY_PAIR_SQL as RECOVERED_SQL
from slurm_io.model import Batch, Delta, IdClass, JobId
from slurm_io.store import partitions
from slurm_io.store.writer import write_batch

pytestmark = pytest.mark.pg

T1 = datetime(2024, 4, 2, 10, 0, tzinfo=UTC).timestamp()


def _index_names(plan: Any) -> set[str]:
    """Every index an EXPLAIN (FORMAT JSON) plan reads."""
    names: set[str] = set()
    if isinstance(plan, dict):
        if "Index Name" in plan:
            names.add(plan["Index Name"])
        for value in plan.values():
            names |= _index_names(value)
    elif isinstance(plan, list):
        for item in plan:
            names |= _index_names(item)
    return names


def _pair(i: int, cls: IdClass, job: int | None) -> tuple[Delta, JobId]:
    raw = f"{job or ''}:{1000 + i % 3}:n{i % 5}"
    delta = Delta("scratch-OST0000", raw, raw, T1 - 60, T1, None, {"write": i + 1}, {}, 0)
    return delta, JobId(cls, job, 1000 + i % 3, f"n{i % 5}", None, False)


def test_host_index_holds_only_job_missing_rows(db_dsn: str) -> None:
    pairs = [_pair(i, IdClass.EXACT, 100 + i) for i in range(40)]
    pairs += [_pair(i, IdClass.JOB_MISSING, None) for i in range(7)]
    pairs += [_pair(i, IdClass.SYSTEM, None) for i in range(5)]
    part = partitions.partition_name(partitions.day_of(T1))
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, Batch("t", 1, T1, (), pairs, len(pairs), 0, 0, 0))
        conn.execute("ANALYZE jobstats_delta")  # counts index entries exactly for 52 rows
        entries = dict(conn.execute(
            "SELECT i.relname, i.reltuples::int FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = %s::regclass "
            "AND i.relam = (SELECT oid FROM pg_am WHERE amname = 'btree')", (part,),
        ).fetchall())
    assert entries == {f"{part}_job_ts_end_idx": 40, f"{part}_host_id_ts_end_uid_idx": 7}


def test_recovery_of_job_missing_deltas_reads_the_host_index(db_dsn: str) -> None:
    pairs = [_pair(i, IdClass.JOB_MISSING, None) for i in range(30)]
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, Batch("t", 1, T1, (), pairs, len(pairs), 0, 0, 0))
        conn.execute("SET enable_seqscan = off")  # a tiny table would be scanned otherwise
        t = datetime.fromtimestamp
        # the pairs (n1, 1001), (n2, 1001), each in (T1 - 3600, T1 + 60), ending before
        # T1 + 86400
        lo, hi = t(T1 - 3600, UTC), t(T1 + 60, UTC)
        params = {"nodes": ["n1", "n2"], "uids": [1001] * 2, "los": [lo] * 2,
                  "his": [hi] * 2, "margin": 86400 - 60, "glo": lo, "ghi": t(T1 + 86400, UTC)}
        ((plan,),) = conn.execute("EXPLAIN (FORMAT JSON) " + RECOVERED_SQL, params).fetchall()
        rows = conn.execute(RECOVERED_SQL, params).fetchall()
    assert any("host_id" in name for name in _index_names(plan))
    assert len(rows) == len([i for i in range(30) if i % 5 in (1, 2) and i % 3 == 1])
