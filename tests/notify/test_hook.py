"""The job-end hook: environment -> job row + queue row; the database down -> a spool file;
garbage of every kind -> exit 0. The hook runs as slurmctld runs it (a subprocess with only
SLURM_* variables, through the wrapper docs/hook.md describes) or in-process without its
fork where a test looks at the database right after it."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from slurm_io.notify import hook, hookspool
from tests.notify.conftest import (
    HOOK,
    hook_env,
    queue_rows,
    run_hook,
    wait_until,
    write_config,
    write_wrapper,
)
from tests.shared import SHARED

SHARED_DUMPS = SHARED / "fixtures" / "slurm" / "22.05" / "dumps"
UNREACHABLE = "host=/nonexistent/slurm-io-socket-dir dbname=slurmio connect_timeout=2"


def _job_row(dsn: str, job: int) -> tuple | None:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT user_name, uid, nodes, exit_code, source, name "
                            "FROM job WHERE job_raw = %s", (job,)).fetchone()


def _show_times(capsys: pytest.CaptureFixture[str], label: str, times: list[float]) -> None:
    with capsys.disabled():
        print(f"\n[hook wall time, {label}] n={len(times)} min {min(times):.0f} ms, "
              f"median {statistics.median(times):.0f} ms, max {max(times):.0f} ms")


def test_the_environment_becomes_a_job_row_and_one_queue_row(db_dsn, tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "c.toml", dsn=db_dsn, spool=tmp_path / "spool")
    monkeypatch.setenv("SLURM_IO_CONFIG", str(cfg))
    env = hook_env(4711, SLURM_JOB_EXIT_CODE="768", SLURM_JOB_EXIT_CODE2="3:0")
    assert hook.run(env, fork=False) == "spooled+db"
    assert _job_row(db_dsn, 4711) == ("alice", 1002, ["node03", "node04"], "3:0", "hook",
                                      "srun_direct")
    rows = queue_rows(db_dsn)
    assert list(rows) == [4711]
    assert rows[4711]["state"] == "queued" and rows[4711]["source"] == "hook"
    assert hookspool.pending(str(tmp_path / "spool")) == []
    # the hook running again for the job (requeued, or twice by mistake): still one row
    assert hook.run(env, fork=False) == "spooled+db"
    assert list(queue_rows(db_dsn)) == [4711]


def test_as_a_subprocess_with_only_slurm_variables_it_records_in_the_background(
        db_dsn, tmp_path, capsys):
    spool = tmp_path / "spool"
    wrapper = write_wrapper(tmp_path / "hook", write_config(tmp_path / "c.toml", dsn=db_dsn,
                                                             spool=spool))
    envs = [hook_env(5000 + i) for i in range(8)]
    if SHARED_DUMPS.is_dir():  # the real hook environments of a Slurm 22.05, when present
        for i, f in enumerate(sorted(SHARED_DUMPS.glob("epilog_slurmctld.*.env"))):
            env = dict(line.split("=", 1) for line in f.read_text().splitlines()
                       if line.startswith("SLURM_") and "=" in line)
            envs.append({**env, "SLURM_JOB_ID": str(6000 + i)})
    times = []
    for env in envs:
        proc, ms = run_hook(env, wrapper)
        assert proc.returncode == 0, proc.stderr
        times.append(ms)
    _show_times(capsys, "database up, background insert", times)
    jobs = {int(e["SLURM_JOB_ID"]) for e in envs}
    wait_until(lambda: set(queue_rows(db_dsn)) == jobs, what="queue rows of every hook run")
    wait_until(lambda: not hookspool.pending(str(spool)), what="the spool to be drained")
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM job WHERE source = 'hook'").fetchone() == (
            len(jobs),)


def test_database_down_leaves_a_durable_spool_file_and_exits_0(tmp_path, capsys):
    spool = tmp_path / "spool"
    wrapper = write_wrapper(tmp_path / "hook", write_config(
        tmp_path / "c.toml", dsn=UNREACHABLE, spool=spool, db_timeout=3))
    times = []
    for job in (7001, 7002, 7003, 7004, 7005):
        proc, ms = run_hook(hook_env(job), wrapper)
        assert proc.returncode == 0
        times.append(ms)
    _show_times(capsys, "database unreachable", times)
    files = hookspool.pending(str(spool))
    assert [Path(f).name for f in files] == [f"{j}.json" for j in range(7001, 7006)]
    data = hookspool.load_request(files[0])
    assert data["env"]["SLURM_JOB_ID"] == "7001" and data["job"] == 7001
    assert set(data["env"]) == set(hook_env(7001))  # SLURM_* only, nothing of the wrapper
    assert abs(data["hook_time"] - time.time()) < 60
    time.sleep(0.5)  # the background attempts fail and leave the files alone
    assert len(hookspool.pending(str(spool))) == 5


@pytest.mark.parametrize("env", [
    {},
    {"SLURM_JOB_ID": ""},
    {"SLURM_JOB_ID": "abc"},
    {"SLURM_JOB_ID": "12; rm -rf /"},
    {"SLURM_JOB_ID": "-5"},
    {"SLURM_JOB_ID": "10", "SLURM_SCRIPT_CONTEXT": "prolog_slurmctld"},
    {"SLURM_JOB_ID": "\udcff"},
], ids=["empty", "blank", "letters", "injection", "negative", "prolog", "undecodable"])
def test_garbage_environments_exit_0_and_spool_nothing(tmp_path, env):
    spool = tmp_path / "spool"
    wrapper = write_wrapper(tmp_path / "hook", write_config(tmp_path / "c.toml",
                                                             dsn=UNREACHABLE, spool=spool))
    proc, _ = run_hook(env, wrapper)
    assert proc.returncode == 0
    assert hookspool.pending(str(spool)) == []


def test_an_unreadable_node_list_still_records_the_job_and_leaves_the_nodes_to_sacct(
        db_dsn, tmp_path):
    spool = tmp_path / "spool"
    wrapper = write_wrapper(tmp_path / "hook", write_config(tmp_path / "c.toml", dsn=db_dsn,
                                                             spool=spool))
    env = hook_env(7100, SLURM_JOB_NODELIST="node[01-", SLURM_JOB_UID="(null)",
                   SLURM_JOB_NAME="\u00e9t\u00e9 | \n name")
    proc, _ = run_hook(env, wrapper)
    assert proc.returncode == 0
    wait_until(lambda: 7100 in queue_rows(db_dsn), what="the queue row")
    assert _job_row(db_dsn, 7100) == ("alice", None, [], "0:0", "hook", "\u00e9t\u00e9 | \n name")


def test_a_broken_config_or_a_missing_python_still_exits_0(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("dsn = [unclosed\n")
    wrapper = write_wrapper(tmp_path / "hook", bad)
    default = Path(hook.DEFAULT_SPOOL)
    existed = default.exists()
    job = 987_654_321  # spooled under the default directory: removed below
    try:
        proc, ms = run_hook(hook_env(job), wrapper)
        assert proc.returncode == 0 and "unusable" in proc.stderr
        assert ms < 5000
        assert (default / f"{job}.json").exists()
    finally:
        (default / f"{job}.json").unlink(missing_ok=True)
        if not existed:
            shutil.rmtree(default.parent, ignore_errors=True)
    cfg = write_config(tmp_path / "c.toml", dsn=UNREACHABLE, spool=tmp_path / "spool")
    for python in ("/nonexistent/python3", "/bin/false", "/usr/bin/env"):
        proc, _ = run_hook(hook_env(7200), write_wrapper(tmp_path / "h2", cfg, python=python))
        assert proc.returncode == 0, python
    # a Python that cannot import slurm_io (a bare system Python without the install)
    proc, _ = run_hook(hook_env(7201), write_wrapper(tmp_path / "h3", cfg,
                                                      python="/usr/bin/python3"))
    assert proc.returncode == 0


def test_an_unwritable_spool_falls_back_to_the_database(db_dsn, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spool directory should be")
    wrapper = write_wrapper(tmp_path / "hook", write_config(tmp_path / "c.toml", dsn=db_dsn,
                                                             spool=blocker / "spool"))
    proc, _ = run_hook(hook_env(7300), wrapper)
    assert proc.returncode == 0 and "cannot spool" in proc.stderr
    wait_until(lambda: 7300 in queue_rows(db_dsn), what="the queue row")


def test_a_burst_of_concurrent_hooks_records_every_job(db_dsn, tmp_path, capsys):
    spool = tmp_path / "spool"
    wrapper = write_wrapper(tmp_path / "hook", write_config(tmp_path / "c.toml", dsn=db_dsn,
                                                             spool=spool))
    jobs = list(range(8000, 8030))
    t0 = time.perf_counter()
    procs = [subprocess.Popen([str(wrapper)], env=hook_env(j), cwd="/",
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for j in jobs]
    assert [p.wait(timeout=30) for p in procs] == [0] * len(jobs)
    with capsys.disabled():
        print(f"\n[hook burst] {len(jobs)} concurrent hooks done in "
              f"{(time.perf_counter() - t0) * 1000:.0f} ms")
    wait_until(lambda: set(queue_rows(db_dsn)) >= set(jobs), timeout=30,
               what="queue rows of the burst")
    wait_until(lambda: not hookspool.pending(str(spool)), what="the spool to be drained")


def test_spool_ingest_is_idempotent_and_sets_bad_files_aside(db_dsn, tmp_path):
    spool = str(tmp_path / "spool")
    hookspool.write_request(spool, 9001, hook_env(9001), hook_time=time.time() - 30,
                            host="ctld")
    hookspool.write_request(spool, 9002, hook_env(9002), hook_time=time.time(), host="ctld")
    Path(spool, "9003.json").write_text("{not json")
    Path(spool, "9004.json").write_text(json.dumps({"env": {"SLURM_JOB_ID": "x"},
                                                    "hook_time": 1.0}))
    with psycopg.connect(db_dsn) as conn:
        first = hookspool.ingest(conn, spool)
        assert first.ingested == [9001, 9002] and len(first.bad) == 2
        assert hookspool.ingest(conn, spool).ingested == []
        # the same record again (a second hook run, or a crash before the unlink)
        hookspool.write_request(spool, 9001, hook_env(9001), hook_time=time.time(),
                                host="ctld")
        assert hookspool.ingest(conn, spool).ingested == [9001]
    rows = queue_rows(db_dsn)
    assert sorted(rows) == [9001, 9002]
    assert rows[9001]["source"] == "spool"
    assert len(hookspool.bad_files(spool)) == 2 and hookspool.pending(spool) == []
    assert not [n for n in os.listdir(spool) if n.endswith(".tmp")]


def test_the_hook_file_is_a_tiny_posix_sh_script():
    text = HOOK.read_text()
    assert text.startswith("#!/bin/sh\n") and os.access(HOOK, os.X_OK)
    assert "exit 0" in text.splitlines()[-1]


def test_the_hook_reads_the_config_as_slurm_io_config_does(tmp_path, monkeypatch):
    from slurm_io import config

    assert str(config.SYSTEM_CONFIG) == hook.SYSTEM_CONFIG
    assert Path(hook.DEFAULT_SPOOL) == config.Config().hook_spool_dir
    assert config.Config().hook_db_timeout == hook.DEFAULT_DB_TIMEOUT
    cfg = write_config(tmp_path / "c.toml", dsn="host=/x dbname=y", spool=tmp_path / "sp",
                       db_timeout=7, extra="[report]\ninterval = 5")
    monkeypatch.setenv(hook.CONFIG_ENV, str(cfg))
    full, light = config.load(), hook._Settings()
    assert light.config_ok
    assert (light.dsn, light.spool_dir, light.db_timeout) == (
        full.dsn, str(full.hook_spool_dir), full.hook_db_timeout)
    monkeypatch.setenv(hook.DSN_ENV, "host=/elsewhere")
    assert hook._Settings().dsn == config.load().dsn == "host=/elsewhere"
    cfg.write_text("[hook]\ndb_timeout = 'soon'\n")
    assert not hook._Settings().config_ok


def test_the_hook_needs_only_the_collector_role_and_users_cannot_read_the_queue(db_dsn):
    """The hook logs in as a plain jobio_collector member (no BYPASSRLS, no ownership);
    report_queue is bookkeeping: invisible to jobio_user roles."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for role, group in (("notify_test_hook", "jobio_collector"),
                            ("notify_test_user", "jobio_user")):
            conn.execute(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                         f"'{role}') THEN CREATE ROLE {role} IN ROLE {group}; END IF; END $$")
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SET ROLE notify_test_hook")
        assert hookspool.store_request(conn, hook_env(9101), time.time(), source="hook") == 9101
        assert conn.execute("SELECT q.state FROM report_queue q JOIN job USING (job) "
                            "WHERE job_raw = 9101").fetchone() == (
            "queued",)
        conn.execute("RESET ROLE")
        conn.commit()
        conn.execute("SET ROLE notify_test_user")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM report_queue")
