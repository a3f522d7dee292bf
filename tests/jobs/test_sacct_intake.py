"""sacct lines as users make them: each line is stored (text cleaned, placeholders as NULL)
or refused on its own with a reason, and `jobio jobs import` goes on to the next one. Het
job components and array tasks are jobs like any other, down to `jobio show`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC
from pathlib import Path

import psycopg
import pytest

from slurm_io.jobs.sacct import parse_sacct
from slurm_io.slurm.fields import SACCT_FIELDS
from tests.jobs.test_sacct import row
from tests.shared import shared_file

JOBIO = str(Path(sys.executable).with_name("jobio"))
REPO = Path(__file__).resolve().parents[2]
HEADER = "|".join(SACCT_FIELDS)




def ids(n: int) -> dict[str, str]:
    return {"JobID": str(n), "JobIDRaw": str(n)}


def test_bad_values_refuse_their_line_only_with_a_reason_each():
    from slurm_io.jobs.sacct import parse_sacct_text

    text = "\n".join([
        HEADER,
        row(**ids(1)),
        row(**ids(2), State=" "),  # blank: a placeholder, the line is kept
        row(JobID="12345678901234567890", JobIDRaw="12345678901234567890"),
        row(**ids(4), WorkDir="/w/\x00/x"),
        row(JobID="٣", JobIDRaw="٣"),  # int('٣') == 3: this used to become job 3
        row(**ids(6), UID="4294967296"),
        row(**ids(7), Start="99999-01-01T00:00:00"),
        row(**ids(8), NNodes="²"),
        row(**ids(9)),
    ])
    read = parse_sacct_text(text, tz=UTC)
    assert [j.job for j in read.jobs] == [1, 2, 4, 8, 9]
    by_job = {j.job: j for j in read.jobs}
    assert by_job[2].state is None
    assert by_job[4].work_dir == "/w/\\x00/x"
    # no record starts with other digits: that line reads as the end of job 4's submit line
    assert by_job[4].submit_line is not None and "\n٣|٣|job|" in by_job[4].submit_line
    reasons = {p.origin: p.reason for p in read.refused}
    assert sorted(reasons) == ["line 4", "line 7", "line 8"]
    assert "JobIDRaw 12345678901234567890 is out of range" in reasons["line 4"]
    assert "UID 4294967296 is out of range" in reasons["line 7"]
    assert "bad time '99999-01-01T00:00:00'" in reasons["line 8"]
    assert all(p.source == "sacct" and p.record for p in read.refused)


def test_slurm_placeholders_are_null_in_every_field_where_slurm_uses_them():
    (r,), problems = parse_sacct("\n".join([HEADER, row(
        Account="(null)", Partition="Unknown", User="None", UID="", NodeList="None assigned",
        WorkDir="(null)", JobName="None", SubmitLine="(null)", ExitCode="")]), tz=UTC)
    assert problems == []
    assert (r.account, r.partition, r.user, r.uid, r.nodes, r.work_dir, r.submit_line,
            r.exit_code) == (None, None, None, None, (), None, None, None)
    assert r.name == "None"  # sbatch -J None: a name the user chose


def test_names_with_bytes_that_are_not_utf8_are_kept_escaped():
    raw = HEADER.encode() + b"\n" + row(**ids(5)).replace("|job|", "|x\udcffy|").encode(
        "utf-8", "surrogateescape")
    (r,), problems = parse_sacct(raw.decode("utf-8", "surrogateescape"), tz=UTC)
    assert problems == [] and r.name == "x\\xffy"


def test_a_pending_arrays_task_list_takes_only_slurms_characters():
    # found by bench/fuzz_intake.py: any byte inside the brackets went into jobid
    jobs, problems = parse_sacct("JobID|JobIDRaw|State\n5_[2-9%2]|5|PENDING\n"
                                 "6_[1,3-5:2]|6|PENDING\n7_[2-\udcff]|7|PENDING\n", tz=UTC)
    assert [(j.jobid, j.array_task) for j in jobs] == [("5_[2-9%2]", "[2-9%2]"),
                                                       ("6_[1,3-5:2]", "[1,3-5:2]")]
    assert len(problems) == 1 and "bad JobID" in problems[0]


def test_het_components_and_array_tasks_are_jobs_under_their_raw_ids():
    # the forms of fixtures/slurm/24.11/sacct_brief_alloc.psv
    jobs, problems = parse_sacct("\n".join([
        HEADER,
        row(JobID="1853+0", JobIDRaw="1853", NodeList="node01"),
        row(JobID="1853+1", JobIDRaw="1854", NNodes="2", NodeList="node[02-03]"),
        row(JobID="5_1", JobIDRaw="13"),
    ]), tz=UTC)
    assert problems == []
    assert [(j.job, j.jobid, j.array_job, j.array_task) for j in jobs] == [
        (1853, "1853+0", None, None), (1854, "1853+1", None, None), (13, "5_1", 5, "1")]
    # without JobIDRaw: component 0 carries the leader's id, the others cannot be placed
    jobs, problems = parse_sacct("JobID|JobName|State\n1853+0|het|COMPLETED\n"
                                 "1853+1|het|COMPLETED\n", tz=UTC)
    assert [(j.job, j.jobid) for j in jobs] == [(1853, "1853+0")]
    assert len(problems) == 1 and "needs JobIDRaw" in problems[0]


def _jobio(*args: str, dsn: str, tmp: Path, stdin: bytes | None = None
           ) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(tmp / "none.toml"), "HOME": str(tmp),
           "PYTHONPATH": str(REPO)}  # this checkout's code, whatever the venv was made from
    (tmp / "none.toml").write_text("")
    return subprocess.run([JOBIO, "--dsn", dsn, *args], env=env, capture_output=True,
                          input=stdin, timeout=120, check=False)


@pytest.mark.pg
def test_jobs_import_skips_bad_lines_keeps_them_for_admins_and_exits_0(db_dsn, tmp_path):
    path = tmp_path / "jobs.psv"
    lines = [
        HEADER,
        row(**ids(51)),
        row(**ids(52), State=" "),
        row(JobID="12345678901234567890", JobIDRaw="12345678901234567890"),
        row(**ids(54), WorkDir="/w/\x00/x"),
        row(**ids(55), JobName="x\udcffy"),
        row(**ids(56), UID="4294967296"),
        row(**ids(57), NodeList="node[01-"),
        row(**ids(58), Account="(null)"),
    ]
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    proc = _jobio("jobs", "import", "--tz", "UTC", str(path), dsn=db_dsn, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert ("imported 5 jobs (new 5, updated 0, unchanged 0), skipped 3 bad lines "
            "(see jobio problems)") in out
    assert "Traceback" not in err and len(err.strip().splitlines()) == 3
    with psycopg.connect(db_dsn) as conn:
        jobs = dict(conn.execute("SELECT job_raw, (state, work_dir, name, account) FROM job"))
        problems = conn.execute("SELECT origin, reason, record FROM problem "
                                "WHERE source = 'sacct' ORDER BY id").fetchall()
    assert sorted(jobs) == [51, 52, 54, 55, 58]
    assert jobs[52][0] is None and jobs[54][1] == "/w/\\x00/x" and jobs[55][2] == "x\\xffy"
    assert jobs[58][3] is None
    assert [origin for origin, _, _ in problems] == [f"{path} line 4", f"{path} line 7",
                                                     f"{path} line 8"]
    assert bytes(problems[0][2]).startswith(b"12345678901234567890|")
    assert "bad node list" in problems[2][1]
    listed = _jobio("problems", "--source", "sacct", "--json", dsn=db_dsn, tmp=tmp_path)
    assert listed.returncode == 0, listed.stderr
    shown = json.loads(listed.stdout)
    assert sorted(p["origin"] for p in shown) == sorted(o for o, _, _ in problems)
    assert any("UID 4294967296 is out of range" in p["reason"] for p in shown)
    assert any(p["record"].startswith("56|56|job|") for p in shown)


@pytest.mark.pg
def test_show_takes_het_components_and_array_tasks_by_their_display_ids(db_dsn, tmp_path):
    text = "\n".join([
        HEADER,
        row(JobID="1853+0", JobIDRaw="1853", JobName="het"),
        row(JobID="1853+1", JobIDRaw="1854", JobName="het", NNodes="2",
            NodeList="node[02-03]"),
        row(JobID="123_4", JobIDRaw="130", JobName="arr"),
        row(JobID="123_5", JobIDRaw="131", JobName="arr"),
    ]) + "\n"
    assert _jobio("jobs", "import", "--tz", "UTC", "-", dsn=db_dsn, tmp=tmp_path,
                  stdin=text.encode()).returncode == 0

    def shown(*args: str) -> list[str]:
        proc = _jobio(*args, "-P", "-n", "-o", "JobID,JobIDRaw,NNodes", dsn=db_dsn,
                      tmp=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().split()

    assert shown("show", "1853+1") == ["1853+1|1854|2"]
    assert shown("1853+1") == ["1853+1|1854|2"]
    assert shown("show", "1854") == ["1853+1|1854|2"]
    assert shown("show", "1853") == ["1853+0|1853|1", "1853+1|1854|2"]
    assert shown("show", "123_4") == ["123_4|130|1"]
    assert shown("123_4.batch") == ["123_4|130|1"]
    assert shown("show", "123") == ["123_4|130|1", "123_5|131|1"]
    for bad in ("٣", "1853+x"):
        proc = _jobio("show", bad, dsn=db_dsn, tmp=tmp_path)
        assert proc.returncode == 2 and b"not a job id" in proc.stderr


@pytest.mark.pg
def test_jobs_sync_keeps_the_lines_sacct_printed_but_could_not_be_stored(db_dsn, tmp_path):
    out = tmp_path / "sacct.txt"
    out.write_bytes("\n".join([HEADER, row(**ids(61)), row(**ids(62), UID="²"),
                               row(**ids(63), JobName="\udcfe")]).encode(
        "utf-8", "surrogateescape") + b"\n")
    sacct = tmp_path / "sacct"
    sacct.write_text(f"#!/bin/sh\ncat {out}\n")
    sacct.chmod(0o755)
    proc = _jobio("jobs", "sync", "--since", "now-1day", "--sacct", str(sacct), dsn=db_dsn,
                  tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"imported 2 jobs" in proc.stdout and b"skipped 1 bad line" in proc.stdout
    with psycopg.connect(db_dsn) as conn:
        names = dict(conn.execute("SELECT job_raw, name FROM job"))
        reasons = [r for (r,) in conn.execute("SELECT reason FROM problem WHERE source = 'sacct'")]
    assert names == {61: "job", 63: "\\xfe"}
    assert reasons == ["UID '²' is not a number"]
    again = _jobio("jobs", "sync", "--since", "now-1day", "--sacct", str(sacct), dsn=db_dsn,
                   tmp=tmp_path)
    assert again.returncode == 0 and b"skipped 1 bad line" in again.stdout
    with psycopg.connect(db_dsn) as conn:  # the next run meets the same line: kept once
        assert conn.execute("SELECT count(*) FROM problem").fetchone() == (1,)


@pytest.mark.pg
def test_a_record_the_database_refuses_costs_only_that_record(db_dsn):
    from slurm_io.jobs.store import upsert_isolated

    (good,), _ = parse_sacct("\n".join([HEADER, row(**ids(71))]), tz=UTC)
    # values no checked intake produces, as a new source might hand them over
    records = [good, good._replace(job=72, jobid="72", uid=2**31),
               good._replace(job=73, jobid="73", name="a\x00b"),
               good._replace(job=74, jobid="74", work_dir="x\udcffy"),
               good._replace(job=75, jobid="75")]
    with psycopg.connect(db_dsn) as conn:
        counts, refused = upsert_isolated(conn, records, source="sacct")
        stored = sorted(j for (j,) in conn.execute("SELECT job_raw FROM job"))
    assert stored == [71, 75] and counts.inserted == 2
    reasons = {p.origin: p.reason for p in refused}
    assert sorted(reasons) == ["job 72", "job 73", "job 74"]
    # checked before COPY: psycopg's C binary COPY would store uid 2^31 as -2^31
    assert "uid 2147483648 does not fit its column" in reasons["job 72"]
    assert reasons["job 73"].startswith("refused by the database")
    assert reasons["job 74"].startswith("refused by the database: UnicodeEncodeError")


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_real_hook_environments_of_het_components_and_arrays_agree_with_sacct(release):
    """Captures of a real Slurm (../shared/fixtures/slurm/<release>): the EpilogSlurmctld
    environment of every job, het components 9+0 and 9+1 and the non-ASCII name included,
    gives the record sacct's line gives."""
    base = shared_file("fixtures", "slurm", release)
    from slurm_io.jobs.hookenv import record_from_hook_env

    sacct, problems = parse_sacct((base / "sacct_brief_alloc.psv").read_text())
    assert problems == []
    by_job = {r.job: r for r in sacct}
    assert (by_job[9].jobid, by_job[10].jobid) == ("9+0", "9+1")
    seen = set()
    for path in sorted((base / "dumps").glob("epilog_slurmctld.*.ctld.env")):
        env = {}
        for line in path.read_bytes().decode("utf-8", "surrogateescape").splitlines():
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                env[key] = value
        hook = record_from_hook_env(env)
        s = by_job[hook.job]
        assert (hook.jobid, hook.array_job, hook.array_task, hook.uid, hook.user,
                hook.account, hook.name, hook.nodes, hook.work_dir) == (
            s.jobid, s.array_job, s.array_task, s.uid, s.user, s.account, s.name, s.nodes,
            s.work_dir), path.name
        seen.add(hook.jobid)
    assert {"9+0", "9+1", "5_1"} <= seen
