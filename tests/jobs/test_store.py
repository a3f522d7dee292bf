"""upsert_jobs on a real PostgreSQL: idempotence, job_node rows, hook/sacct merging; and the
pure pieces the hook and import paths add (hook environment, uid lookup)."""

from __future__ import annotations

import pwd
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.store import (
    UpsertCounts,
    newest_end,
    record_from_hook_env,
    upsert_job_counts,
    upsert_jobs,
)
from slurm_io.jobs.sync import default_since
from slurm_io.jobs.uids import fill_uids
from slurm_io.model import JobRecord
from slurm_io.slurm.fields import SACCT_FIELDS
from tests.shared import SHARED, shared_file

DUMPS = SHARED / "fixtures" / "slurm" / "22.05" / "dumps"
ALLOC = DUMPS.parent / "sacct_alloc.psv"

T0 = 1_795_239_000.0


def job(job_id: int, **kw) -> JobRecord:
    base = dict(
        job=job_id, jobid=str(job_id), array_job=None, array_task=None, uid=1002,
        user="alice", account="research", partition="debug", name="j", nodes=("node01",),
        submit=T0, start=T0 + 1, end=T0 + 9, state="COMPLETED", exit_code="0:0",
        work_dir="/home/alice", submit_line="sbatch j.sh", source="sacct",
    )
    base.update(kw)
    return JobRecord(**base)


def rows(conn, sql: str, *args):
    return conn.execute(sql, args).fetchall()


def job_row(conn, job_id: int) -> dict:
    cur = conn.execute("SELECT *, extract(epoch FROM start_time)::float8 AS start_s, "
                       "extract(epoch FROM end_time)::float8 AS end_s FROM job WHERE job_raw = %s",
                       (job_id,))
    names = [d.name for d in cur.description]
    return dict(zip(names, cur.fetchone(), strict=True))


def nodes_of(conn, job_id: int) -> list[tuple[str, int | None, float | None]]:
    return rows(conn, "SELECT h.name, jn.uid, extract(epoch FROM jn.end_time)::float8 "
                      "FROM job_node jn JOIN host h USING (host_id) JOIN job j USING (job) "
                      "WHERE j.job_raw = %s "
                      "ORDER BY h.name", job_id)


@pytest.fixture
def conn(db_dsn):
    with psycopg.connect(db_dsn) as c:
        yield c


def test_import_writes_jobs_and_one_job_node_row_per_node(conn):
    n = upsert_jobs(conn, [job(1, nodes=("node01", "node02", "node03")), job(2, uid=1003)])
    assert n == 2
    assert nodes_of(conn, 1) == [("node01", 1002, T0 + 9), ("node02", 1002, T0 + 9),
                                 ("node03", 1002, T0 + 9)]
    assert nodes_of(conn, 2) == [("node01", 1003, T0 + 9)]
    r = job_row(conn, 1)
    assert (r["jobid"], r["uid"], r["user_name"], r["state"], r["exit_code"], r["source"]) == (
        "1", 1002, "alice", "COMPLETED", "0:0", "sacct")
    assert r["nodes"] == ["node01", "node02", "node03"]
    assert (r["start_s"], r["end_s"]) == (T0 + 1, T0 + 9)
    assert rows(conn, "SELECT name FROM host ORDER BY name") == [
        ("node01",), ("node02",), ("node03",)]


def test_reimporting_the_same_jobs_changes_nothing(conn):
    records = [job(i, nodes=(f"node0{i % 4 + 1}",)) for i in range(1, 30)]
    assert upsert_job_counts(conn, records) == UpsertCounts(29, 0, 0)
    before = rows(conn, "SELECT job, updated_at FROM job ORDER BY job")
    before_nodes = rows(conn, "SELECT * FROM job_node ORDER BY job, host_id")
    assert upsert_job_counts(conn, records) == UpsertCounts(0, 0, 29)
    assert rows(conn, "SELECT job, updated_at FROM job ORDER BY job") == before
    assert rows(conn, "SELECT * FROM job_node ORDER BY job, host_id") == before_nodes


def test_newer_sacct_data_updates_the_row_and_its_nodes(conn):
    upsert_jobs(conn, [job(5, state="RUNNING", end=None, nodes=("node01", "node02"))])
    (first_update,) = rows(conn, "SELECT updated_at FROM job WHERE job_raw = 5")[0]
    counts = upsert_job_counts(conn, [job(5, state="FAILED", exit_code="3:0",
                                          nodes=("node03",))])
    assert counts == UpsertCounts(0, 1, 0)
    r = job_row(conn, 5)
    assert (r["state"], r["exit_code"], r["end_s"], r["nodes"]) == (
        "FAILED", "3:0", T0 + 9, ["node03"])
    assert r["updated_at"] != first_update
    assert nodes_of(conn, 5) == [("node03", 1002, T0 + 9)]


def test_missing_values_never_wipe_stored_ones(conn):
    upsert_jobs(conn, [job(6)])
    upsert_jobs(conn, [job(6, uid=None, work_dir=None, submit_line=None, nodes=(),
                           state="COMPLETED")])
    r = job_row(conn, 6)
    assert (r["uid"], r["work_dir"], r["submit_line"], r["nodes"]) == (
        1002, "/home/alice", "sbatch j.sh", ["node01"])
    assert nodes_of(conn, 6) == [("node01", 1002, T0 + 9)]


def test_repeated_records_of_one_job_count_once_and_the_last_wins(conn):
    counts = upsert_job_counts(conn, [job(7, state="RUNNING"), job(7, state="COMPLETED")])
    assert counts == UpsertCounts(1, 0, 0)
    assert job_row(conn, 7)["state"] == "COMPLETED"


HOOK_ENV = {  # as dumped by the 22.05 testbed's EpilogSlurmctld for a cancelled job
    "SLURM_JOB_ID": "11", "SLURM_JOB_UID": "1003", "SLURM_JOB_USER": "bob",
    "SLURM_JOB_ACCOUNT": "research", "SLURM_JOB_PARTITION": "debug",
    "SLURM_JOB_NAME": "tobecancelled", "SLURM_JOB_NODELIST": "node[02-03]",
    "SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_EXIT_CODE2": "0:0",
    "SLURM_JOB_WORK_DIR": "/home/bob", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
}


def test_hook_record_after_final_sacct_data_only_fills_gaps(conn):
    final = job(11, uid=None, user="bob", state="CANCELLED", exit_code="0:15",
                nodes=("node02", "node03"), source="sacct")
    upsert_jobs(conn, [final])
    counts = upsert_job_counts(conn, [record_from_hook_env(HOOK_ENV)])
    assert counts == UpsertCounts(0, 1, 0)  # the uid was missing: the hook supplies it
    r = job_row(conn, 11)
    assert (r["state"], r["exit_code"], r["end_s"], r["source"]) == (
        "CANCELLED", "0:15", T0 + 9, "sacct")
    assert (r["uid"], r["name"], r["work_dir"]) == (1003, "j", "/home/alice")
    assert nodes_of(conn, 11) == [("node02", 1003, T0 + 9), ("node03", 1003, T0 + 9)]
    # and once nothing is missing, a repeated hook run changes nothing
    assert upsert_job_counts(conn, [record_from_hook_env(HOOK_ENV)]) == UpsertCounts(0, 0, 1)


def test_sacct_after_the_hook_completes_the_record(conn):
    upsert_jobs(conn, [record_from_hook_env(HOOK_ENV)])
    r = job_row(conn, 11)
    assert (r["state"], r["end_s"], r["uid"], r["source"]) == (None, None, 1003, "hook")
    assert nodes_of(conn, 11) == [("node02", 1003, None), ("node03", 1003, None)]
    upsert_jobs(conn, [job(11, uid=None, user="bob", state="CANCELLED",
                           nodes=("node02", "node03"))])
    r = job_row(conn, 11)
    assert (r["state"], r["end_s"], r["uid"], r["source"]) == ("CANCELLED", T0 + 9, 1003,
                                                               "sacct")
    assert nodes_of(conn, 11) == [("node02", 1003, T0 + 9), ("node03", 1003, T0 + 9)]


def test_hook_record_over_a_still_running_sacct_row_updates_it(conn):
    upsert_jobs(conn, [job(12, state="RUNNING", end=None, exit_code="0:0")])
    env = dict(HOOK_ENV, SLURM_JOB_ID="12", SLURM_JOB_EXIT_CODE2="3:0")
    upsert_jobs(conn, [record_from_hook_env(env)])
    r = job_row(conn, 12)
    assert (r["exit_code"], r["state"], r["source"]) == ("3:0", "RUNNING", "hook")


def test_upsert_inside_a_callers_transaction_is_undone_with_it(conn):
    with pytest.raises(RuntimeError), conn.transaction():
        upsert_jobs(conn, [job(13)])
        raise RuntimeError("caller fails after the upsert")
    assert rows(conn, "SELECT count(*) FROM job") == [(0,)]
    assert upsert_jobs(conn, [job(13)]) == 1  # the temp table is usable again


def test_newest_end_is_the_latest_end_time(conn):
    assert newest_end(conn) is None
    upsert_jobs(conn, [job(1, end=T0 + 50), job(2, end=None, state="RUNNING")])
    assert newest_end(conn) == T0 + 50


def test_fifty_thousand_jobs_import_and_reimport(conn):
    """Scale check (no timing assertion): a big COPY batch round-trips exactly."""
    n = 50_000
    records = [job(i, nodes=tuple(f"c{(i + k) % 512:04d}" for k in range(i % 4 + 1)),
                   uid=1000 + i % 97) for i in range(1, n + 1)]
    assert upsert_job_counts(conn, records) == UpsertCounts(n, 0, 0)
    assert upsert_job_counts(conn, records) == UpsertCounts(0, 0, n)
    expected_nodes = sum(i % 4 + 1 for i in range(1, n + 1))
    assert rows(conn, "SELECT count(*) FROM job_node") == [(expected_nodes,)]
    assert rows(conn, "SELECT count(*) FROM job_node jn JOIN job j USING (job) "
                      "WHERE jn.uid IS DISTINCT FROM j.uid") == [(0,)]


def test_sacct_text_round_trips_through_the_database(conn):
    text = "|".join(SACCT_FIELDS) + "\n" + "|".join([
        "5_1", "7", "arr", "bob", "1003", "research", "debug", "CANCELLED by 1003", "0:0",
        "2026-11-21T05:30:59", "2026-11-21T05:31:00", "2026-11-21T05:31:02", "2",
        "node[03-04]", "/home/bob", "lab", "sbatch --array=1-2 a.sh"]) + "\n"
    (rec,), problems = parse_sacct(text, tz=UTC)
    assert problems == []
    upsert_jobs(conn, [rec])
    r = job_row(conn, 7)
    assert (r["jobid"], r["array_job"], r["array_task"], r["state"]) == ("5_1", 5, "1",
                                                                         "CANCELLED")
    assert r["start_time"] == datetime(2026, 11, 21, 5, 31, tzinfo=UTC)
    assert [n for n, _, _ in nodes_of(conn, 7)] == ["node03", "node04"]


# -- the hook environment (pure) ----------------------------------------------------------
def test_hook_env_of_an_array_task_names_the_raw_id_and_the_array():
    env = dict(HOOK_ENV, SLURM_JOB_ID="9", SLURM_ARRAY_JOB_ID="6", SLURM_ARRAY_TASK_ID="1",
               SLURM_JOB_NODELIST="node04")
    r = record_from_hook_env(env)
    assert (r.job, r.jobid, r.array_job, r.array_task) == (9, "6_1", 6, "1")
    assert (r.uid, r.user, r.nodes, r.source) == (1003, "bob", ("node04",), "hook")
    assert r.state is None and r.start is None and r.end is None


def test_hook_env_exit_code_falls_back_to_the_raw_wait_status():
    env = {k: v for k, v in HOOK_ENV.items() if k != "SLURM_JOB_EXIT_CODE2"}
    assert record_from_hook_env(dict(env, SLURM_JOB_EXIT_CODE="768")).exit_code == "3:0"
    assert record_from_hook_env(dict(env, SLURM_JOB_EXIT_CODE="9")).exit_code == "0:9"


def test_hook_env_uses_start_and_end_times_when_slurm_provides_them():
    env = dict(HOOK_ENV, SLURM_JOB_START_TIME="1795239060", SLURM_JOB_END_TIME="1795239062")
    r = record_from_hook_env(env)
    assert (r.start, r.end) == (1795239060.0, 1795239062.0)


def test_hook_env_without_a_job_id_is_refused():
    with pytest.raises(ValueError, match="SLURM_JOB_ID"):
        record_from_hook_env({"SLURM_JOB_USER": "bob"})


def _env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, _, v = line.partition("=")
            env[k] = v
    return env


def test_real_22_05_hook_environments_agree_with_sacct():
    shared_file(*DUMPS.relative_to(SHARED).parts)  # skips only when ../shared is absent
    shared_file(*ALLOC.relative_to(SHARED).parts)
    sacct = {r.job: r for r in parse_sacct(ALLOC.read_text(), tz=UTC)[0]}
    dumps = sorted(DUMPS.glob("epilog_slurmctld.*.ctld.env"))
    assert len(dumps) >= 8
    for path in dumps:
        hook = record_from_hook_env(_env_file(path))
        s = sacct[hook.job]
        assert (hook.jobid, hook.array_job, hook.array_task, hook.uid, hook.user,
                hook.account, hook.partition, hook.name, hook.nodes, hook.work_dir) == (
            s.jobid, s.array_job, s.array_task, s.uid, s.user, s.account, s.partition,
            s.name, s.nodes, s.work_dir), path.name
        if s.state == "FAILED":
            assert hook.exit_code == s.exit_code == "3:0"


# -- uid lookup (imperative, passwd) ------------------------------------------------------
def test_missing_uids_are_filled_from_passwd_for_known_users_only():
    root = pwd.getpwnam("root").pw_uid
    records = [job(1, uid=None, user="root"), job(2, uid=None, user="no-such-user-xyz"),
               job(3, uid=4242, user="root")]
    assert [r.uid for r in fill_uids(records)] == [root, None, 4242]


# -- the CLI's import and the sync window --------------------------------------------------
def test_default_sync_window_overlaps_a_day_or_starts_a_week_back():
    assert default_since(None, now=T0) == T0 - 7 * 86400
    assert default_since(T0 - 500, now=T0) == T0 - 500 - 86400


def test_cli_import_prints_counts_and_reports_bad_lines_on_stderr(db_dsn, tmp_path,
                                                                  monkeypatch):
    monkeypatch.delenv("SLURM_IO_DSN", raising=False)
    monkeypatch.setenv("SLURM_IO_CONFIG", str(tmp_path / "empty.toml"))
    (tmp_path / "empty.toml").write_text("")
    header = "|".join(SACCT_FIELDS)
    good = "|".join(["41", "41", "a", "nobody-here-xyz", "", "research", "debug", "COMPLETED",
                     "0:0", "2026-11-21T05:00:00", "2026-11-21T05:00:01",
                     "2026-11-21T05:00:09", "2", "c[01-02]", "/w", "lab", "sbatch a.sh"])
    path = tmp_path / "jobs.psv"
    broken = good.replace("41|41", "42|42").replace("c[01", "c[01-")
    path.write_text(f"{header}\n{good}\n{broken}\n")
    runner = CliRunner()
    first = runner.invoke(main, ["--dsn", db_dsn, "jobs", "import", "--tz", "UTC", str(path)])
    assert first.exit_code == 0
    assert ("imported 1 job (new 1, updated 0, unchanged 0), skipped 1 bad line (see jobio "
            "problems)") in first.stdout
    assert "line 3" in first.stderr and "bad node list" in first.stderr
    again = runner.invoke(main, ["--dsn", db_dsn, "jobs", "import", "--tz", "UTC", "-"],
                          input=path.read_text())
    assert "imported 1 job (new 0, updated 0, unchanged 1), skipped 1 bad line" in again.stdout
    with psycopg.connect(db_dsn) as conn:
        r = job_row(conn, 41)
        assert (r["source"], r["uid"], r["nodes"]) == ("import", None, ["c01", "c02"])
        assert r["start_time"] == datetime(2026, 11, 21, 5, 0, 1, tzinfo=UTC)
    bad_zone = runner.invoke(main, ["--dsn", db_dsn, "jobs", "import", "--tz", "Mars/Base",
                                    str(path)])
    assert bad_zone.exit_code == 2 and "unknown time zone" in bad_zone.stderr
