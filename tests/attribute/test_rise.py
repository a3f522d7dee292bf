"""Rule 1's last resort (attribute.readings.rise_weights): where no rate tells the
candidates apart, the rise of their activity on the MDT during the delta divides it; where
every one of them rose, by time overlap (each was in an I/O phase; the size of a rise, how
many more files a job opened, says nothing of the bytes it moved)."""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.readings import rise_weights
from tests.attribute.test_evidence import READ, A, B, ev, row

MDT = "fs-MDT0000"

# case: (the delta's read interval, each candidate's rise, the candidates not ruled out,
# the weights)
CASES = {
    "every candidate rose: alike": ((4000, 4120), {1: 0.1, 2: 0.3}, [1, 2], {1: 1.0, 2: 1.0}),
    "one did not: the size tells them apart": ((4000, 4120), {2: 0.3}, [1, 2], {2: 0.3}),
    "one ruled out did not count": ((4000, 4120), {2: 0.3}, [2], {2: 1.0}),
    # an outage's 22-minute read: the rise says who was in an I/O phase longer
    "an outage's long interval: the size": ((4000, 5320), {1: 0.1, 2: 0.3}, [1, 2],
                                            {1: 0.1, 2: 0.3}),
    "no rise at all": ((4000, 4120), {}, [1, 2], {}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_rise_counts_by_its_size_only_where_it_tells_the_candidates_apart(case):
    (a, b), rise, jobs, weights = case
    assert rise_weights(row(a, b, rb=1000), rise, jobs) == weights


def test_two_tasks_reading_while_blind_share_by_time_whatever_files_they_opened():
    # neither job read by its id within an hour (no rate); on the MDT, not blind, both open
    # files only during the blind read, job 2 three times as many: both entered an I/O
    # phase then. Dense seed 1, node029: two farm tasks' start-up reads (83.8 and 51.6 GiB)
    # went three quarters to the task opening more files, which read less. On the code
    # before, job 2 got 0.75 here.
    e = ev(row(4000, 4120, job=1, target=MDT, opens=10),
           row(4000, 4120, job=2, target=MDT, opens=30))
    s = split(row(4000, 4120, rb=800), READ, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.5, 2: 0.5})


def test_in_an_outage_long_read_the_job_whose_activity_rose_more_gets_more():
    e = ev(row(4000, 5320, job=1, target=MDT, opens=10),
           row(4000, 5320, job=2, target=MDT, opens=30))
    s = split(row(4000, 5320, rb=800), READ, [A, B], e, [], now=20000)
    assert s.fractions == pytest.approx({1: 0.25, 2: 0.75})
