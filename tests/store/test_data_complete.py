"""jobio_data_complete_until(): the oldest of the collectors' newest read times, from an index
(sql/0018) -- the same value as the plain aggregate it replaced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from slurm_io.attribute.stored import data_complete_until

pytestmark = [pytest.mark.pg]
T0 = datetime(2026, 3, 1, tzinfo=UTC)
AGGREGATE = ("SELECT extract(epoch FROM min(last))::float8 FROM (SELECT max(read_time) AS last "
             "FROM ingest_batch GROUP BY collector) c")


def _batches(conn: psycopg.Connection, collector: str, minutes: list[int]) -> None:
    for seq, m in enumerate(minutes, start=1):
        conn.execute("INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, "
                     "n_problems, n_repaired, n_unattributable, targets) "
                     "VALUES (%s, %s, %s, 0, 0, 0, 0, 0, '{}')",
                     (collector, seq, T0 + timedelta(minutes=m)))


def test_no_collector_yet_means_no_time(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        assert data_complete_until(conn) is None
        assert conn.execute(AGGREGATE).fetchone()[0] is None


def test_the_slowest_collector_sets_the_time_also_when_its_clock_went_back(
        db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        _batches(conn, "mds1", [2, 4, 6, 8])
        _batches(conn, "oss1", [2, 4, 30, 5])  # a later batch with an earlier read time
        _batches(conn, "oss2", [1, 3, 7])
        _batches(conn, "oss10", [20])
        got = data_complete_until(conn)
        assert got == conn.execute(AGGREGATE).fetchone()[0]
        assert got == (T0 + timedelta(minutes=7)).timestamp()


def test_the_index_answers_the_question(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        _batches(conn, "oss1", list(range(2000)))
        conn.execute("ANALYZE ingest_batch")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT b.read_time FROM ingest_batch b WHERE b.collector = 'oss1' "
            "ORDER BY b.read_time DESC LIMIT 1"))
        assert "ingest_batch_collector_read_time" in plan
