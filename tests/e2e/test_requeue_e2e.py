"""A requeued job on a real Slurm: `scontrol requeue` of a running job gives a second run
with the same job id; `jobs sync` (sacct -D) stores each run as a row of its own, and each
run gets the I/O generated for its own time, shown by `jobio show` as two reports."""

from __future__ import annotations

import json
import time

import psycopg
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.jobs.store import find_jobs
from slurm_io.model import JobRecord
from slurm_io.simulate.for_jobs import reads_for_jobs


def jobio(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


def test_each_run_of_a_requeued_job_keeps_its_own_io(slurm_cluster, db_dsn, tmp_path,
                                                     monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    monkeypatch.setenv("SLURM_IO_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    c = slurm_cluster
    t_submit = time.time()
    job = c.submit("alice", ["-J", "requeued", "-N1", "--requeue", "--wrap", "sleep 10"])
    c.wait_running(job)
    time.sleep(4)
    c.run(["scontrol", "requeue", str(job)])
    c.wait_finished([job], timeout=600, since=t_submit - 60)

    code, out = jobio("--dsn", db_dsn, "jobs", "sync", "--since", str(int(t_submit - 60)),
                      "--sacct", c.command("sacct"))
    assert code == 0, out
    with psycopg.connect(db_dsn) as conn:
        runs = find_jobs(conn, str(job))
    assert [i.run for i in runs] == [0, 1], runs
    first, second = runs
    assert first.state == "REQUEUED" and second.state == "COMPLETED"
    assert first.raw_id == second.raw_id == job and first.job != second.job
    assert first.end is not None and second.start is not None and first.end <= second.start
    if c.version >= (25, 11):  # 22.05 has no SLUID, 24.11 prints one per job, not per run
        assert first.sluid != second.sluid

    records = [JobRecord(i.raw_id, i.jobid, None, None, i.uid, i.user, i.account, i.partition,
                         i.name, i.nodes, None, i.start, i.end, i.state, i.exit_code,
                         i.work_dir, None, "test") for i in runs]
    expected = reads_for_jobs(records, tmp_path / "reads", key=lambda r: r.start)
    code, out = jobio("--dsn", db_dsn, "--state-dir", str(tmp_path / "state"), "collect",
                      "--from", str(tmp_path / "reads"))
    assert code == 0, out
    code, out = jobio("--dsn", db_dsn, "show", "--json", str(job))
    assert code == 0, out
    shown = json.loads(out)
    assert [(d["job"], d["run"]) for d in shown] == [(job, 0), (job, 1)]
    for i, d in zip(runs, shown, strict=True):
        e = expected[i.start]
        assert e.write_bytes > 0
        assert d["totals"].get("write_bytes", 0) == e.write_bytes, d["run"]
        assert d["totals"].get("read_bytes", 0) == e.read_bytes, d["run"]
