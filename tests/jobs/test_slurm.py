"""`jobio jobs sync` against a REAL Slurm 22.05 (the testbed of scripts/setup-slurm.sh).

The jobs (tests/jobs/conftest.py) run as alice and bob: one node, three nodes, exit 3,
cancelled while running, a 3-task array, and a job whose name and submit line contain `|`
and a newline. After sync, the job/job_node rows must say what Slurm itself says.
"""

from __future__ import annotations

import pwd
import time
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.jobs.source import (
    PyslurmSource,
    SacctSource,
    SourceError,
    default_source,
    pyslurm_available,
    record_from_pyslurm,
)
from slurm_io.jobs.store import record_from_hook_env, upsert_jobs
from tests.jobs.conftest import QUIRKY_NAME, QUIRKY_WRAP, SubmittedJobs
from tests.slurm_fixtures import SlurmCluster

SACCT = "/usr/bin/sacct"


@pytest.fixture(autouse=True)
def _no_site_config(monkeypatch, tmp_path):
    monkeypatch.delenv("SLURM_IO_DSN", raising=False)
    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("SLURM_IO_CONFIG", str(tmp_path / "empty.toml"))


def sync(db_dsn: str, *args: str):
    result = CliRunner().invoke(
        main, ["--dsn", db_dsn, "jobs", "sync", "--sacct", SACCT, *args],
        catch_exceptions=False)
    return result


@pytest.fixture
def synced(db_dsn: str, submitted_jobs: SubmittedJobs):
    since = str(int(submitted_jobs.submitted_at) - 60)
    result = sync(db_dsn, "--since", since)
    assert result.exit_code == 0, result.output + result.stderr
    expected = {int(line["JobIDRaw"]) for line in submitted_jobs.sacct}
    with psycopg.connect(db_dsn) as conn:
        stored = {j for (j,) in conn.execute("SELECT job_raw FROM job WHERE job_raw = ANY(%s)",
                                              (list(expected),))}
        assert stored == expected, (
            f"sync stored {sorted(stored)} of {sorted(expected)}; it said: {result.stdout}"
            f"{result.stderr}; sacct now: "
            f"{SacctSource(SACCT).command(float(since), None)}")
        yield conn, result


def job_row(conn, job_id: int) -> dict:
    cur = conn.execute("SELECT * FROM job WHERE job_raw = %s", (job_id,))
    row = cur.fetchone()
    assert row is not None, f"job {job_id} was not imported"
    return dict(zip([d.name for d in cur.description], row, strict=True))


def job_nodes(conn, job_id: int) -> list[tuple[str, int | None]]:
    return conn.execute("SELECT h.name, jn.uid FROM job_node jn JOIN host h USING (host_id) "
                        "JOIN job j USING (job) WHERE j.job_raw = %s ORDER BY h.name",
                        (job_id,)).fetchall()


def sacct_line(cluster: SlurmCluster, job_id: int) -> dict[str, str]:
    (line,) = cluster.sacct_lines([job_id], ["JobIDRaw", "JobID", "User", "UID", "State",
                                             "ExitCode", "NodeList", "Start", "End"])
    return line


def uid(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def test_sync_reports_what_it_imported(synced):
    _, result = synced
    assert "SacctSource since" in result.stdout and "imported" in result.stdout
    assert "skipped" not in result.stdout and not result.stderr.strip()


@pytest.mark.parametrize(("role", "user", "state", "exit_code"), [
    ("single", "alice", "COMPLETED", "0:0"),
    ("multi", "alice", "COMPLETED", "0:0"),
    ("fail", "bob", "FAILED", "3:0"),
    ("cancel", "bob", "CANCELLED", None),
    ("quirky", "alice", "COMPLETED", "0:0"),
])
def test_each_job_is_stored_as_sacct_reports_it(synced, submitted_jobs, slurm_cluster,
                                                 role, user, state, exit_code):
    conn, _ = synced
    job_id = submitted_jobs.ids[role]
    s = sacct_line(slurm_cluster, job_id)
    row = job_row(conn, job_id)
    assert (row["jobid"], row["user_name"], row["uid"]) == (str(job_id), user, uid(user))
    assert row["uid"] == int(s["UID"])
    assert row["state"] == state == s["State"].split()[0]
    assert row["exit_code"] == s["ExitCode"]
    if exit_code is not None:
        assert row["exit_code"] == exit_code
    assert row["source"] == "sacct"
    assert row["start_time"] is not None and row["end_time"] >= row["start_time"]


def test_nodes_are_slurms_own_expansion_with_one_job_node_row_each(synced, submitted_jobs,
                                                                    slurm_cluster):
    conn, _ = synced
    for role, user in [("single", "alice"), ("multi", "alice"), ("fail", "bob")]:
        job_id = submitted_jobs.ids[role]
        expected = slurm_cluster.hostnames(sacct_line(slurm_cluster, job_id)["NodeList"])
        assert job_row(conn, job_id)["nodes"] == expected
        assert job_nodes(conn, job_id) == sorted((n, uid(user)) for n in expected)
    assert len(job_row(conn, submitted_jobs.ids["multi"])["nodes"]) == 3


def test_cancelled_job_keeps_the_state_without_the_cancellers_uid(synced, submitted_jobs,
                                                                   slurm_cluster):
    conn, _ = synced
    job_id = submitted_jobs.ids["cancel"]
    assert sacct_line(slurm_cluster, job_id)["State"] == f"CANCELLED by {uid('bob')}"
    row = job_row(conn, job_id)
    assert row["state"] == "CANCELLED" and len(row["nodes"]) == 1  # it had started


def test_array_tasks_are_stored_under_their_raw_ids(synced, submitted_jobs, slurm_cluster):
    conn, _ = synced
    array_id = submitted_jobs.ids["array"]
    tasks = slurm_cluster.sacct_lines([array_id], ["JobIDRaw", "JobID", "NodeList"])
    assert sorted(t["JobID"] for t in tasks) == [f"{array_id}_{i}" for i in (1, 2, 3)]
    for t in tasks:
        row = job_row(conn, int(t["JobIDRaw"]))
        assert (row["jobid"], row["array_job"]) == (t["JobID"], array_id)
        assert row["array_task"] == t["JobID"].split("_")[1]
        assert (row["user_name"], row["uid"], row["state"]) == ("bob", uid("bob"), "COMPLETED")
        assert row["nodes"] == slurm_cluster.hostnames(t["NodeList"])
    stored = conn.execute("SELECT count(*) FROM job WHERE array_job = %s",
                          (array_id,)).fetchone()
    assert stored == (3,)


def test_bar_and_newline_in_name_and_submit_line_survive(synced, submitted_jobs):
    conn, _ = synced
    row = job_row(conn, submitted_jobs.ids["quirky"])
    assert row["name"] == QUIRKY_NAME
    assert row["submit_line"].endswith(f"--wrap {QUIRKY_WRAP}")
    assert row["work_dir"].endswith("/jobs/alice")


def test_a_second_sync_leaves_the_finished_jobs_untouched(synced, submitted_jobs, db_dsn):
    conn, _ = synced
    ids = list(submitted_jobs.ids.values())
    before = conn.execute("SELECT job_raw, updated_at FROM job WHERE job_raw = ANY(%s) "
                          "ORDER BY job_raw",
                          (ids,)).fetchall()
    conn.commit()
    again = sync(db_dsn, "--since", str(int(submitted_jobs.submitted_at) - 60))
    assert again.exit_code == 0
    after = conn.execute("SELECT job_raw, updated_at FROM job WHERE job_raw = ANY(%s) "
                          "ORDER BY job_raw",
                         (ids,)).fetchall()
    assert after == before and len(after) == len(ids)


def test_sync_without_since_starts_a_week_back_on_an_empty_table(db_dsn, submitted_jobs):
    result = sync(db_dsn)
    assert result.exit_code == 0, result.stderr
    with psycopg.connect(db_dsn) as conn:
        assert job_row(conn, submitted_jobs.ids["fail"])["exit_code"] == "3:0"


def test_hook_environment_of_the_live_testbed_merges_with_sacct(synced, submitted_jobs,
                                                                slurm_cluster):
    """The testbed's default EpilogSlurmctld dumps its environment: feed it through
    record_from_hook_env after sacct, as the job-end hook will; nothing may get worse."""
    conn, _ = synced
    for role in ("multi", "fail"):
        job_id = submitted_jobs.ids[role]
        dump = slurm_cluster.lab / "dumps" / f"epilog_slurmctld.{job_id}.ctld.env"
        env = dict(line.split("=", 1) for line in dump.read_text().splitlines()
                   if line and not line.startswith("#") and "=" in line)
        hook = record_from_hook_env(env)
        before = job_row(conn, job_id)
        assert (hook.uid, hook.user, list(hook.nodes)) == (
            before["uid"], before["user_name"], before["nodes"])
        upsert_jobs(conn, [hook])
        after = job_row(conn, job_id)
        assert {k: v for k, v in after.items() if k != "updated_at"} == {
            k: v for k, v in before.items() if k != "updated_at"}


def test_sacct_source_returns_records_tagged_sacct(submitted_jobs):
    records = SacctSource(SACCT).jobs(submitted_jobs.submitted_at - 60, None)
    by_job = {r.job: r for r in records}
    assert by_job[submitted_jobs.ids["fail"]].exit_code == "3:0"
    assert {r.source for r in records} == {"sacct"}


def test_sacct_that_cannot_run_is_a_clear_error(tmp_path: Path):
    with pytest.raises(SourceError, match="not found"):
        SacctSource(str(tmp_path / "no-sacct")).jobs(None, None)
    now = time.time()
    with pytest.raises(SourceError, match=r"sacct failed \(exit 1\):.*after end time"):
        SacctSource(SACCT).jobs(now, now - 86400)  # sacct refuses an inverted window


def test_cli_sync_failure_exits_non_zero_with_the_reason(db_dsn, tmp_path):
    result = CliRunner().invoke(
        main, ["--dsn", db_dsn, "jobs", "sync", "--sacct", str(tmp_path / "no-sacct")])
    assert result.exit_code == 1 and "not found" in result.stderr


# -- choosing the source, and pyslurm's job objects (pyslurm cannot be built here) ---------
def test_default_source_is_sacct_unless_pyslurm_imports():
    chosen = default_source(None)
    if pyslurm_available():
        assert isinstance(chosen, PyslurmSource)
    else:
        assert isinstance(chosen, SacctSource) and chosen.sacct == SACCT
    explicit = default_source(None, sacct="/opt/slurm/bin/sacct")
    assert isinstance(explicit, SacctSource) and explicit.sacct == "/opt/slurm/bin/sacct"


def _pyslurm_job(**kw):
    """The attributes pyslurm 25.11's db.Job has (read from its job.pyx), as plain data."""
    base = dict(id=9, array_id=6, array_task_id=1, array_tasks_waiting=None, user_id=1003,
                user_name="bob", account="research", partition="debug", name="arr",
                nodelist="node[03-04]", submit_time=1795239059, start_time=1795239060,
                end_time=1795239062, state="COMPLETED", exit_code=3, exit_code_signal=0,
                working_directory="/home/bob", submit_command="sbatch a.sh")
    base.update(kw)
    return SimpleNamespace(**base)


def test_pyslurm_jobs_map_to_the_same_records_as_sacct_lines():
    r = record_from_pyslurm(_pyslurm_job())
    assert (r.job, r.jobid, r.array_job, r.array_task) == (9, "6_1", 6, "1")
    assert (r.uid, r.user, r.nodes, r.state, r.exit_code) == (
        1003, "bob", ("node03", "node04"), "COMPLETED", "3:0")
    assert (r.start, r.end, r.source) == (1795239060.0, 1795239062.0, "pyslurm")
    pending = record_from_pyslurm(_pyslurm_job(id=6, array_task_id=None,
                                               array_tasks_waiting="2-3", nodelist=None,
                                               start_time=None, end_time=None))
    assert (pending.job, pending.jobid, pending.array_task, pending.nodes) == (
        6, "6_[2-3]", "[2-3]", ())
    plain = record_from_pyslurm(_pyslurm_job(id=4, array_id=None, array_task_id=None))
    assert (plain.jobid, plain.array_job, plain.array_task) == ("4", None, None)


def test_pyslurm_values_pass_the_same_checks_as_sacct_and_the_hook():
    r = record_from_pyslurm(_pyslurm_job(name="x\udcffy", account="(null)"))
    assert (r.name, r.account) == ("x\\xffy", None)
    with pytest.raises(ValueError, match="uid 4294967296 is out of range"):
        record_from_pyslurm(_pyslurm_job(user_id=4294967296))
