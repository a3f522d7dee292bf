"""Retention tiers: raw deltas by whole days, stored results (job figures, hours, LASSi) kept
longer; `jobio db prune` run as a user would (the installed command)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from slurm_io.jobs.store import upsert_jobs
from slurm_io.model import JobRecord
from slurm_io.store import partitions

JOBIO = str(Path(sys.executable).parent / "jobio")
DAY = 86400.0


def jobio(*args: str, cfg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([JOBIO, "--config", str(cfg), *args], capture_output=True,
                          text=True, timeout=120)


def _job(job: int, end: float) -> JobRecord:
    return JobRecord(job, str(job), None, None, 1000, "u", "a", "p", "n", ("n1",), end - 120,
                     end - 100, end, "COMPLETED", "0:0", "/w", None, "sacct")


def key(conn, raw: int) -> int:
    """The row key of job `raw` (a surrogate since sql/0020)."""
    return conn.execute("SELECT job FROM job WHERE job_raw = %s", (raw,)).fetchone()[0]


def _seed(dsn: str, now: float) -> None:
    """An old job (400 days ago) and a recent one (2 days ago), each with stored figures,
    an hour row and LASSi hours; raw partitions of both days."""
    with psycopg.connect(dsn) as conn:
        upsert_jobs(conn, [_job(1, now - 400 * DAY), _job(2, now - 2 * DAY)])
        for t in (now - 400 * DAY, now - 2 * DAY):
            partitions.ensure_partitions(conn, t, t, ahead_days=0)
        for job, t in ((1, now - 400 * DAY), (2, now - 2 * DAY)):
            conn.execute(
                "INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                "by_target, by_node, timeline, quality) VALUES (%s, 1000, true, "
                "'{\"read_bytes\": 1}', '{}', '{}', '{}', '{}', '[]', '{}')", (key(conn, job),))
            conn.execute("INSERT INTO job_io_hour (job, hour, fs, kind, uid, totals, recovered)"
                         " VALUES (%s, to_timestamp(%s), 'fs', 'OST', 1000, '{}', '{}')",
                         (key(conn, job), t - t % 3600))
            conn.execute("INSERT INTO lassi_fs_hour (fs, hour, risk_oss, risk_mds, risks, "
                         "n_jobs) VALUES ('fs', to_timestamp(%s), 0, 0, '{}', 1)",
                         (t - t % 3600,))
        conn.commit()


def _count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_prune_keeps_results_after_the_raw_days_are_gone(db_dsn, tmp_path):
    now = time.time()
    _seed(db_dsn, now)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'dsn = "{db_dsn}"\n[retention]\nraw = "30d"\nresults = "3650d"\n')
    r = jobio("db", "prune", cfg=cfg)
    assert r.returncode == 0, r.stderr
    # the old day's partition went; every stored result stayed (3650 days)
    assert partitions.partition_name(partitions.day_of(now - 400 * DAY)) in r.stdout
    assert _count(db_dsn, "job_io") == 2 and _count(db_dsn, "job_io_hour") == 2
    assert _count(db_dsn, "lassi_fs_hour") == 2
    # finished jobs are still shown, from the stored figures
    out = jobio("show", "1", "--json", cfg=cfg)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["totals"] == {"read_bytes": 1}


def test_prune_deletes_results_past_their_own_retention(db_dsn, tmp_path):
    now = time.time()
    _seed(db_dsn, now)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'dsn = "{db_dsn}"\n')
    r = jobio("db", "prune", "--older-than", "30d", "--results-older-than", "365d", cfg=cfg)
    assert r.returncode == 0, r.stderr
    assert "lassi_fs_hour: 1 row(s) deleted" in r.stdout
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT job_raw FROM job_io JOIN job USING (job)").fetchall() == [(2,)]
        assert conn.execute("SELECT job_raw FROM job_io_hour JOIN job USING (job)"
                            ).fetchall() == [(2,)]
        assert conn.execute("SELECT count(*) FROM lassi_fs_hour").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM job").fetchone() == (2,)  # records stay


def test_a_bad_duration_is_one_line_and_a_non_zero_exit(db_dsn, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'dsn = "{db_dsn}"\n')
    r = jobio("db", "prune", "--results-older-than", "5 years", cfg=cfg)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "invalid duration" in r.stderr
