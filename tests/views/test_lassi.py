"""LASSi metrics computed from the database: known answers of tests/views/data.py."""

from __future__ import annotations

import json
from datetime import date

import psycopg
import pytest
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.lassi import days as lassi_days
from slurm_io.lassi import sql as lassi_sql
from tests.views import data


def _job_hours(dsn: str) -> list[dict]:
    with psycopg.connect(dsn) as conn:
        return lassi_sql.job_hours(conn, data.DAY, data.DAY + 86400)


def test_the_storm_tops_risk_mds_every_hour(views_dsn):
    rows = _job_hours(views_dsn)
    hours = sorted({r["hour"] for r in rows if r["job"] == 101})
    assert hours == [data.T10, data.T10 + 3600]
    for h in hours:
        ranked = sorted((r for r in rows if r["hour"] == h), key=lambda r: -r["risk_mds"])
        assert ranked[0]["job"] == 101
        assert ranked[0]["risk_mds"] > 10
        assert {"open", "close", "getattr", "mkdir"} <= set(ranked[0]["risks"])
    # and the filesystem as a whole was at risk on the MDS side then
    with psycopg.connect(views_dsn) as conn:
        fs = lassi_sql.fs_hours(conn, data.DAY, data.DAY + 86400)
    storm = [r for r in fs if r["hour"] in hours]
    assert storm and all(r["risk_mds"] > 0 for r in storm)


def test_small_writes_have_write_kb_ops_256_and_streams_1(views_dsn):
    rows = {(r["job"], r["hour"]): r for r in _job_hours(views_dsn)}
    assert rows[(102, data.T10)]["write_kb_ops"] == pytest.approx(256)
    assert rows[(103, data.T10)]["write_kb_ops"] == pytest.approx(1)
    assert rows[(103, data.T10)]["read_kb_ops"] == pytest.approx(1)
    assert rows[(102, data.T10)]["read_kb_ops"] is None


def test_job_missing_deltas_go_to_the_job_by_attribution(views_dsn):
    rows = {(r["job"], r["hour"]): r for r in _job_hours(views_dsn)}
    # 30 reads an hour: 2 nodes x 20000 MiB + 1000 MiB of `:2003:n03` per read
    assert rows[(103, data.T10)]["write_kb"] == pytest.approx(30 * 41_000 * 1024)
    # frank's `:2006:n07` belongs to no job: not a job hour, but in the filesystem's
    with psycopg.connect(views_dsn) as conn:
        fs = {r["hour"]: r for r in lassi_sql.fs_hours(conn, data.DAY, data.DAY + 86400)}
    # bob's 4 KiB writes, carol's job, frank's load, gina's job
    assert fs[data.T10]["write_kb"] == pytest.approx(
        30 * (10_000 * 4 + 41_000 * 1024 + 500 * 1024 + 100 * 1024))


def test_baseline_comes_from_the_previous_day(views_dsn):
    with psycopg.connect(views_dsn) as conn:
        rows = conn.execute("SELECT day, baseline_hours, own_metrics, job_avg "
                            "FROM lassi_day ORDER BY day").fetchall()
    (d1, h1, own1, _), (d2, h2, own2, avg2) = rows
    assert (d1, d2) == (date(2026, 11, 17), date(2026, 11, 18))
    assert h1 == 0 and "open" in own1  # no history: the first day is its own baseline
    assert h2 == 2 and "open" not in own2  # 10:00-12:00 of the day before
    assert "read_kb" in own2  # nobody read on the day before
    # job 90 opened 500 per read, 15000 an hour; gina's job 91 600 an hour
    assert avg2["open"] == pytest.approx((15_000 * 2 + 300) / 3)


def test_compute_cli_and_show_hook(views_dsn):
    r = CliRunner().invoke(main, ["--dsn", views_dsn, "lassi", "compute", "--date",
                                  "2026-11-18"])
    assert r.exit_code == 0, r.output
    assert "2026-11-18:" in r.output and "job hours" in r.output
    r = CliRunner().invoke(main, ["--dsn", views_dsn, "show", "101", "--json"])
    assert r.exit_code == 0, r.output
    (j,) = json.loads(r.stdout)
    assert j["lassi"]["risk_mds_max"] > 10 and j["lassi"]["hours"] == 2
    assert j["lassi"]["fs"] == [data.FS]
    r = CliRunner().invoke(main, ["--dsn", views_dsn, "show", "102"])
    assert "LASSi (scratch, 2 h" in r.stdout
    with psycopg.connect(views_dsn) as conn:
        assert lassi_days.job_lassi(conn, 102).write_kb_ops == pytest.approx(256)
        assert lassi_days.job_lassi(conn, 999) is None


def test_users_see_the_lassi_hours_of_their_own_jobs_only(views_dsn):
    import os

    from psycopg import sql

    role = sql.Identifier(f"views_bob_{os.getpid()}")
    with psycopg.connect(views_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN IN ROLE jobio_user").format(role))
        try:
            conn.execute("INSERT INTO jobio_account (rolname, uid) VALUES (%s, 2002)",
                         (role.as_string(conn).strip('"'),))
            conn.execute(sql.SQL("SET ROLE {}").format(role))
            jobs = {r[0] for r in conn.execute("SELECT DISTINCT job FROM lassi_job_hour")}
            n_fs = conn.execute("SELECT count(*) FROM lassi_fs_hour").fetchone()[0]
            conn.execute("RESET ROLE")
        finally:
            conn.execute("RESET ROLE")
            conn.execute("DELETE FROM jobio_account WHERE rolname = %s",
                         (role.as_string(conn).strip('"'),))
            conn.execute(sql.SQL("DROP ROLE {}").format(role))
    assert jobs == {102}  # bob's job only
    assert n_fs > 0  # the filesystem-wide hours hold nobody's data: everyone sees them
