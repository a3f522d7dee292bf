"""The local spool: durable files in replay order, and lossless replay across an outage."""

from __future__ import annotations

import logging
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId
from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from slurm_io.store.spool import Spool
from slurm_io.store.writer import write_batch
from tests import needs

T1 = datetime(2024, 4, 2, 10, 0, tzinfo=UTC).timestamp()
LOG = logging.getLogger("test_spool")


def _batch(seq: int, collector: str = "oss1", n: int = 3) -> Batch:
    stats = ByteStats(2, 4096, 8192, 12288, 83886080, (("4K", 1), ("8K", 1)))
    deltas = [
        (
            Delta("scratch-OST0000", f"{seq}:{i}:n{i}", f"{seq}:{i}:n{i}", T1 - 60 + seq, T1 + seq,
                  None, {"write_bytes": 2, "open": i + 1}, {"write_bytes": stats}, 0),
            JobId(IdClass.EXACT, seq, i, f"n{i}", None, False),
        )
        for i in range(n)
    ]
    return Batch(collector, seq, T1 + seq, ("scratch-OST0000",), deltas, n, 0, 0, 0)


def test_put_stores_a_private_file_that_loads_back_equal(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    batch = _batch(5)
    path = spool.put(batch)
    assert path.name == "oss1.000000000005.batch"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(spool.dir.stat().st_mode) == 0o700
    assert spool.load(path) == batch
    assert [p.name for p in spool.dir.iterdir()] == [path.name]  # no temp file left


def test_pending_is_ordered_by_collector_then_numeric_seq(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for collector, seq in [("oss2", 1), ("oss1", 10), ("oss1", 9), ("oss1", 100), ("mds.a", 3)]:
        spool.put(_batch(seq, collector))
    (tmp_path / ".oss1.000000000011.batch.123.tmp").write_bytes(b"half")
    (tmp_path / "README").write_text("not a batch")
    assert [p.name for p in spool.pending()] == [
        "mds.a.000000000003.batch", "oss1.000000000009.batch", "oss1.000000000010.batch",
        "oss1.000000000100.batch", "oss2.000000000001.batch",
    ]
    assert [p.name for p in spool.pending("oss2")] == ["oss2.000000000001.batch"]
    assert spool.depth() == 5


def test_discard_after_drops_only_later_batches_of_that_collector(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for seq in (1, 2, 3, 4):
        spool.put(_batch(seq, "oss1"))
    spool.put(_batch(9, "oss2"))
    dead_writer_tmp = tmp_path / ".oss1.000000000005.batch.999999999.tmp"
    dead_writer_tmp.write_bytes(b"partial")
    assert spool.discard_after("oss1", 2) == 2
    assert [p.name for p in spool.pending()] == [
        "oss1.000000000001.batch", "oss1.000000000002.batch", "oss2.000000000009.batch",
    ]
    assert not dead_writer_tmp.exists()
    assert spool.discard_after("oss1", 2) == 0


def test_put_rejects_collector_names_that_cannot_name_a_file(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for bad in ("", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="collector"):
            spool.put(_batch(1, bad))
    assert spool.depth() == 0


@needs.root("needs root to hand the directory to another user")
def test_a_spool_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, 65534, 65534)
    with pytest.raises(PermissionError, match="uid 65534"):
        Spool(foreign)


@pytest.mark.pg
def test_flush_survives_an_outage_and_delivers_every_batch_once(
    pg_tmp_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = EmbeddedPostgres(pg_tmp_path / "state")
    dsn = server.ensure()
    try:
        with psycopg.connect(dsn) as conn:
            migrate.upgrade(conn)
            # Batch 1 reached the database but its file was not removed (crash in between).
            assert write_batch(conn, _batch(1))
        spool = Spool(tmp_path / "spool")
        spool.put(_batch(1))
        server.stop()
        for seq in (2, 3, 4):
            spool.put(_batch(seq))

        with caplog.at_level(logging.WARNING, logger=LOG.name):
            assert spool.flush(lambda: psycopg.connect(dsn, connect_timeout=5), log=LOG) == (
                0, 4,
            )
        assert "unavailable" in caplog.text
        assert spool.depth() == 4

        server.start()
        assert spool.flush(lambda: psycopg.connect(dsn), log=LOG) == (3, 0)
        assert spool.flush(lambda: psycopg.connect(dsn), log=LOG) == (0, 0)
        with psycopg.connect(dsn) as conn:
            per_batch = conn.execute(
                "SELECT seq, n_rows FROM ingest_batch ORDER BY seq"
            ).fetchall()
            per_job = conn.execute(
                "SELECT job, count(*) FROM jobstats_delta GROUP BY job ORDER BY job"
            ).fetchall()
        assert per_batch == [(1, 3), (2, 3), (3, 3), (4, 3)]
        assert per_job == [(1, 3), (2, 3), (3, 3), (4, 3)]
    finally:
        server.stop()


@pytest.mark.pg
def test_an_unreadable_file_is_set_aside_and_the_rest_delivered(
    db_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(tmp_path)
    spool.put(_batch(1))
    (tmp_path / "oss1.000000000002.batch").write_bytes(b"\x80\x05garbage")
    spool.put(_batch(3))
    with caplog.at_level(logging.ERROR, logger=LOG.name):
        assert spool.flush(lambda: psycopg.connect(db_dsn), log=LOG) == (2, 0)
    assert (tmp_path / "quarantine" / "oss1.000000000002.batch").exists()
    assert "oss1.000000000002.batch" in caplog.text
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT array_agg(seq ORDER BY seq) FROM ingest_batch").fetchone() == (
            [1, 3],
        )
        (source, lost, record), = conn.execute("SELECT source, lost, record FROM problem")
    assert source == "batch" and lost and bytes(record) == b"\x80\x05garbage"


@pytest.mark.pg
def test_a_database_error_keeps_the_batch_spooled_without_raising(
    empty_db_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(tmp_path)
    spool.put(_batch(1))
    # A database without the schema: not an outage, but the batch must not be lost either.
    with caplog.at_level(logging.ERROR, logger=LOG.name):
        assert spool.flush(lambda: psycopg.connect(empty_db_dsn), log=LOG) == (0, 1)
    assert "oss1.000000000001.batch" in caplog.text
    assert spool.load(spool.pending()[0]) == _batch(1)
