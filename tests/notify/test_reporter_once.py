"""The reporter sends each job's mail exactly once, whatever happens: two reporters at
once, a reporter killed between the server's acceptance and its bookkeeping, a database
outage under the hook (real PostgreSQL, a real SMTP server, the reporter in-process or as
`jobio report-daemon --once`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from slurm_io.notify import hookspool
from slurm_io.notify.reporter import Reporter
from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from tests.notify.conftest import (
    DOMAIN,
    REPO,
    cli_env,
    collectors_read_until,
    fake_sacct,
    hook_env,
    queue_rows,
    ready_jobs,
    run_hook,
    sacct_line,
    wait_until,
    write_config,
    write_wrapper,
)
from tests.notify.reporting import make_config, make_reporter

pytestmark = pytest.mark.pg


# -- exactly once ---------------------------------------------------------------------------


def test_two_reporters_at_once_send_each_job_exactly_once(db_dsn, smtp, tmp_path):
    sink, port = smtp
    jobs = {1100 + i: ("alice", "bob")[i % 2] for i in range(30)}
    ready_jobs(db_dsn, jobs)
    cfg = make_config(db_dsn, port, tmp_path)
    reporters = [make_reporter(cfg), make_reporter(cfg)]
    errors: list[BaseException] = []

    def work(r: Reporter) -> None:
        try:
            for _ in range(5):
                r.run_once()
        except BaseException as e:  # pragma: no cover - shown by the assert below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in reporters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    by_job = sink.by_job()
    assert sorted(by_job) == sorted(jobs) and all(len(v) == 1 for v in by_job.values())
    assert {r["state"] for r in queue_rows(db_dsn).values()} == {"sent"}


def _reporter_process(config: Path, dsn: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "slurm_io.cli", "--dsn", dsn, "report-daemon", "--once",
         *extra], env=cli_env(config), cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def test_a_reporter_killed_between_the_servers_acceptance_and_its_bookkeeping_never_resends(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    ready_jobs(db_dsn, {1201: "alice", 1202: "bob"})
    config = write_config(tmp_path / "c.toml", dsn=None, spool=tmp_path / "spool", port=port,
                          extra="[report]\nsweep_every = 0")
    target: dict[str, int] = {}

    def freeze(got) -> None:  # the message is accepted; freeze the reporter before the 250
        if got.job == 1201 and "pid" in target:
            os.kill(target["pid"], signal.SIGSTOP)

    sink.on_data = freeze
    proc = _reporter_process(config, db_dsn)
    target["pid"] = proc.pid
    try:
        sink.wait_for(1)
        stat = Path(f"/proc/{proc.pid}/stat")
        wait_until(lambda: stat.read_text().split(") ")[1][0] == "T",
                   what="the reporter to be stopped")
    finally:
        proc.kill()  # SIGKILL: no handler, no cleanup, the 250 never read
        proc.communicate()
    sink.on_data = None
    assert queue_rows(db_dsn)[1201]["state"] == "sending"  # exactly the dangerous window
    assert len(sink.received) == 1

    again = _reporter_process(config, db_dsn)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err[-2000:]
    assert "orphans=1" in out and "sent=1" in out
    by_job = sink.by_job()
    assert sorted(by_job) == [1201, 1202] and all(len(v) == 1 for v in by_job.values())
    rows = queue_rows(db_dsn)
    assert rows[1201]["state"] == "sent" and "unconfirmed" in rows[1201]["note"]
    assert rows[1202]["state"] == "sent" and rows[1202]["note"] is None
    third = _reporter_process(config, db_dsn)
    third.communicate(timeout=120)
    assert len(sink.received) == 2


def test_database_stopped_the_hook_spools_and_the_job_is_mailed_once_when_it_is_back(
        smtp, tmp_path, pg_tmp_path, capsys):
    sink, port = smtp
    server = EmbeddedPostgres(pg_tmp_path / "outage")
    dsn = server.ensure()
    try:
        with psycopg.connect(dsn) as conn:
            migrate.upgrade(conn)
        server.stop()
        spool = tmp_path / "spool"
        config = write_config(tmp_path / "c.toml", dsn=dsn, spool=spool, port=port,
                              db_timeout=3, extra="[report]\nsweep_every = 0")
        proc, ms = run_hook(hook_env(1301), write_wrapper(tmp_path / "hook", config))
        assert proc.returncode == 0
        with capsys.disabled():
            print(f"\n[hook wall time, database stopped] {ms:.0f} ms")
        time.sleep(1.0)  # the background attempt has failed by now
        assert [Path(p).name for p in hookspool.pending(str(spool))] == ["1301.json"]

        server.start()
        now = time.time()
        with psycopg.connect(dsn) as conn:
            collectors_read_until(conn, now + 60)
        sacct = fake_sacct(tmp_path, [sacct_line(1301, start=now - 30, end=now - 1,
                                                 nodes="node[03-04]")])
        rep = _reporter_process(config, dsn, "--sacct", str(sacct))
        out, err = rep.communicate(timeout=120)
        assert rep.returncode == 0, err[-2000:]
        assert "ingested=1" in out and "sent=1" in out
        assert not list(spool.glob("*.json"))
        row = queue_rows(dsn)[1301]
        assert (row["state"], row["source"]) == ("sent", "spool")
        rep = _reporter_process(config, dsn, "--sacct", str(sacct))
        rep.communicate(timeout=120)
        assert [r.job for r in sink.received] == [1301]
        assert sink.received[0].rcpt_tos == [f"alice@{DOMAIN}"]
    finally:
        server.stop()
