"""Records of one job id: the same run or another (jobs.runs, pure)."""

from __future__ import annotations

import pytest

from slurm_io.jobs.runs import latest_per_run, same_run
from slurm_io.model import JobRecord


def rec(job=7, *, cluster="alpha", start=None, sluid=None, state="RUNNING") -> JobRecord:
    return JobRecord(job, str(job), None, None, 1000, "u", "a", "p", "n", ("n1",), 1.0, start,
                     None, state, None, None, None, "sacct", sluid, cluster)


CASES = [
    ("same id, same start", rec(start=10), rec(start=10), True),
    ("same id, another start (requeued)", rec(start=10), rec(start=20), False),
    ("same SLUID, start unknown on one", rec(sluid="s1"), rec(sluid="s1", start=20), True),
    ("another SLUID (requeued), same start", rec(sluid="s1", start=10),
     rec(sluid="s2", start=10), False),
    ("one SLUID missing (24.11 hook): starts decide", rec(sluid="s1", start=10),
     rec(start=10), True),
    ("no start and no SLUID: the latest run's", rec(start=10), rec(), True),
    ("another cluster", rec(start=10), rec(start=10, cluster="beta"), False),
    ("another id", rec(start=10), rec(job=8, start=10), False),
]


@pytest.mark.parametrize(("what", "a", "b", "same"), CASES, ids=[c[0] for c in CASES])
def test_two_records_are_one_run_when_cluster_id_and_sluid_or_start_agree(what, a, b, same):
    assert same_run(a, b) is same and same_run(b, a) is same


def test_sacct_duplicates_keep_each_run_and_the_last_line_of_a_run_wins():
    first = rec(start=10, state="RUNNING")
    first_final = rec(start=10, state="REQUEUED")
    second = rec(start=20, state="COMPLETED")
    other = rec(start=10, cluster="beta", state="FAILED")
    assert latest_per_run([first, second, first_final, other]) == [first_final, second, other]
