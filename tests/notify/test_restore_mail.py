"""The hook spool and the report queue across a database restored from a backup (issue 20).

Real PostgreSQL (`pg_dump -Fc`, drop, `pg_restore`), the real SMTP sink, the reporter's
passes. Jobs are hooked and mailed before the dump, between the dump and the restore, and
after it: each job is stored (no hook record lost) and mailed exactly once.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import psycopg
import pytest

from slurm_io.notify import hookspool
from slurm_io.notify.restored import LEDGER_NAME
from tests.collect.test_restore import drop_and_restore, dump
from tests.notify.conftest import (
    collectors_read_until,
    fake_sacct,
    hook_env,
    queue_rows,
    sacct_line,
)
from tests.notify.reporting import make_config, make_reporter, run_until

pytestmark = pytest.mark.pg


def hook(spool: Path, job: int) -> None:
    """What EpilogSlurmctld leaves: the job's record, durable in the spool."""
    hookspool.write_request(str(spool), job, hook_env(job), hook_time=time.time(),
                            host="ctld")


def all_sent(dsn: str, jobs: list[int]) -> bool:
    rows = queue_rows(dsn)
    return all(rows.get(j, {}).get("state") == "sent" for j in jobs)


def test_jobs_hooked_and_mailed_before_a_restore_are_stored_and_mailed_once(
        db_dsn, pg_dsn, smtp, tmp_path, caplog):
    sink, port = smtp
    now = time.time()
    jobs = [2001, 2002, 2003, 2004, 2005]
    sacct = fake_sacct(tmp_path, [sacct_line(j, start=now - 120, end=now - 60,
                                             nodes="node[03-04]") for j in jobs])
    with psycopg.connect(db_dsn) as conn:
        collectors_read_until(conn, now + 3600)
    cfg = make_config(db_dsn, port, tmp_path)
    spool = cfg.hook_spool_dir

    # before the dump: 2001 hooked and mailed; 2005 hooked and stored by the hook's own
    # child (queued), mailed only after the dump
    reporter = make_reporter(cfg, sacct=sacct)
    hook(spool, 2001)
    run_until(reporter, lambda: all_sent(db_dsn, [2001]))
    hook(spool, 2005)
    with psycopg.connect(db_dsn) as conn:
        assert hookspool.ingest(conn, str(spool), source="hook").ingested == [2005]
    dump(db_dsn, tmp_path / "T1.dump")

    # between the dump and the restore: 2002 and 2003 hooked; 2002, 2003, 2005 mailed
    hook(spool, 2002)
    hook(spool, 2003)
    run_until(reporter, lambda: all_sent(db_dsn, [2002, 2003, 2005]))
    reporter.close()
    assert sorted(sink.by_job()) == [2001, 2002, 2003, 2005]
    assert not hookspool.pending(str(spool))

    # the database host dies; last night's backup is restored
    drop_and_restore(pg_dsn, db_dsn, tmp_path / "T1.dump")
    rows = queue_rows(db_dsn)
    assert sorted(rows) == [2001, 2005] and rows[2005]["state"] == "queued"

    # after the restore: a new report daemon; 2004 is hooked
    hook(spool, 2004)
    reporter = make_reporter(cfg, sacct=sacct)
    with caplog.at_level(logging.WARNING, logger="slurm_io.report"):
        run_until(reporter, lambda: all_sent(db_dsn, jobs))
        for _ in range(3):
            reporter.run_once()
    reporter.close()

    by_job = sink.by_job()
    assert sorted(by_job) == jobs
    assert {j: len(m) for j, m in by_job.items()} == dict.fromkeys(jobs, 1)
    rows = queue_rows(db_dsn)
    # the hook records the restore took away were stored again (kept for the window)
    assert sorted(rows) == jobs
    for j in (2002, 2003, 2005):
        assert rows[j]["note"].startswith("mailed before the database was restored"), rows[j]
        assert by_job[j][0].message["Message-ID"] in rows[j]["note"]
    assert rows[2004]["note"] is None or "restored" not in rows[2004]["note"]
    told = [r.getMessage() for r in caplog.records]
    assert any("lacks 2 job(s)" in m and "2002 2003" in m for m in told), told
    ledger = spool / hookspool.KEPT / LEDGER_NAME
    assert len(ledger.read_text().splitlines()) == 5
    # kept/ has the spool's own mode: the hook's SlurmUser and the reporter both write there
    kept = spool / hookspool.KEPT
    assert kept.stat().st_mode & 0o7777 == spool.stat().st_mode & 0o7777


def test_a_report_replay_window_that_is_no_duration_is_refused_in_one_line(db_dsn, tmp_path):
    import subprocess
    import sys

    config = tmp_path / "config.toml"
    config.write_text(f'dsn = "{db_dsn}"\n[report]\nreplay_window = "a week"\n')
    jobio = Path(sys.executable).with_name("jobio")
    r = subprocess.run([str(jobio), "--config", str(config), "report-daemon", "--once"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "[report] replay_window" in lines[0] and "a week" in lines[0]
