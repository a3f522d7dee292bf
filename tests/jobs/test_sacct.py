"""parse_sacct on sacct -P text: every quirk with its own sample, plus the real 22.05 outputs."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from slurm_io.jobs.sacct import parse_sacct
from slurm_io.slurm.fields import SACCT_FIELDS
from slurm_io.slurm.nodes import expand_nodes
from tests.shared import shared_file

FIXTURES = ("fixtures", "slurm", "22.05")  # in ../shared
HEADER = "|".join(SACCT_FIELDS)


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def row(**kw: str) -> str:
    """One sacct line in SACCT_FIELDS order; unspecified fields as a finished 1-node job."""
    base = {
        "JobID": "100", "JobIDRaw": "100", "JobName": "job", "User": "alice", "UID": "1002",
        "Account": "research", "Partition": "debug", "State": "COMPLETED",
        "ExitCode": "0:0", "Submit": "2026-11-21T05:30:00", "Start": "2026-11-21T05:30:01",
        "End": "2026-11-21T05:30:09", "NNodes": "1", "NodeList": "node01",
        "WorkDir": "/home/alice", "Cluster": "lab", "SubmitLine": "sbatch job.sh",
    }
    base.update(kw)
    return "|".join(base[f] for f in SACCT_FIELDS)


def parse(*lines: str, header: str = HEADER, **kw):
    return parse_sacct("\n".join([header, *lines]) + "\n", tz=UTC, **kw)


def test_a_plain_job_becomes_one_record_with_every_field():
    (r,), problems = parse(row())
    assert problems == []
    assert r.job == 100 and r.jobid == "100" and r.array_job is None and r.array_task is None
    assert (r.uid, r.user, r.account, r.partition, r.name) == (
        1002, "alice", "research", "debug", "job")
    assert r.nodes == ("node01",)
    assert (r.submit, r.start, r.end) == (
        utc("2026-11-21T05:30:00"), utc("2026-11-21T05:30:01"), utc("2026-11-21T05:30:09"))
    assert (r.state, r.exit_code) == ("COMPLETED", "0:0")
    assert (r.work_dir, r.submit_line, r.source) == ("/home/alice", "sbatch job.sh", "import")
    assert r.cluster == "lab"


def test_source_is_recorded_as_given():
    (r,), _ = parse(row(), source="sacct")
    assert r.source == "sacct"


def test_columns_may_come_in_any_order_and_missing_ones_are_none():
    header = "State|NodeList|JobIDRaw|JobID|End"
    (r,), problems = parse("FAILED|c[01-02]|42|42|2026-11-21T06:00:00", header=header)
    assert problems == []
    assert (r.job, r.state, r.nodes, r.end) == (42, "FAILED", ("c01", "c02"),
                                                utc("2026-11-21T06:00:00"))
    assert r.uid is None and r.user is None and r.submit is None and r.submit_line is None


def test_step_lines_are_skipped_when_the_allocation_line_is_there():
    jobs, problems = parse(
        row(JobID="7", JobIDRaw="7", NNodes="3", NodeList="node[01-03]"),
        row(JobID="7.batch", JobIDRaw="7.batch", User="", UID="", NodeList="node01"),
        row(JobID="7.extern", JobIDRaw="7.extern", User="", UID="", NNodes="3",
            NodeList="node[01-03]"),
        row(JobID="7.0", JobIDRaw="7.0", User="", UID="", NNodes="3", NodeList="node[01-03]"),
    )
    assert problems == []
    assert [(j.job, j.jobid, j.user, j.nodes) for j in jobs] == [
        (7, "7", "alice", ("node01", "node02", "node03"))]


def test_steps_without_their_allocation_line_are_merged_into_one_record():
    jobs, problems = parse(
        row(JobID="8.batch", JobIDRaw="8.batch", User="", UID="", State="FAILED",
            ExitCode="3:0", NodeList="node02", Start="2026-11-21T05:30:02",
            End="2026-11-21T05:30:09"),
        row(JobID="8.0", JobIDRaw="8.0", User="", UID="", NNodes="2", NodeList="node[02-03]",
            Start="2026-11-21T05:30:03", End="2026-11-21T05:30:05"),
    )
    assert problems == []
    (j,) = jobs
    assert (j.job, j.jobid, j.state, j.exit_code) == (8, "8", "FAILED", "3:0")
    assert j.nodes == ("node02", "node03")
    assert (j.start, j.end) == (utc("2026-11-21T05:30:02"), utc("2026-11-21T05:30:09"))
    assert j.user is None and j.uid is None


def test_merged_steps_of_a_running_job_have_no_end():
    (j,), _ = parse(
        row(JobID="9.batch", JobIDRaw="9.batch", State="RUNNING", End="Unknown"),
        row(JobID="9.0", JobIDRaw="9.0", State="COMPLETED"),
    )
    assert j.state == "RUNNING" and j.end is None


def test_array_task_is_stored_under_its_raw_id():
    (a, b), _ = parse(row(JobID="5_1", JobIDRaw="7"), row(JobID="5_2", JobIDRaw="5"))
    assert (a.job, a.jobid, a.array_job, a.array_task) == (7, "5_1", 5, "1")
    assert (b.job, b.jobid, b.array_job, b.array_task) == (5, "5_2", 5, "2")


def test_pending_rest_of_an_array_is_kept_under_the_array_id():
    (p,), problems = parse(row(JobID="5_[2-9%2]", JobIDRaw="5", State="PENDING",
                               Start="Unknown", End="Unknown", NodeList="None assigned"))
    assert problems == []
    assert (p.job, p.jobid, p.array_job, p.array_task) == (5, "5_[2-9%2]", 5, "[2-9%2]")
    assert p.nodes == () and p.start is None and p.end is None and p.state == "PENDING"


def test_array_task_without_jobidraw_column_is_a_problem_not_a_guess():
    jobs, problems = parse("5_1|COMPLETED", header="JobID|State")
    assert jobs == []
    assert len(problems) == 1 and "JobIDRaw" in problems[0] and "line 2" in problems[0]


def test_heterogeneous_job_components_use_their_raw_ids():
    (a, b), problems = parse(row(JobID="20+0", JobIDRaw="20"), row(JobID="20+1", JobIDRaw="21"))
    assert problems == []
    assert [(a.job, a.jobid), (b.job, b.jobid)] == [(20, "20+0"), (21, "20+1")]


@pytest.mark.parametrize(("nodelist", "nodes"), [
    ("c[0001-0003,0007]", ("c0001", "c0002", "c0003", "c0007")),
    ("node[01-03],gpu02", ("node01", "node02", "node03", "gpu02")),
    ("node[01-02].cluster.example.org", ("node01", "node02")),
    ("None assigned", ()),
    ("", ()),
])
def test_node_lists_are_expanded_and_shortened(nodelist, nodes):
    n = str(len(nodes)) if nodes else "1"
    (r,), problems = parse(row(NodeList=nodelist, NNodes=n))
    assert r.nodes == nodes and problems == []


def test_cancelled_by_uid_keeps_only_the_state():
    (r,), _ = parse(row(State="CANCELLED by 1003"))
    assert r.state == "CANCELLED"


def test_unknown_and_none_times_are_none():
    (r,), _ = parse(row(Start="None", End="Unknown", Submit=""))
    assert r.submit is None and r.start is None and r.end is None


def test_times_are_local_time_of_the_sacct_machine(monkeypatch):
    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    time.tzset()
    try:
        (r,), _ = parse_sacct(HEADER + "\n" + row(Start="2026-07-01T12:00:00"))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert r.start == utc("2026-07-01T10:00:00")  # CEST is UTC+2


def test_an_explicit_zone_overrides_local_time():
    text = HEADER + "\n" + row(Start="2026-11-21T12:00:00") + "\n"
    (r,), _ = parse_sacct(text, tz=timezone(timedelta(hours=-5)))
    assert r.start == utc("2026-11-21T17:00:00")


def test_epoch_times_are_accepted():
    (r,), _ = parse(row(Start="1795239060"))
    assert r.start == 1795239060.0


def test_a_bad_line_is_reported_and_the_others_are_kept():
    jobs, problems = parse("garbage without bars", row(JobID="1", JobIDRaw="1"),
                           row(JobID="2", JobIDRaw="2", UID="alice"),
                           row(JobID="3", JobIDRaw="3", Start="yesterday"),
                           row(JobID="4", JobIDRaw="4", NodeList="node[01-"),
                           row(JobID="5", JobIDRaw="5"))
    assert [j.job for j in jobs] == [1, 5]
    assert len(problems) == 4
    assert any("UID 'alice' is not a number" in p for p in problems)
    assert any("bad time" in p for p in problems)
    assert any("bad node list" in p for p in problems)
    assert problems[0].startswith(f"line 2: 1 fields but the header has {len(SACCT_FIELDS)}")


def test_nnodes_disagreeing_with_the_node_list_is_reported_but_kept():
    jobs, problems = parse(row(NNodes="4", NodeList="node[01-03]"))
    assert len(jobs) == 1 and len(problems) == 1 and "NNodes 4" in problems[0]


def test_text_without_header_is_one_problem():
    jobs, problems = parse_sacct(row() + "\n")
    assert jobs == [] and len(problems) == 1 and "header" in problems[0]


def test_empty_text_is_nothing():
    assert parse_sacct("") == ([], [])
    assert parse_sacct(HEADER + "\n") == ([], [])


def test_bar_inside_the_job_name_is_put_back_into_the_name():
    (r,), problems = parse(row(JobName="we|ird", SubmitLine="sbatch -J we|ird x.sh"))
    assert problems == []
    assert r.name == "we|ird" and r.user == "alice" and r.uid == 1002
    assert r.submit_line == "sbatch -J we|ird x.sh"


def test_pipe_in_a_wrapped_command_stays_in_the_submit_line():
    (r,), problems = parse(row(SubmitLine="sbatch --wrap a | b | c"))
    assert problems == [] and r.submit_line == "sbatch --wrap a | b | c"


def test_newline_in_the_submit_line_continues_the_record():
    jobs, problems = parse(row(JobID="1", JobIDRaw="1", SubmitLine="sbatch --wrap echo a\necho b"),
                           row(JobID="2", JobIDRaw="2"))
    assert problems == []
    assert [j.job for j in jobs] == [1, 2]
    assert jobs[0].submit_line == "sbatch --wrap echo a\necho b"


def test_newline_in_the_job_name_continues_the_record():
    (r,), problems = parse(row(JobName="two\nlines"))
    assert problems == [] and r.name == "two\nlines" and r.uid == 1002


def test_parsable_with_trailing_bar_is_read_too():
    text = HEADER + "|\n" + row() + "|\n"
    (r,), problems = parse_sacct(text, tz=UTC)
    assert problems == [] and r.submit_line == "sbatch job.sh"


def test_a_repeated_job_keeps_the_later_line():
    jobs, _ = parse(row(State="REQUEUED"), row(State="COMPLETED"))
    assert [(j.job, j.state) for j in jobs] == [(100, "COMPLETED")]


def test_expand_nodes_uses_hostlist_and_drops_duplicates():
    assert expand_nodes("n[1-2],n1.example.org") == ("n1", "n2")


# -- conformance: the real Slurm 22.05 outputs in ../shared --------------------------------
def _fixture(name: str) -> str:
    return shared_file(*FIXTURES, name).read_text()


EXPECTED_22_05 = {  # JobIDRaw: (jobid, user, uid, state, exit, nodes) from the .psv files
    1: ("1", "alice", 1002, "COMPLETED", "0:0", ("node01",)),
    2: ("2", "alice", 1002, "COMPLETED", "0:0", ("node01",)),
    3: ("3", "alice", 1002, "COMPLETED", "0:0", ("node01", "node02", "node03")),
    4: ("4", "bob", 1003, "FAILED", "3:0", ("node02",)),
    5: ("5", "bob", 1003, "CANCELLED", "0:0", ("node03",)),
    8: ("8", "root", 0, "TIMEOUT", "0:0", ("node02",)),
    9: ("6_1", "bob", 1003, "COMPLETED", "0:0", ("node04",)),
    6: ("6_2", "bob", 1003, "COMPLETED", "0:0", ("node04",)),
    10: ("10", "alice", 1002, "COMPLETED", "0:0", ("node03", "node04")),
}


@pytest.mark.parametrize("name", ["sacct_alloc.psv", "sacct_steps.psv"])
def test_real_22_05_output_parses_to_the_expected_jobs(name):
    jobs, problems = parse_sacct(_fixture(name), tz=UTC)
    assert problems == []
    got = {j.job: (j.jobid, j.user, j.uid, j.state, j.exit_code, j.nodes) for j in jobs}
    assert got == EXPECTED_22_05
    by_job = {j.job: j for j in jobs}
    assert by_job[9].array_job == 6 and by_job[9].array_task == "1"
    assert by_job[8].end - by_job[8].start == 76  # Elapsed 00:01:16 in the same line
    assert by_job[10].submit_line == (
        "srun -N2 -J srun_direct bash -c echo $SLURMD_NODENAME; sleep 2")


def test_real_22_05_steps_alone_give_the_same_nodes_as_the_allocations():
    text = _fixture("sacct_steps.psv")
    header, *lines = text.splitlines()
    steps_only = "\n".join([header, *(ln for ln in lines if "." in ln.split("|", 1)[0])])
    jobs, problems = parse_sacct(steps_only, tz=UTC)
    assert problems == []
    by_job = {j.job: j for j in jobs}
    assert by_job[3].nodes == ("node01", "node02", "node03")  # union of batch + step 0
    assert by_job[4].state == "FAILED" and by_job[4].exit_code == "3:0"
