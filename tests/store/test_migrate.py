"""Schema migrations: ordered, applied once, atomic per file, safe when run concurrently."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from slurm_io import paths
from slurm_io.store import migrate
from tests.concurrency import on_two_connections

pytestmark = pytest.mark.pg


def _tables(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchall()
    conn.commit()
    return {name for (name,) in rows}


def test_a_new_database_is_at_version_zero(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn) as conn:
        assert migrate.current_version(conn) == 0


def test_upgrade_applies_every_migration_once_and_records_it(empty_db_dsn: str) -> None:
    expected = migrate.available()
    assert expected, "the project has at least one migration"
    with psycopg.connect(empty_db_dsn) as conn:
        applied = migrate.upgrade(conn)
        assert applied == [m.name for m in expected]
        recorded = conn.execute(
            "SELECT version, name, applied_at IS NOT NULL FROM schema_migrations ORDER BY 1"
        ).fetchall()
        assert recorded == [(m.version, m.name, True) for m in expected]
        assert migrate.current_version(conn) == expected[-1].version
        assert {"fs_target", "host", "ingest_batch", "jobstats_delta"} <= _tables(conn)
        assert migrate.upgrade(conn) == []
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (
            len(expected),
        )


def test_upgrade_applies_only_migrations_newer_than_the_database(
    empty_db_dsn: str, tmp_path: Path
) -> None:
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a (x int);")
    with psycopg.connect(empty_db_dsn) as conn:
        assert migrate.upgrade(conn, tmp_path) == ["0001_a"]
        (tmp_path / "0002_b.sql").write_text(
            "CREATE TABLE b (x int);\nINSERT INTO a VALUES (1);  -- 100% plain SQL\n"
        )
        assert migrate.upgrade(conn, tmp_path) == ["0002_b"]
        assert conn.execute("SELECT x FROM a").fetchall() == [(1,)]
        assert migrate.current_version(conn) == 2


def test_a_failing_migration_leaves_no_trace_and_keeps_earlier_ones(
    empty_db_dsn: str, tmp_path: Path
) -> None:
    (tmp_path / "0001_ok.sql").write_text("CREATE TABLE ok_table (x int);")
    (tmp_path / "0002_bad.sql").write_text("CREATE TABLE half_made (x int);\nSELECT 1/0;")
    with psycopg.connect(empty_db_dsn) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            migrate.upgrade(conn, tmp_path)
        tables = _tables(conn)
        assert "ok_table" in tables
        assert "half_made" not in tables
        assert migrate.current_version(conn) == 1
        (tmp_path / "0002_bad.sql").write_text("CREATE TABLE half_made (x int);")
        assert migrate.upgrade(conn, tmp_path) == ["0002_bad"]


def test_concurrent_upgrades_apply_each_migration_exactly_once(
    empty_db_dsn: str, tmp_path: Path
) -> None:
    # A slow first migration widens the window in which both upgraders are inside upgrade().
    (tmp_path / "0001_slow.sql").write_text("SELECT pg_sleep(0.3); CREATE TABLE t1 (x int);")
    (tmp_path / "0002_next.sql").write_text("CREATE TABLE t2 (x int);")
    results = on_two_connections(empty_db_dsn, lambda conn: migrate.upgrade(conn, tmp_path))
    assert sorted(name for applied in results for name in applied) == ["0001_slow", "0002_next"]


def test_migration_files_are_ordered_by_number_and_duplicates_rejected(tmp_path: Path) -> None:
    for name in ("0010_late.sql", "0002_early.sql", "notes.sql", "0003_x.txt"):
        (tmp_path / name).write_text("SELECT 1;")
    assert [m.name for m in migrate.available(tmp_path)] == ["0002_early", "0010_late"]
    (tmp_path / "0002_again.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="duplicate migration version 2"):
        migrate.available(tmp_path)


def test_upgrade_refuses_a_connection_inside_a_transaction(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn) as conn:
        conn.execute("SELECT 1")
        with pytest.raises(ValueError, match="transaction"):
            migrate.upgrade(conn)


def test_sql_dir_is_the_source_tree_or_the_override(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert (paths.sql_dir() / "0001_core.sql").is_file()
    monkeypatch.setenv("SLURM_IO_SQL_DIR", str(tmp_path))
    assert paths.sql_dir() == tmp_path
    monkeypatch.setenv("SLURM_IO_SQL_DIR", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="SLURM_IO_SQL_DIR"):
        paths.sql_dir()
