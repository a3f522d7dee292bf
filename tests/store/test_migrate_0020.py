"""sql/0020 upgrades a database with jobs and stored results without losing any."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from slurm_io import paths
from slurm_io.store import migrate

pytestmark = pytest.mark.pg


def test_a_database_at_0019_keeps_its_jobs_and_results_under_the_configured_cluster(
        empty_db_dsn: str, tmp_path: Path) -> None:
    old = tmp_path / "sql"
    old.mkdir()
    for m in migrate.available():
        if m.version <= 19:
            shutil.copy(m.path, old / m.path.name)
    with psycopg.connect(empty_db_dsn) as conn:
        migrate.upgrade(conn, old)
        assert migrate.current_version(conn) == 19
        conn.execute("INSERT INTO host (name) VALUES ('n1'), ('n2')")
        for job, node in ((5, "n1"), (6, "n2")):
            conn.execute("INSERT INTO job (job, jobid, uid, nodes, start_time, end_time, source) "
                         "VALUES (%s, %s, 1000, %s, now() - interval '1 hour', now(), 'sacct')",
                         (job, str(job), [node]))
            conn.execute("INSERT INTO job_node (host_id, job, uid) SELECT host_id, %s, 1000 "
                         "FROM host WHERE name = %s", (job, node))
            conn.execute("INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                         "by_target, by_node, timeline, quality) VALUES (%s, 1000, true, "
                         "%s, '{}', '{}', '{}', '{}', '[]', '{}')",
                         (job, f'{{"read_bytes": {job}}}'))
        conn.commit()
        applied = migrate.upgrade(conn, paths.sql_dir(), settings={"jobio.cluster": "lab"})
        assert "0020_job_cluster_run" in applied
        rows = conn.execute(
            "SELECT j.job, j.job_raw, j.cluster, j.run, io.totals FROM job j "
            "JOIN job_io io USING (job) ORDER BY j.job").fetchall()
        assert rows == [(5, 5, "lab", 0, {"read_bytes": 5}), (6, 6, "lab", 0, {"read_bytes": 6})]
        assert conn.execute("SELECT count(*) FROM job_node").fetchone() == (2,)
        assert sorted(conn.execute("SELECT c.cluster, h.name FROM cluster_host c "
                                   "JOIN host h USING (host_id)").fetchall()) == [
            ("lab", "n1"), ("lab", "n2")]
        # a new job's key cannot pass for a raw id
        (key,) = conn.execute("INSERT INTO job (cluster, job_raw, jobid, source) "
                              "VALUES ('lab', 7, '7', 'sacct') RETURNING job").fetchone()
        assert key >= 2**32


def test_without_a_configured_cluster_existing_jobs_get_default(empty_db_dsn: str,
                                                               tmp_path: Path) -> None:
    old = tmp_path / "sql"
    old.mkdir()
    for m in migrate.available():
        if m.version <= 19:
            shutil.copy(m.path, old / m.path.name)
    with psycopg.connect(empty_db_dsn) as conn:
        migrate.upgrade(conn, old)
        conn.execute("INSERT INTO job (job, jobid, source) VALUES (9, '9', 'sacct')")
        conn.commit()
        migrate.upgrade(conn)
        assert conn.execute("SELECT cluster, job_raw FROM job").fetchall() == [("default", 9)]
