"""Writing batches: exactly once, every column as the delta says, dimensions reused."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.rows import dict_row

from slurm_io.model import (
    OP_COUNTERS,
    Batch,
    ByteStats,
    Delta,
    DeltaFlag,
    IdClass,
    JobId,
)
from slurm_io.store import partitions
from slurm_io.store.rows import delta_columns, parse_target_name, to_row
from slurm_io.store.writer import write_batch

pytestmark = pytest.mark.pg

T1 = datetime(2024, 4, 2, 10, 0, tzinfo=UTC).timestamp()


def _delta(
    target: str = "scratch-OST0003",
    raw_id: str = "4242:1001:node17",
    *,
    samples: dict[str, int] | None = None,
    stats: dict[str, ByteStats] | None = None,
    t1: float = T1,
    last_update: float | None = None,
    flags: int = 0,
) -> Delta:
    return Delta(target, raw_id, raw_id, t1 - 60, t1, last_update,
                 samples if samples is not None else {"write": 1}, stats or {}, flags)


def _jid(job: int | None = 4242, uid: int | None = 1001, host: str | None = "node17",
         id_class: IdClass = IdClass.EXACT) -> JobId:
    return JobId(id_class, job, uid, host, None, False)


def _batch(deltas: list[tuple[Delta, JobId]], seq: int = 1, collector: str = "oss1") -> Batch:
    targets = tuple(sorted({d.target for d, _ in deltas}))
    return Batch(collector, seq, T1, targets, deltas, len(deltas) + 1, 1, 0, 0)


def _rows(conn: psycopg.Connection, sql: str = "SELECT * FROM jobstats_delta") -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(sql).fetchall()
    conn.commit()
    return rows


def test_a_batch_written_twice_is_stored_once(db_dsn: str) -> None:
    batch = _batch([(_delta(raw_id=f"{j}:1:n1"), _jid(job=j, host="n1")) for j in range(50)])
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, batch) is True
        assert write_batch(conn, batch) is False
    with psycopg.connect(db_dsn) as other:  # a retry from a new connection, as after a crash
        assert write_batch(other, batch) is False
        assert other.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (50,)
        ingest = _rows(other, "SELECT collector, seq, n_rows, n_entries, targets FROM ingest_batch")
    assert ingest == [{"collector": "oss1", "seq": 1, "n_rows": 50, "n_entries": 51,
                       "targets": ["scratch-OST0003"]}]


def test_same_seq_of_another_collector_is_a_different_batch(db_dsn: str) -> None:
    deltas = [(_delta(), _jid())]
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, _batch(deltas, seq=7, collector="oss1"))
        assert write_batch(conn, _batch(deltas, seq=7, collector="oss2"))
        assert conn.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (2,)


def test_row_holds_every_value_of_the_delta_and_null_for_zeros(db_dsn: str) -> None:
    write = ByteStats(samples=10, min=4096, max=1 << 20, sum=3_000_000,
                      sumsq=900_000_000_000_000, hist=(("4K", 4), ("64K", 0), ("1M", 6)))
    idle_read = ByteStats(samples=0, min=4096, max=4096, sum=0, sumsq=0, hist=None)
    delta = _delta(
        samples={"write_bytes": 10, "write": 10, "punch": 0, "setattr": 2, "brand_new_op": 5,
                 "another_new": 0},
        stats={"write_bytes": write, "read_bytes": idle_read},
        last_update=T1 - 5,
        flags=int(DeltaFlag.NEW | DeltaFlag.GAP),
    )
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, _batch([(delta, _jid())]))
        (row,) = _rows(conn)
        (target,) = _rows(conn, f"SELECT * FROM fs_target WHERE target_id = {row['target_id']}")
        (host,) = _rows(conn, f"SELECT name FROM host WHERE host_id = {row['host_id']}")
    assert row["ts_start"] == datetime.fromtimestamp(T1 - 60, UTC)
    assert row["ts_end"] == datetime.fromtimestamp(T1, UTC)
    assert row["last_update"] == datetime.fromtimestamp(T1 - 5, UTC)
    assert (row["id_class"], row["job"], row["uid"], row["raw_id"]) == (
        IdClass.EXACT, 4242, 1001, "4242:1001:node17",
    )
    assert row["flags"] == DeltaFlag.NEW | DeltaFlag.GAP
    assert host == {"name": "node17"}
    assert target == {"target_id": row["target_id"], "name": "scratch-OST0003",
                      "fs": "scratch", "kind": "OST", "idx": 3}
    assert (row["write_bytes"], row["write_bytes_samples"], row["write_bytes_min"],
            row["write_bytes_max"]) == (3_000_000, 10, 4096, 1 << 20)
    assert row["write_bytes_sumsq"] == pytest.approx(9e14)
    assert row["write_bytes_hist"] == {"4K": 4, "1M": 6}  # the bucket that did not move is left out
    read_group = [row[c] for c in delta_columns() if c.startswith("read_bytes")]
    assert read_group == [None] * 6
    assert (row["op_write"], row["op_setattr"], row["op_punch"]) == (10, 2, None)
    untouched = [f"op_{n}" for n in OP_COUNTERS if n not in ("write", "setattr")]
    assert [row[c] for c in untouched] == [None] * len(untouched)
    assert row["extra"] == {"brand_new_op": 5}


def test_ids_without_host_or_job_store_nulls(db_dsn: str) -> None:
    deltas = [
        (_delta(raw_id=":1001:node3"), _jid(job=None, host="node3", id_class=IdClass.JOB_MISSING)),
        (_delta(raw_id="python3.1001"), _jid(job=None, host=None, id_class=IdClass.EXE)),
    ]
    with psycopg.connect(db_dsn) as conn:
        write_batch(conn, _batch(deltas))
        rows = _rows(conn, "SELECT raw_id, id_class, job, uid, host_id IS NULL AS no_host "
                           "FROM jobstats_delta ORDER BY raw_id")
    assert rows == [
        {"raw_id": ":1001:node3", "id_class": IdClass.JOB_MISSING, "job": None, "uid": 1001,
         "no_host": False},
        {"raw_id": "python3.1001", "id_class": IdClass.EXE, "job": None, "uid": 1001,
         "no_host": True},
    ]


def test_copy_columns_are_exactly_the_table_columns(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        table = [name for (name,) in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'jobstats_delta'::regclass "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
        ).fetchall()]
    assert sorted(delta_columns()) == sorted(table)
    assert len(to_row(_delta(), _jid(), 1, 1)) == len(table)


def test_hosts_and_targets_are_stored_once_and_reused(db_dsn: str) -> None:
    def batch(seq: int) -> Batch:
        return _batch([
            (_delta("scratch-OST0001", f"{seq}:1:a"), _jid(job=seq, host="a")),
            (_delta("scratch-MDT0000", f"{seq}:1:b"), _jid(job=seq, host="b")),
        ], seq=seq)

    with psycopg.connect(db_dsn) as conn:
        write_batch(conn, batch(1))
        write_batch(conn, batch(2))
    with psycopg.connect(db_dsn) as fresh:  # empty cache: must find, not duplicate, the names
        write_batch(fresh, batch(3))
        hosts = fresh.execute("SELECT name FROM host ORDER BY name").fetchall()
        targets = fresh.execute("SELECT name, kind, idx FROM fs_target ORDER BY name").fetchall()
        per_host = fresh.execute(
            "SELECT h.name, count(DISTINCT d.host_id), count(*) FROM jobstats_delta d "
            "JOIN host h USING (host_id) GROUP BY h.name ORDER BY h.name"
        ).fetchall()
    assert hosts == [("a",), ("b",)]
    assert targets == [("scratch-MDT0000", "MDT", 0), ("scratch-OST0001", "OST", 1)]
    assert per_host == [("a", 1, 3), ("b", 1, 3)]


def test_a_refused_first_attempt_leaves_no_ids_behind_and_the_row_is_stored_cleaned(
        db_dsn: str) -> None:
    # The NUL byte makes PostgreSQL reject the COPY after the new host row was inserted in the
    # same transaction: the rollback removes that row, the careful second attempt stores the
    # id cleaned, and the next batch must not reuse an id the rollback took away.
    broken = _batch([(_delta(raw_id="1:1:new\x00host"), _jid(host="newhost"))], seq=1)
    good = _batch([(_delta(raw_id="1:1:newhost"), _jid(host="newhost"))], seq=2)
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, broken)
        assert write_batch(conn, good)
        rows = conn.execute(
            "SELECT d.raw_id, h.name FROM jobstats_delta d LEFT JOIN host h USING (host_id)"
            " ORDER BY 1").fetchall()
    assert rows == [("1:1:new\\x00host", "newhost"), ("1:1:newhost", "newhost")]


def test_a_partition_dropped_by_another_connection_is_recreated(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as writer, psycopg.connect(db_dsn) as pruner:
        assert write_batch(writer, _batch([(_delta(), _jid())], seq=1))
        assert partitions.partition_name(partitions.day_of(T1)) in prune(pruner, T1)
        assert write_batch(writer, _batch([(_delta(), _jid())], seq=2))
        assert writer.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (1,)


def prune(conn: psycopg.Connection, now: float) -> list[str]:
    """Drop every partition up to and including the days ahead of `now`."""
    return partitions.prune(conn, 0, now + 10 * 86400)


def test_partitions_exist_for_the_batch_days_and_ahead(db_dsn: str) -> None:
    day = 86400
    deltas = [(_delta(t1=T1), _jid()), (_delta(t1=T1 + 3 * day), _jid())]
    with psycopg.connect(db_dsn) as conn:
        write_batch(conn, _batch(deltas))
        days = sorted(partitions.existing_days(conn))
    first = partitions.day_of(T1)
    assert [(d - first).days for d in days] == [0, 3, 4, 5]


def test_a_row_on_a_day_the_first_and_last_rows_do_not_show_gets_its_partition(
    db_dsn: str,
) -> None:
    # The writer ensures the days of the first and last rows up front; the middle row's day
    # has no partition yet, so its COPY fails and the batch is retried with every day.
    day = 86400
    deltas = [(_delta(t1=T1, raw_id=f"{i}:1001:node17"), _jid()) for i in range(3)]
    deltas[1] = (_delta(t1=T1 + 5 * day, raw_id="late:1001:node17"), _jid())
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, _batch(deltas))
        days = sorted(partitions.existing_days(conn))
        stored = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()
        batches = conn.execute("SELECT count(*) FROM ingest_batch").fetchone()
    first = partitions.day_of(T1)
    assert stored == (3,) and batches == (1,)
    assert [(d - first).days for d in days] == [0, 1, 2, 5, 6, 7]


def test_rows_naming_new_hosts_and_targets_among_known_ones_are_all_written(
    db_dsn: str,
) -> None:
    known = [(_delta(raw_id=f"{i}:1:a"), _jid(job=i, host="a")) for i in range(3)]
    mixed = [
        (_delta(raw_id="10:1:a"), _jid(job=10, host="a")),
        (_delta(raw_id="11:1:b"), _jid(job=11, host="b")),  # new host
        (_delta("scratch-OST0007", raw_id="12:1:a"), _jid(job=12, host="a")),  # new target
        (_delta(raw_id="13:1:a"), _jid(job=13, host="a")),
    ]
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, _batch(known, seq=1))
        assert write_batch(conn, _batch(mixed, seq=2))
        rows = conn.execute(
            "SELECT d.job, h.name, t.name FROM jobstats_delta d JOIN host h USING (host_id) "
            "JOIN fs_target t USING (target_id) WHERE d.job >= 10 ORDER BY d.job"
        ).fetchall()
    assert rows == [(10, "a", "scratch-OST0003"), (11, "b", "scratch-OST0003"),
                    (12, "a", "scratch-OST0007"), (13, "a", "scratch-OST0003")]


def test_an_empty_batch_is_recorded(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        assert write_batch(conn, _batch([], seq=9))
        assert write_batch(conn, _batch([], seq=9)) is False
        assert conn.execute("SELECT n_rows FROM ingest_batch").fetchall() == [(0,)]


def test_write_batch_refuses_a_connection_inside_a_transaction(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT 1")
        with pytest.raises(ValueError, match="transaction"):
            write_batch(conn, _batch([(_delta(), _jid())]))


def test_to_row_keeps_samples_of_byte_counters_printed_without_statistics() -> None:
    row = dict(zip(delta_columns(), to_row(
        _delta(samples={"read_bytes": 3, "open": 0}, stats={}), _jid(), 5, None), strict=True))
    assert row["read_bytes_samples"] == 3
    assert row["read_bytes"] is None
    assert row["op_open"] is None
    assert row["extra"] is None
    assert (row["target_id"], row["host_id"], row["last_update"]) == (5, None, None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("scratch-OST0003", ("scratch", "OST", 3)),
        ("lustrefs-MDT0000", ("lustrefs", "MDT", 0)),
        ("fs-OST001a", ("fs", "OST", 26)),
        ("OST0001", ("", "OST", 1)),
        ("my-fs-OST0002", ("my-fs", "OST", 2)),
        ("scratch-MGS", ("", "OTHER", None)),
        ("scratch-OST", ("", "OTHER", None)),
        ("", ("", "OTHER", None)),
    ],
)
def test_target_names_give_fs_kind_and_hex_index(
    name: str, expected: tuple[str, str, int | None]
) -> None:
    assert parse_target_name(name) == expected
