"""Fixtures of the job-end hook and reporter tests: a real SMTP server (aiosmtpd), config
files, the hook run as a subprocess the way slurmctld runs it, and job rows that are ready
to be reported (final sacct record, collectors past the job's end)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.notify.smtp_sink import Sink, smtp_server

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "epilog" / "jobio-epilog"
PLAIN_BUILDER = "slurm_io.notify.plain:PlainMailBuilder"
DOMAIN = "lab.example"
SENDER = "jobio@lab.example"
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Account|Partition|State|ExitCode|Submit|"
                "Start|End|NNodes|NodeList|WorkDir|Cluster|SubmitLine")

# What EpilogSlurmctld got for a two-node job on Slurm 22.05 (fixtures/slurm/22.05/dumps).
HOOK_ENV = {
    "SLURM_CLUSTER_NAME": "lab", "SLURM_JOBID": "10", "SLURM_JOB_ACCOUNT": "research",
    "SLURM_JOB_CPUS_PER_NODE": "1(x2)", "SLURM_JOB_DERIVED_EC": "0",
    "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_GID": "1002",
    "SLURM_JOB_GROUP": "alice", "SLURM_JOB_ID": "10", "SLURM_JOB_NAME": "srun_direct",
    "SLURM_JOB_NODELIST": "node[03-04]", "SLURM_JOB_NUM_NODES": "2",
    "SLURM_JOB_PARTITION": "debug", "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_UID": "1002",
    "SLURM_JOB_USER": "alice", "SLURM_JOB_WORK_DIR": "/var/lib/slurm-testbed/jobs/alice",
    "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
}


def hook_env(job: int, **over: str) -> dict[str, str]:
    env = {**HOOK_ENV, "SLURM_JOB_ID": str(job), "SLURM_JOBID": str(job)}
    env.update(over)
    return env


@pytest.fixture
def smtp() -> Iterator[tuple[Sink, int]]:
    with smtp_server() as server:
        yield server


def write_config(path: Path, *, dsn: str | None, spool: Path, port: int = 25,
                 db_timeout: float = 10, extra: str = "") -> Path:
    lines = [f"dsn = {dsn!r}" if dsn else "",
             "[hook]", f"spool_dir = {str(spool)!r}", f"db_timeout = {db_timeout}",
             "[mail]", "host = '127.0.0.1'", f"port = {port}", f"domain = {DOMAIN!r}",
             f"from = {SENDER!r}", "timeout = 10", extra]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_wrapper(path: Path, config: Path, *, python: str | None = None,
                  pythonpath: str | None = None, hook: Path = HOOK) -> Path:
    """The two-line wrapper docs/hook.md tells sites with another layout to write: it bakes
    the Python and the config file in, since slurmctld passes neither."""
    lines = ["#!/bin/sh", f"JOBIO_PYTHON={python or sys.executable}",
             f"SLURM_IO_CONFIG={config}", "export JOBIO_PYTHON SLURM_IO_CONFIG"]
    if pythonpath:
        lines += [f"PYTHONPATH={pythonpath}", "export PYTHONPATH"]
    lines.append(f"exec {hook}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path


def run_hook(env: dict[str, str], wrapper: Path, *, timeout: float = 10
             ) -> tuple[subprocess.CompletedProcess[str], float]:
    """The hook as slurmctld runs it: an environment of SLURM_* variables only (no PATH),
    stdio on pipes, cwd /. Returns the process and its wall time in ms."""
    t0 = time.perf_counter()
    proc = subprocess.run([str(wrapper)], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False, cwd="/")
    return proc, (time.perf_counter() - t0) * 1000


def site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


def wait_until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def queue_rows(dsn: str) -> dict[int, dict[str, Any]]:
    with psycopg.connect(dsn) as conn, conn.cursor(row_factory=dict_row) as cur:
        # the queue holds row keys (sql/0020); tests name jobs by their raw ids
        cur.execute("SELECT coalesce(j.job_raw, q.job) AS raw, q.* FROM report_queue q "
                    "LEFT JOIN job j USING (job) ORDER BY 1")
        return {r["raw"]: {**r, "job": r["raw"]} for r in cur.fetchall()}


def ts(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def add_job(conn: psycopg.Connection, job: int, *, user: str = "alice", uid: int = 1002,
            start: float | None, end: float | None, state: str | None = "COMPLETED",
            nodes: tuple[str, ...] = ("node01",), source: str = "sacct",
            submit: float | None = None) -> None:
    conn.execute(
        "INSERT INTO job (job, jobid, uid, user_name, account, partition, name, nodes, submit,"
        " start_time, end_time, state, exit_code, source) VALUES "
        "(%s, %s, %s, %s, 'research', 'debug', 'io', %s, %s, %s, %s, %s, '0:0', %s)",
        (job, str(job), uid, user, list(nodes),
         ts(submit if submit is not None else (start or time.time()) - 5),
         None if start is None else ts(start), None if end is None else ts(end), state, source))


def collectors_read_until(conn: psycopg.Connection, t: float,
                          collectors: tuple[str, ...] = ("mds1", "oss1")) -> None:
    """Every collector has a batch read at time `t` (what data_complete_until looks at)."""
    for c in collectors:
        conn.execute(
            "INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, n_problems,"
            " n_repaired, n_unattributable, targets) VALUES (%s, "
            "(SELECT coalesce(max(seq), 0) + 1 FROM ingest_batch WHERE collector = %s), "
            "%s, 0, 0, 0, 0, 0, '{}')", (c, c, ts(t)))


def ready_jobs(dsn: str, jobs: dict[int, str], *, end: float | None = None) -> float:
    """Jobs (id -> user) that ended at `end`, final in sacct, collectors past their end."""
    end = end if end is not None else time.time() - 30
    with psycopg.connect(dsn) as conn:
        for job, user in jobs.items():
            add_job(conn, job, user=user, uid=1002 if user == "alice" else 1003,
                    start=end - 60, end=end)
            conn.execute("INSERT INTO report_queue (job, queued_at, source) "
                         "VALUES (%s, %s, 'hook')", (job, ts(end)))
        collectors_read_until(conn, end + 60)
    return end


def fake_sacct(tmp: Path, lines: list[str]) -> Path:
    """An executable that prints `sacct -P` text (header + lines), whatever its arguments:
    stands in for sacct where no Slurm runs (the e2e test uses the real one)."""
    data = tmp / "sacct.txt"
    data.write_text("\n".join([SACCT_HEADER, *lines]) + "\n")
    exe = tmp / "sacct"
    exe.write_text(f"#!/bin/sh\ncat {data}\n")
    exe.chmod(0o755)
    return exe


def sacct_line(job: int, *, user: str = "alice", uid: int = 1002, state: str = "COMPLETED",
               start: float | None, end: float | None, nodes: str = "node01") -> str:
    def t(x: float | None) -> str:
        return "Unknown" if x is None else time.strftime("%Y-%m-%dT%H:%M:%S",
                                                         time.localtime(x))
    n = 0 if nodes == "None assigned" else 1
    return (f"{job}|{job}|io|{user}|{uid}|research|debug|{state}|0:0|"
            f"{t((start or end or time.time()) - 5)}|{t(start)}|{t(end)}|{n}|{nodes}|/tmp|lab|"
            f"sbatch io.sh")


@pytest.fixture
def plain_builder(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SLURM_IO_MAIL_BUILDER", PLAIN_BUILDER)
    return PLAIN_BUILDER


def cli_env(config: Path, **extra: str) -> dict[str, str]:
    """Environment of a `python -m slurm_io.cli` subprocess."""
    return {**os.environ, "PYTHONPATH": str(REPO), "SLURM_IO_CONFIG": str(config),
            "SLURM_IO_MAIL_BUILDER": PLAIN_BUILDER, **extra}
