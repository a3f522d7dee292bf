"""One bad hook record never stops the others: the real hook spools what users' jobs left in
their environment, `jobio report-daemon --once` ingests the spool into PostgreSQL, and what
cannot be stored is quarantined (a `problem` row with the reason and the file's bytes, the
file renamed `.bad`) while every later job is recorded and queued in the same pass."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from slurm_io.notify import hook, hookspool
from tests.notify.conftest import (
    cli_env,
    fake_sacct,
    hook_env,
    queue_rows,
    run_hook,
    write_config,
    write_wrapper,
)

pytestmark = pytest.mark.pg

JOBIO = str(Path(sys.executable).with_name("jobio"))


def problem_rows(dsn: str) -> dict[str, tuple[str, bytes]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT origin, reason, record FROM problem "
                            "WHERE source = 'hook-spool'").fetchall()
    return {origin: (reason, bytes(record)) for origin, reason, record in rows}


def test_unstorable_hook_records_are_quarantined_and_the_jobs_after_them_are_reported(
        db_dsn, tmp_path):
    spool = tmp_path / "spool"
    # the hooks run while the database is unreachable for them: they only spool (db_timeout 0)
    wrapper = write_wrapper(tmp_path / "hook", write_config(
        tmp_path / "hook.toml", dsn="host=/nonexistent dbname=x", spool=spool, db_timeout=0))
    envs = {
        8001: hook_env(8001, SLURM_JOB_ACCOUNT="(null)"),
        8002: hook_env(8002, SLURM_JOB_NAME="x\udcffy"),  # sbatch -J $'x\xffy': a raw byte
        8003: hook_env(8003, SLURM_JOB_UID="4294967296"),
        8005: hook_env(8005),
    }
    for env in envs.values():
        proc, _ = run_hook(env, wrapper)
        assert proc.returncode == 0, proc.stderr
    assert len(hookspool.pending(str(spool))) == 4
    # a spool file written by something else: SLURM_JOB_ID in other digits, and no JSON
    hookspool.write_request(str(spool), 8004, hook_env(8004, SLURM_JOB_ID="²", SLURM_JOBID="²"),
                            hook_time=time.time(), host="ctld")
    (spool / "8006.json").write_bytes(b"{not json \xff")

    config = write_config(tmp_path / "c.toml", dsn=db_dsn, spool=spool)
    sacct = fake_sacct(tmp_path, [])  # nothing final yet: the jobs wait, nothing is mailed
    proc = subprocess.run([JOBIO, "report-daemon", "--once", "--sweep-every", "0",
                           "--sacct", str(sacct)], env=cli_env(config), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "ingested=3 bad_spool=3" in proc.stdout

    assert sorted(queue_rows(db_dsn)) == [8001, 8002, 8005]
    with psycopg.connect(db_dsn) as conn:
        rows = dict(conn.execute("SELECT job_raw, (name, account) FROM job").fetchall())
    assert rows[8002] == ("x\\xffy", "research")
    assert rows[8001] == ("srun_direct", None)  # Slurm's (null) is no account
    assert hookspool.pending(str(spool)) == []
    assert sorted(Path(p).name for p in hookspool.bad_files(str(spool))) == [
        "8003.json.bad", "8004.json.bad", "8006.json.bad"]
    problems = problem_rows(db_dsn)
    assert sorted(problems) == ["8003.json", "8004.json", "8006.json"]
    assert "SLURM_JOB_UID 4294967296 is out of range" in problems["8003.json"][0]
    assert "SLURM_JOB_ID '²' is not a number" in problems["8004.json"][0]
    assert "not JSON" in problems["8006.json"][0]
    assert problems["8006.json"][1] == b"{not json \xff"
    assert json.loads(problems["8003.json"][1])["env"]["SLURM_JOB_UID"] == "4294967296"

    again = subprocess.run([JOBIO, "report-daemon", "--once", "--sweep-every", "0",
                            "--sacct", str(sacct)], env=cli_env(config), capture_output=True,
                           text=True, timeout=120, check=False)
    assert again.returncode == 0 and "bad_spool=0" in again.stdout
    assert len(problem_rows(db_dsn)) == 3  # a quarantined file is not taken again


def test_the_hooks_own_child_quarantines_a_bad_record_and_stores_the_next(db_dsn, tmp_path):
    spool = tmp_path / "spool"
    hookspool.write_request(str(spool), 8101, hook_env(8101, SLURM_JOB_UID="2147483648"),
                            hook_time=time.time(), host="ctld")
    config = write_config(tmp_path / "c.toml", dsn=db_dsn, spool=spool)
    wrapper = write_wrapper(tmp_path / "hook", config)
    proc, _ = run_hook(hook_env(8102), wrapper)
    assert proc.returncode == 0
    deadline = time.monotonic() + 30
    while 8102 not in queue_rows(db_dsn) or hookspool.pending(str(spool)):
        assert time.monotonic() < deadline, "the hook's child did not get past the bad file"
        time.sleep(0.05)
    assert "uid columns (integer) cannot hold" in problem_rows(db_dsn)["8101.json"][0]


def test_a_job_id_in_other_digits_is_no_job_for_the_hook(tmp_path, monkeypatch):
    spool = tmp_path / "spool"
    monkeypatch.setenv(hook.CONFIG_ENV, str(write_config(tmp_path / "c.toml", dsn=None,
                                                         spool=spool, db_timeout=0)))
    # int('٣') == 3: the old check spooled it as job 3, another user's job
    assert hook.run(hook_env(0, SLURM_JOB_ID="٣", SLURM_JOBID="٣"), fork=False) == "ignored"
    assert hook.run(hook_env(0, SLURM_JOB_ID="²", SLURM_JOBID="²"), fork=False) == "ignored"
    assert hookspool.pending(str(spool)) == []


def test_a_record_that_could_not_be_spooled_and_cannot_be_stored_is_quarantined(
        db_dsn, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spool directory should be")
    wrapper = write_wrapper(tmp_path / "hook", write_config(tmp_path / "c.toml", dsn=db_dsn,
                                                             spool=blocker / "spool"))
    proc, _ = run_hook(hook_env(8201, SLURM_JOB_UID="4294967296"), wrapper)
    assert proc.returncode == 0 and "cannot spool" in proc.stderr
    deadline = time.monotonic() + 30
    while True:
        with psycopg.connect(db_dsn) as conn:
            row = conn.execute("SELECT reason, record FROM problem "
                               "WHERE source = 'hook-env'").fetchone()
        if row is not None:
            break
        assert time.monotonic() < deadline, "no quarantine row from the hook's child"
        time.sleep(0.05)
    assert "SLURM_JOB_UID 4294967296 is out of range" in row[0]
    assert json.loads(bytes(row[1]))["SLURM_JOB_ID"] == "8201"
