"""This release against the database's schema, compared at connect (migrate.check).

A database upgraded by a newer release (a fake future migration recorded in
schema_migrations, as that release would) is written to when the migration says older
writers may go on, refused in one line otherwise -- the collector then spools and loses
nothing; a database behind this release is told "run `jobio db upgrade`".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest

from slurm_io import __version__, paths
from slurm_io.simulate import simulate
from slurm_io.store import migrate
from tests.cli.installed import assert_one_line_error, jobio

pytestmark = pytest.mark.pg
START = 1_795_000_000.0
RELEASE = migrate.schema_version()


def _future(dsn: str, writers_from: int | None) -> int:
    """Record a migration this release does not ship, as a newer release would."""
    future = RELEASE + 1
    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name, writers_from) "
                     "VALUES (%s, %s, %s)", (future, f"{future:04d}_future", writers_from))
    return future


def _stored_rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()
    assert row is not None
    return int(row[0])


def _sim(tmp_path: Path) -> Path:
    sim = tmp_path / "sim"
    simulate(sim, seed=3, start=START, hours=0.5, n_nodes=4, n_oss=1, jobs_per_hour=12,
             outage=False)
    return sim


def _collect(dsn: str, tmp_path: Path, sim: Path):
    return jobio("--dsn", dsn, "--state-dir", str(tmp_path / "st"), "collect", "--from",
                 str(sim), env={"SLURM_IO_CONFIG": "/dev/null"}, drop=("SLURM_IO_DSN",))


def test_a_compatible_newer_schema_is_written(db_dsn: str, tmp_path: Path) -> None:
    future = _future(db_dsn, writers_from=RELEASE)  # e.g. a new table: older writers go on
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        assert migrate.check(conn) == migrate.SchemaState(future, RELEASE, RELEASE)
    proc = _collect(db_dsn, tmp_path, _sim(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "spool_depth=0" in proc.stdout
    assert _stored_rows(db_dsn) > 0
    usage = jobio("--dsn", db_dsn, "usage", "-S", "2026-11-18", "-E", "2026-11-19", "--json",
                  env={"SLURM_IO_CONFIG": "/dev/null"})
    assert usage.returncode == 0, usage.stderr
    assert json.loads(usage.stdout)["totals"]["read_bytes"] > 0
    up = jobio("--dsn", db_dsn, "db", "upgrade", env={"SLURM_IO_CONFIG": "/dev/null"})
    assert (up.returncode, up.stdout) == (0, f"schema at version {future} (nothing to do)\n")


def test_an_incompatible_newer_schema_is_refused_and_the_collector_spools(
        db_dsn: str, tmp_path: Path) -> None:
    future = _future(db_dsn, writers_from=None)  # no `-- writers-from:` line: breaking
    sim = _sim(tmp_path)
    proc = _collect(db_dsn, tmp_path, sim)
    assert proc.returncode == 3, proc.stderr  # the replay ended with batches spooled
    depth = int(proc.stdout.split("spool_depth=")[1].split()[0])
    assert depth > 0
    assert _stored_rows(db_dsn) == 0
    refusals = [line for line in proc.stderr.splitlines() if "upgrade slurm-io" in line]
    assert refusals, proc.stderr
    assert (f"the database's schema is at version {future}, newer than this jobio "
            f"{__version__} can write (its schema {RELEASE}; a release with schema {future} "
            f"or later can): upgrade slurm-io on this host") in refusals[0]
    assert "Traceback" not in proc.stderr
    # a command is refused in one line too, and so is this release's `db upgrade`
    for args in (["usage"], ["db", "upgrade"]):
        refused = jobio("--dsn", db_dsn, *args, env={"SLURM_IO_CONFIG": "/dev/null"})
        assert_one_line_error(refused, "newer than this jobio", "upgrade slurm-io on this host")
    # once the database is one this release can write (here: the future undone), the spool
    # drains: nothing was lost
    with psycopg.connect(db_dsn) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (future,))
    again = _collect(db_dsn, tmp_path, sim)
    assert again.returncode == 0, again.stderr
    assert "spool_depth=0" in again.stdout
    with psycopg.connect(db_dsn) as conn:
        stored = conn.execute("SELECT count(*), sum(read_bytes) FROM jobstats_delta").fetchone()
    truth = json.loads((sim / "truth.json").read_text())["totals"]["visible"]
    assert stored is not None and stored[0] > 0
    assert stored[1] == truth["read_bytes"]


def _older_database(dsn: str, tmp_path: Path) -> int:
    """`dsn` migrated with every migration but the newest: the previous release's schema."""
    older = tmp_path / "sql-older"
    older.mkdir()
    shipped = migrate.available()
    for m in shipped[:-1]:
        shutil.copy(m.path, older / m.path.name)
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn, older, settings={"jobio.cluster": "lab"})
    return shipped[-2].version


def test_an_older_schema_says_run_db_upgrade(empty_db_dsn: str, tmp_path: Path) -> None:
    previous = _older_database(empty_db_dsn, tmp_path)
    show = jobio("--dsn", empty_db_dsn, "4242", env={"SLURM_IO_CONFIG": "/dev/null"})
    line = assert_one_line_error(show, "run `jobio db upgrade`")
    assert (f"the database's schema is at version {previous}, this jobio {__version__} "
            f"needs {RELEASE}") in line
    # a role that may not upgrade it (a collector's) is told the same, not "permission denied"
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE jobio_collector")
        with pytest.raises(migrate.SchemaMismatch, match=r"run `jobio db upgrade`"):
            migrate.check(conn, upgrade_first=True)
    # the owner's `jobio db upgrade` brings it up to date; then it works
    up = jobio("--dsn", empty_db_dsn, "db", "upgrade", env={"SLURM_IO_CONFIG": "/dev/null"})
    assert up.returncode == 0, up.stderr
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        assert migrate.check(conn) == migrate.SchemaState(RELEASE, RELEASE, 0)
        recorded = conn.execute("SELECT writers_from FROM schema_migrations "
                                "WHERE version = %s", (RELEASE,)).fetchone()
    assert recorded == (migrate.available()[-1].writers_from(),)
    show = jobio("--dsn", empty_db_dsn, "4242", env={"SLURM_IO_CONFIG": "/dev/null"})
    assert_one_line_error(show, "job 4242: no such job")


def test_writers_from_is_read_from_the_migrations_header(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("-- a table\nCREATE TABLE a (x int);\n")
    (tmp_path / "0002_b.sql").write_text("-- an index: older writers go on\n"
                                         "-- writers-from: 1\nCREATE INDEX ON a (x);\n")
    a, b = migrate.available(tmp_path)
    assert (a.writers_from(), b.writers_from()) == (1, 1)
    assert migrate.schema_version(tmp_path) == 2
    assert migrate.schema_version() == migrate.available(paths.sql_dir())[-1].version
    assert migrate.mismatch(migrate.SchemaState(2, 2, 0), "x") is None
    assert migrate.mismatch(migrate.SchemaState(3, 2, 2), "x") is None
    assert "upgrade slurm-io" in (migrate.mismatch(migrate.SchemaState(3, 2, 3), "x") or "")
    assert "jobio db upgrade" in (migrate.mismatch(migrate.SchemaState(1, 2, 0), "x") or "")


def test_the_state_is_read_alike_from_empty_old_and_current_databases(
        empty_db_dsn: str) -> None:
    """read_state asks a current database in one pipelined round trip (start-up, issue 25)
    and falls back for the others: no table, a table from before writers_from, a role that
    may not read it. Each answers as before, and the connection is left usable."""
    with psycopg.connect(empty_db_dsn) as conn:  # not autocommit, as the commands connect
        assert migrate.read_state(conn) == migrate.SchemaState(0, RELEASE, 0)
        conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
                     "name text NOT NULL)")
        conn.execute("INSERT INTO schema_migrations VALUES (1, '0001_core'), (%s, 'future')",
                     (RELEASE + 1,))
        conn.commit()
        # no writers_from column: a newer migration recorded by such a release is breaking
        assert migrate.read_state(conn) == migrate.SchemaState(RELEASE + 1, RELEASE,
                                                                RELEASE + 1)
        conn.execute("ALTER TABLE schema_migrations ADD COLUMN writers_from integer")
        conn.execute("UPDATE schema_migrations SET writers_from = 1")
        conn.execute("DROP ROLE IF EXISTS jobio_test_noread")
        conn.execute("CREATE ROLE jobio_test_noread")
        conn.commit()
        assert migrate.read_state(conn) == migrate.SchemaState(RELEASE + 1, RELEASE, 1)
        conn.execute("SET ROLE jobio_test_noread")
        # unknown: taken as this release's (the queries will tell)
        assert migrate.read_state(conn) == migrate.SchemaState(RELEASE, RELEASE, 0)
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (2,)
        conn.rollback()
        conn.execute("DROP ROLE jobio_test_noread")
        conn.commit()
