"""A job that began inside a blind delta's read interval can explain up to its phase's rate
x its overlap, on whichever OST (attribute.phases.reach_of; rules 2 and 3), in tables.

The frame of test_phases.py: node n1, uid 1000; the blind delta is (4000, 4120] on
fs-OST0000; the uid's OST activity on the node was blind from 3880 to 4240. A farm task
that starts at 4060 reads its input right away; its first rows, as the ids come back,
show the OSTs it went on using, not the one its start-up read used.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.bursts import beyond_rates
from slurm_io.attribute.evidence import EVIDENCE, capped, split
from slurm_io.attribute.phases import meeting, reach_of
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import WRITE, A, ev, row
from tests.attribute.test_phases import DELTA, STRETCH, around

LATE = JobWindow(3, 1000, ("n1",), 4060.0, 10000.0)  # began inside the read interval
EARLY = JobWindow(4, 1000, ("n1",), 3950.0, 10000.0)  # inside the stretch, before the read
RUNS = {1: (0.0, 10000.0), 3: (4060.0, 10000.0), 4: (3950.0, 10000.0)}

# case: (the candidates' rows, what each can explain in the delta)
REACH = {
    # 12000 bytes in the 120-s read after the stretch: 100 bytes/s over 60 s of the delta
    "a job begun inside the read: its phase's rate x its overlap, on an OST it never showed":
        (around(3, target="fs-OST0001", before=(0, 0)), {3: 6000.0}),
    # 200 bytes/s on its two OSTs together: all of it could have gone to this one
    "its rate on all its OSTs together": (
        around(3, target="fs-OST0001", before=(0, 0))
        + around(3, target="fs-OST0002", before=(0, 0)), {3: 12000.0}),
    # job 4 began at 3950, before the read interval: its OSTs are not the question here
    "a job begun before the read interval: not reached": (
        around(4, target="fs-OST0001", before=(0, 0)), {}),
    # a visible gap of compute after the stretch: its phase did not begin at its start
    "a job whose phase began after its start: nothing": (
        (row(4480, 4600, job=3, target="fs-OST0001", wb=12000),), {}),
    "a job with no rows: nothing": ((), {}),
}


@pytest.mark.parametrize("case", REACH.values(), ids=REACH.keys())
def test_what_a_job_begun_inside_the_read_can_explain(case):
    rows, want = case
    found = meeting(DELTA, WRITE, [A, LATE, EARLY], RUNS, ev(*rows), STRETCH)
    assert reach_of(DELTA, found, RUNS) == pytest.approx(want)


def test_no_phases_no_reach():
    assert reach_of(DELTA, None, RUNS) == {}


# case: (reach of job 3, what jobs 3 (rated: 10 expected, 100 at the edges) and 1 (idle by
# its id) are given of a 1000-byte delta)
BEYOND = {
    "without reach: twice its edge rate, the rest to the idle": (None, {3: 200.0, 1: 800.0}),
    "its reach when above twice its edge rate, the rest to the idle": (
        {3: 900.0}, {3: 900.0, 1: 100.0}),
    "its reach below twice its edge rate: the doubled rate stands": (
        {3: 150.0}, {3: 200.0, 1: 800.0}),
    # all of it within what job 3 can explain: the weights stand (job 3 has them all)
    "its reach above the delta: the weights stand": ({3: 1200.0}, {3: 10.0, 1: 0.0}),
    "a reach of the idle one's own is not a rate": ({1: 900.0}, {3: 200.0, 1: 800.0}),
}


@pytest.mark.parametrize("case", BEYOND.values(), ids=BEYOND.keys())
def test_a_burst_goes_to_the_idle_after_what_each_can_explain(case):
    reach, want = case
    got = beyond_rates(1000.0, {3: 10.0, 1: 0.0}, frozenset(), {1: 120.0, 3: 60.0},
                       {3: 100.0}, {}, reach)
    assert got == pytest.approx(want)


def test_a_start_up_read_on_an_ost_the_task_never_showed_is_the_tasks():
    # job 1 ran all along and did nothing by its id near the stretch; job 3 began at 4060
    # and, as the ids came back, read on fs-OST0001 at 1200 bytes/s (60000 bytes in the
    # 50 s its entry was updated): the 70000 bytes read on fs-OST0000 in the delta fit in
    # what its phase moves in its 60 s there (72000). Held to twice what its rate over the
    # ten minutes around predicts (15000), it had 3/14 of them, and job 1, whose rows say
    # nothing at all, the rest
    rows = (row(4240, 4360, job=3, target="fs-OST0001", rb=60000, last=4290),)
    s = split(row(4000, 4120, rb=70000), 0, [A, LATE], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 3: 1.0})


@pytest.mark.parametrize("reach, want", [
    (None, {1: 2400 / 62400, 3: 60000 / 62400}),  # both over their caps: shared by them
    ({3: 72000.0}, {1: 2400 / 70000, 3: 1 - 2400 / 70000}),
])
def test_the_cap_of_a_job_begun_inside_the_read_is_at_least_its_reach(reach, want):
    # job 3 read 500 bytes/s at most by its id, job 1 10: of 70000 bytes, job 3 may keep
    # twice 500 x 60 s (60000) or its reach (72000), job 1 twice 10 x 120 s (2400); what
    # job 1 can not have done goes to job 3 where its reach allows it
    e = ev(row(4240, 4360, job=3, target="fs-OST0001", rb=60000), row(1000, 1120, job=1,
                                                                      rb=1200))
    got = capped(row(4000, 4120, rb=70000), 0, {1: 0.1, 3: 0.9}, {1: 120.0, 3: 60.0}, e,
                 reach=reach)
    assert got == pytest.approx(want)
