"""An index of jobstats_delta created `ON ONLY` by a migration is built partition by partition,
CONCURRENTLY, by `upgrade` after the migration committed (store/online_index.py), and an
interrupted build is finished by the next upgrade."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import psycopg
import pytest

from slurm_io import paths
from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId
from slurm_io.store import migrate, online_index, partitions
from slurm_io.store.writer import write_batch

pytestmark = pytest.mark.pg

DAY = 86400.0
T = 1_790_000_000.0  # 2026-09-21
INDEX_SQL = "CREATE INDEX test_uid_idx ON ONLY jobstats_delta (uid) WHERE uid IS NOT NULL;\n"


def _rows(conn: psycopg.Connection, days: int) -> None:
    """A batch per day, so that `days` partitions hold rows."""
    for k in range(days):
        t = T + k * DAY
        st = ByteStats(1, 4096, 4096, 4096, None, None)
        pairs = [(Delta("scratch-OST0000", f"{7 + i}:{1000 + i}:n{i}", f"{7 + i}:{1000 + i}:n{i}",
                        t - 120, t, t, {"write_bytes": 1}, {"write_bytes": st}, 0),
                  JobId(IdClass.EXACT, 7 + i, 1000 + i, f"n{i}", None, False))
                 for i in range(50)]
        write_batch(conn, Batch("oss1", k + 1, t, ("scratch-OST0000",), pairs, 50, 0, 0, 0))


def _migrations_with(tmp_path: Path, text: str) -> Path:
    """The project's migrations and one more, 9001_test_index.sql."""
    directory = tmp_path / "sql"
    shutil.copytree(paths.sql_dir(), directory)
    (directory / "9001_test_index.sql").write_text(text)
    return directory


def _children(conn: psycopg.Connection, index: str) -> dict[str, str]:
    """partition -> its index attached to `index`."""
    return {r[0]: r[1] for r in conn.execute(
        "SELECT x.indrelid::regclass::text, x.indexrelid::regclass::text FROM pg_inherits i "
        "JOIN pg_index x ON x.indexrelid = i.inhrelid WHERE i.inhparent = %s::regclass",
        (index,))}


def _partitions(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT inhrelid::regclass::text FROM pg_inherits "
        "WHERE inhparent = 'jobstats_delta'::regclass")}


def _valid(conn: psycopg.Connection, index: str) -> bool:
    row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass",
                       (index,)).fetchone()
    return bool(row and row[0])


def test_an_on_only_index_is_built_on_every_partition_by_upgrade(
        db_dsn: str, tmp_path: Path) -> None:
    directory = _migrations_with(tmp_path, INDEX_SQL)
    with psycopg.connect(db_dsn) as conn:
        _rows(conn, 3)
        assert migrate.upgrade(conn, directory) == ["9001_test_index"]
        assert _valid(conn, "test_uid_idx")
        assert set(_children(conn, "test_uid_idx")) == _partitions(conn)
        assert online_index.pending(conn) == []
        # the index answers a query of its predicate
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT count(*) FROM jobstats_delta WHERE uid = 1003"))
        assert "test_uid_idx" in plan or "uid_idx" in plan
        assert conn.execute("SELECT count(*) FROM jobstats_delta WHERE uid = 1003"
                            ).fetchone() == (3,)
        conn.rollback()
        # a partition made later gets its index from PostgreSQL at ATTACH
        partitions.ensure_days(conn, {date(2026, 12, 1)})
        assert "jobstats_delta_p20261201" in _children(conn, "test_uid_idx")
        conn.commit()
        assert migrate.upgrade(conn, directory) == []


def test_an_interrupted_build_is_finished_by_the_next_upgrade(
        db_dsn: str, tmp_path: Path) -> None:
    """The migration committed but the build stopped: one partition has a valid matching
    index made by hand (attached as it is), another the invalid leftover of a failed
    CONCURRENTLY build (dropped and built again); the next upgrade, with nothing left to
    migrate, completes the index."""
    directory = _migrations_with(tmp_path, INDEX_SQL)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        _rows(conn, 3)
        with conn.transaction():  # what upgrade() commits before it builds anything
            conn.execute(INDEX_SQL)
            conn.execute("INSERT INTO schema_migrations (version, name, writers_from) "
                         "VALUES (9001, '9001_test_index', 9001)")
        assert [p.index for p in online_index.pending(conn)] == ["test_uid_idx"]
        assert not _valid(conn, "test_uid_idx")
        first, second, *_ = sorted(p for p in _partitions(conn)
                                   if conn.execute(f"SELECT EXISTS (SELECT FROM {p})"
                                                   ).fetchone() == (True,))
        conn.execute(f"CREATE INDEX kept_by_hand ON {first} (uid) WHERE uid IS NOT NULL")
        # a unique build fails on a duplicated row, leaving an invalid index behind, as an
        # interrupted CONCURRENTLY build does
        conn.execute(f"INSERT INTO {second} SELECT * FROM {second} LIMIT 1")
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(f"CREATE UNIQUE INDEX CONCURRENTLY broken ON {second} (uid) "
                         "WHERE uid IS NOT NULL")
        assert not _valid(conn, "broken")

        assert migrate.upgrade(conn, directory) == []
        assert _valid(conn, "test_uid_idx")
        children = _children(conn, "test_uid_idx")
        assert set(children) == _partitions(conn)
        assert children[first] == "kept_by_hand"
        assert conn.execute("SELECT to_regclass('broken')").fetchone() == (None,)


def test_a_role_that_may_not_build_indexes_leaves_them_to_the_owner(
        db_dsn: str, tmp_path: Path) -> None:
    """A writer that calls upgrade (the commands that upgrade first) while an index is still
    to be built is not failed by it: the owner's next `jobio db upgrade` builds it."""
    directory = _migrations_with(tmp_path, INDEX_SQL)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        _rows(conn, 2)
        with conn.transaction():
            conn.execute(INDEX_SQL)
            conn.execute("INSERT INTO schema_migrations (version, name, writers_from) "
                         "VALUES (9001, '9001_test_index', 9001)")
        conn.execute("SET ROLE jobio_collector")
        assert migrate.upgrade(conn, directory) == []
        conn.execute("RESET ROLE")
        assert not _valid(conn, "test_uid_idx")
        assert migrate.upgrade(conn, directory) == []
        assert _valid(conn, "test_uid_idx")


def test_upgrade_reports_each_migration_and_each_partition_build_as_it_goes(
        db_dsn: str, tmp_path: Path) -> None:
    """On a site's data the builds take long: the admin is told of each one as it ends."""
    directory = _migrations_with(tmp_path, INDEX_SQL)
    steps: list[str] = []
    with psycopg.connect(db_dsn) as conn:
        _rows(conn, 2)
        assert migrate.upgrade(conn, directory, progress=steps.append) == ["9001_test_index"]
        parts = _partitions(conn)
    assert steps[:2] == ["applying 9001_test_index", "applied 9001_test_index"]
    built = [s for s in steps[2:] if s.startswith("index test_uid_idx: partition ")]
    assert len(built) == len(parts) == len(steps) - 2
    assert {s.split()[3] for s in built} == parts
    assert built[-1].split("(")[1].startswith(f"{len(parts)}/{len(parts)},")
