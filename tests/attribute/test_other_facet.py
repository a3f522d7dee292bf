"""A job seen by its id moving only the other facet, beside a phase moving the delta's
(attribute.phases.not_busy, attribute.bursts.busy_elsewhere and phase_bounds), in tables.

Node n1, uid 1000, jobs 1-3 run 0-10000 s unless a case says otherwise; the collectors read
every 120 s (test_evidence.py); the blind delta is (4000, 4120] on fs-OST0000. Rule 0 gives
a blind delta to the candidates that did I/O by their id in its read; a job reading by its
id then is busy, but not with the writes, where another candidate's phase was writing.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.bursts import phase_bounds
from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.phases import Phase, not_busy
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, WRITE, A, B, ev, row

OST0, OST1 = "fs-OST0000", "fs-OST0001"
WRITING = Phase(3900.0, 4300.0, 500.0, frozenset({OST1}))
READING = Phase(3700.0, 4200.0, 0.0, frozenset({OST0}))  # 0: no bytes of the facet

# case: (the phases meeting the delta by job, the jobs seen by their id in its read, the
#        jobs whose phases move only the other facet, the jobs rule 0 does not count busy);
#        the delta moved 100000 bytes of the facet: job 2's writing phase can have moved
#        60000 of them in 120 s, twice that explains it
NOT_BUSY = {
    "a reader seen, a writer not: the reader is not busy writing": (
        {1: [(READING, 120.0)], 2: [(WRITING, 120.0)]}, {1}, {1}, {1}),
    "the writer's phase meets it for 90 s: 45000 bytes, twice that is short of it": (
        {1: [(READING, 120.0)], 2: [(WRITING, 90.0)]}, {1}, {1}, set()),
    "a trickle beside it says nothing of the reader": (
        {1: [(READING, 120.0)], 2: [(WRITING._replace(rate=5.0), 120.0)]}, {1}, {1}, set()),
    "both seen: rule 0 weighs them both as before": (
        {1: [(READING, 120.0)], 2: [(WRITING, 120.0)]}, {1, 2}, {1}, set()),
    "the other's phase on the MDT only (rate unknown): the reader stays busy": (
        {1: [(READING, 120.0)], 2: [(Phase(3900.0, 4300.0, None, frozenset()), 120.0)]},
        {1}, {1}, set()),
    "the other's phase moving none of the facet either": (
        {1: [(READING, 120.0)], 2: [(READING, 120.0)]}, {1}, {1, 2}, set()),
    "no phase moving only the other facet": (
        {1: [(WRITING, 120.0)], 2: [(WRITING, 120.0)]}, {1}, set(), set()),
    "no phase meets the delta": (None, {1}, {1}, set()),
}


@pytest.mark.parametrize("case", NOT_BUSY.values(), ids=NOT_BUSY.keys())
def test_a_job_seen_moving_the_other_facet_is_not_busy_beside_a_phase_moving_this_one(case):
    found, seen, none, expected = case
    got = not_busy(found, frozenset(seen), frozenset(none), 100000.0)
    assert got == frozenset(expected)


# case: (the phases meeting the delta by job, the jobs held to their pace, the bounds
#        before, the bounds after)
BOUNDS = {
    "a phase writing elsewhere can explain its rate x its overlap": (
        {1: [(WRITING, 100.0)]}, set(), {}, {1: 50000.0}),
    "a higher bound stays": ({1: [(WRITING, 100.0)]}, set(), {1: 90000.0}, {1: 90000.0}),
    "a job held to its pace (its phase not yet going) is not lifted": (
        {1: [(WRITING, 100.0)]}, {1}, {1: 2000.0}, {1: 2000.0}),
    "a phase moving none of the facet explains none": (
        {2: [(READING, 120.0)]}, set(), {}, {}),
    "a phase on the MDT only: its rate unknown": (
        {2: [(Phase(3900.0, 4300.0, None, frozenset()), 120.0)]}, set(), {}, {}),
    "no phase meets the delta": (None, set(), {3: 10.0}, {3: 10.0}),
    "another's phase on the MDT only meets it: the burst is likelier that job's": (
        {1: [(WRITING, 100.0)], 2: [(Phase(3900.0, 4300.0, None, frozenset()), 120.0)]},
        set(), {}, {}),
    "unless that phase was not yet going (held to its pace)": (
        {1: [(WRITING, 100.0)], 2: [(Phase(4100.0, 4300.0, None, frozenset()), 20.0)]},
        {2}, {}, {1: 50000.0}),
}


@pytest.mark.parametrize("case", BOUNDS.values(), ids=BOUNDS.keys())
def test_a_phase_moving_the_facet_elsewhere_bounds_what_it_can_explain_of_a_burst(case):
    found, later, bounds, expected = case
    assert phase_bounds(found, frozenset(later), bounds) == pytest.approx(expected)


def test_a_blind_read_beside_a_job_writing_by_its_id_goes_to_the_phase_reading():
    # Leaky seed 6, node021: a 33.2 GiB blind read on OST0002 went whole to a job writing by
    # its id on OST0006 in that read (rule 0: the only candidate seen), beside a job whose
    # phase, begun 16 s into the read, read 490 MB/s there from the next read on. Here job
    # 1 writes by its id on fs-OST0001 before, in and after the delta's read; job 2 begins
    # 16 s into it and reads 36000 bytes per read on fs-OST0000 after it.
    late = JobWindow(2, 1000, ("n1",), 4016.0, 10000.0)
    rows = (*[row(t, t + 120, job=1, target=OST1, wb=30000) for t in (3880, 4000, 4120)],
            *[row(t, t + 120, job=2, target=OST0, rb=36000) for t in (4120, 4240)])
    s = split(row(4000, 4120, rb=36000), READ, [A, late], ev(*rows), [(4000.0, 4120.0)],
              now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 2: 1.0})


C = JobWindow(3, 1000, ("n1",), 0.0, 10000.0)


def test_a_blind_write_beside_a_phase_writing_elsewhere_is_not_a_burst_of_an_idle_job():
    # Leaky seed 3, node004: a 56.2 GiB blind write on OST0001 went whole to a job reading
    # there by its id (rule 0); job 7128562's id wrote 12.5 GiB on OST0004 in the 14 s
    # after it, a phase begun inside the delta (phases.begun_inside: 448 MB/s over its
    # rows' 30 s at least, 53.8 GB in the delta). Rule 0 no longer counts the reader busy
    # (not_busy); rule 2 held the writer to twice its rate around (its row too short for
    # an edge rate) and gave the rest to a job with no row near. Here job 1's id writes
    # 13500 bytes on fs-OST0001 in the 14 s after the delta (450 bytes/s, 54000 in it),
    # job 2 reads by its id on fs-OST0000 throughout, job 3 did nothing near it.
    rows = (row(4120, 4134, job=1, target=OST1, wb=13500, last=4134),
            *[row(t, t + 120, job=2, target=OST0, rb=40000) for t in (3880, 4000, 4120)])
    s = split(row(4000, 4120, wb=60000), WRITE, [A, B, C], ev(*rows), [(4000.0, 4120.0)],
              now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[2] == 0.0
    assert s.fractions[1] == pytest.approx(0.9, abs=0.03)
