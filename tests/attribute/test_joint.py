"""A phase shown on the MDT only gets its rate on a blind OST from that OST's course over the
stretch, where the course rules a phase out (attribute.joint), in tables.

Node n1, uid 1000. Two tasks of a farm begin at 3900, inside a stretch of blind OSTs (3880
to 4360: four reads of 120 s); their MDT rows (by their ids) show how long each read: task
3 until 4120, task 4 until 4360. Neither shows an OST row by its id. Each read its own OST
at 100 bytes/s: task 3 fs-OST0001, task 4 fs-OST0000. The delta weighed is (4000, 4120]
on fs-OST0000: both tasks were reading then, by their MDT operations alike.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.joint import course, filled, rules_out
from slurm_io.attribute.leaks import NodeBlind
from slurm_io.attribute.phases import meeting
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, A, ev, row

MDT, OST0, OST1 = "fs-MDT0000", "fs-OST0000", "fs-OST0001"
STRETCH = [(3880.0, 4360.0)]
READS = ((3880, 4000), (4000, 4120), (4120, 4240), (4240, 4360))
SHORT = JobWindow(3, 1000, ("n1",), 3900.0, 10000.0)
LONG = JobWindow(4, 1000, ("n1",), 3900.0, 10000.0)
RUNS = {1: (0.0, 10000.0), 3: (3900.0, 10000.0), 4: (3900.0, 10000.0)}
DELTA = row(4000, 4120, rb=12000)


def mdt(job, until):
    """The task's MDT rows by its id, read after read, until `until`."""
    return [row(t0, t1, job=job, target=MDT, opens=50) for t0, t1 in READS if t0 < until]


def blind(target, per_read):
    """The uid's `:uid:host` reads of `target` in the stretch (nothing where 0)."""
    return [row(t0, t1, target=target, rb=b) for (t0, t1), b in zip(READS, per_read,
                                                                      strict=True) if b]


# 100 bytes/s from 3900: 10000 in the first read, 12000 in each read after while reading
FARM = blind(OST0, (10000, 12000, 12000, 12000)) + blind(OST1, (10000, 12000, 2000, 0))


def fill(rows, blind_rows, candidates=(SHORT, LONG), delta=DELTA, stretch=STRETCH):
    met = meeting(delta, READ, list(candidates), RUNS, ev(*rows), stretch)
    return met, filled(delta, READ, met, RUNS, NodeBlind("n1", blind_rows), stretch)


def rates(met):
    return {j: [p.rate for p, _ in v] for j, v in met.items()}


def test_each_mdt_only_phase_gets_the_rate_its_osts_course_fits():
    met, got = fill(mdt(3, 4120) + mdt(4, 4360), FARM)
    assert rates(met) == {3: [None], 4: [None]}
    assert rates(got) == {3: [pytest.approx(0.0, abs=1e-6)], 4: [pytest.approx(100.0)]}
    assert all(p.osts == frozenset({OST0}) for v in got.values() for p, _ in v)


def test_a_phase_of_known_rate_is_taken_off_the_course_first():
    # job 1 read fs-OST0000 by its id at 50 bytes/s on both sides of the stretch: its
    # phase, bridged over the stretch, explains every blind byte there, and task 4, whose
    # MDT operations span the stretch, is ruled out of the OST
    own = [row(3760, 3880, job=1, target=OST0, rb=6000), row(4360, 4480, job=1, target=OST0,
                                                               rb=6000)]
    course_rows = blind(OST0, (6000, 6000, 6000, 6000))
    _, got = fill(own + mdt(4, 4360), course_rows, candidates=(A, LONG))
    assert rates(got) == {1: [50.0], 4: [pytest.approx(0.0, abs=1e-6)]}


# case: (MDT rows, blind reads, stretch): where the course does not say, `met` stands
UNCHANGED = {
    # both tasks read over the same reads: nothing tells which read fs-OST0000
    "two phases over the same reads": (mdt(3, 4360) + mdt(4, 4360), FARM, STRETCH),
    # the stretch is the delta's read alone: one read for two unknown rates
    "fewer reads than phases + 1": (mdt(3, 4120) + mdt(4, 4360), [DELTA],
                                    [(4000.0, 4120.0)]),
}


@pytest.mark.parametrize("case", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_where_the_course_cannot_tell_the_phases_apart_nothing_is_filled(case):
    rows, blind_rows, stretch = case
    met, got = fill(rows, blind_rows, stretch=stretch)
    assert got == met


def test_without_the_nodes_blind_reads_nothing_is_filled():
    met = meeting(DELTA, READ, [SHORT, LONG], RUNS, ev(*mdt(3, 4120), *mdt(4, 4360)), STRETCH)
    assert filled(DELTA, READ, met, RUNS, None, STRETCH) is met


# case: (blind reads (start, end, bytes), blind intervals, the course over (3880, 4360))
COURSE = {
    "the blind reads as they are": (
        [(3880, 4000, 5.0), (4000, 4120, 6.0)], [(3880.0, 4120.0)],
        [(3880, 4000, 5.0), (4000, 4120, 6.0)]),
    # 240 s blind with no read of the OST: two reads of nothing
    "a blind stretch with no read of the OST: reads of nothing": (
        [(3880, 4000, 5.0)], [(3880.0, 4240.0)],
        [(3880, 4000, 5.0), (4000, 4120, 0.0), (4120, 4240, 0.0)]),
    "a gap shorter than MIN_GAP: nothing added": (
        [(3880, 4000, 5.0), (4030, 4150, 6.0)], [(3880.0, 4150.0)],
        [(3880, 4000, 5.0), (4030, 4150, 6.0)]),
    # outside the blind intervals the ids were printed: no read of nothing there
    "no read of nothing outside the blind intervals": (
        [(3880, 4000, 5.0)], [(3880.0, 4000.0), (4240.0, 4360.0)],
        [(3880, 4000, 5.0), (4240, 4360, 0.0)]),
}


@pytest.mark.parametrize("case", COURSE.values(), ids=COURSE.keys())
def test_the_course_of_an_ost_over_the_stretch(case):
    reads, intervals, want = case
    got = course([(a, b, v, 0.0) for a, b, v in reads], READ, 3880.0, 4360.0, intervals)
    assert got == want  # whole seconds: exact


@pytest.mark.parametrize("target, owner", [(OST0, 4), (OST1, 3)])
def test_a_farm_tasks_blind_read_goes_to_the_task_whose_span_its_course_follows(target,
                                                                                 owner):
    # by their MDT operations in the delta's read the two tasks are alike; fs-OST0000 was
    # still read after task 3's MDT operations stopped, fs-OST0001 was not
    delta = row(4000, 4120, rb=12000, target=target)
    s = split(delta, READ, [SHORT, LONG], ev(*mdt(3, 4120), *mdt(4, 4360)), STRETCH,
              now=20000, leaks=NodeBlind("n1", FARM))
    assert s.rule == EVIDENCE
    assert s.fractions[owner] == pytest.approx(1.0, abs=1e-6)


def test_a_fit_in_which_every_phase_read_the_ost_leaves_the_rules_to_weigh():
    # both tasks read fs-OST0000: task 3 at 50 bytes/s until 4120, task 4 at 100 until 4360;
    # the fit tells their rates apart, but rules nobody out: one OST's course is too noisy
    # for shares (the module's docstring)
    both = blind(OST0, (15000, 18000, 13000, 12000))
    met, got = fill(mdt(3, 4120) + mdt(4, 4360), both)
    assert got == met


D = row(4000, 4120, rb=12000)
FOUR = [(3880.0, 4000.0, 0.0), (4000.0, 4120.0, 12000.0), (4120.0, 4240.0, 12000.0),
        (4240.0, 4360.0, 12000.0)]
# case: (reads, spans per phase, fitted rates, known in the delta, ruled out?)
RULES_OUT = {
    "a phase fitted to nothing over three reads beside the delta": (
        FOUR, [[(3880.0, 4360.0)], [(3880.0, 4140.0)]], [100.0, 0.0], 0.0, True),
    # a lull of one read on this OST while the phase moved bytes elsewhere: not enough
    "a phase fitted to nothing from one read beside the delta only": (
        FOUR, [[(4000.0, 4360.0)], [(3900.0, 4110.0)]], [100.0, 0.0], 0.0, False),
    "every phase fitted to a share of the delta": (
        FOUR, [[(3880.0, 4360.0)], [(3880.0, 4140.0)]], [100.0, 20.0], 0.0, False),
    "a phase under the share only beside a phase of known rate": (
        FOUR, [[(3880.0, 4360.0)]], [4.0], 12000.0, True),
    "nothing expected in the delta at all": (
        FOUR, [[(3880.0, 4360.0)], [(3880.0, 4140.0)]], [0.0, 0.0], 0.0, False),
    "two phases ruled out, one of them by one read beside the delta": (
        FOUR, [[(3880.0, 4360.0)], [(4000.0, 4250.0)], [(3900.0, 4110.0)]],
        [100.0, 0.0, 0.0], 0.0, False),
}


@pytest.mark.parametrize("case", RULES_OUT.values(), ids=RULES_OUT.keys())
def test_the_fit_is_used_only_where_it_rules_a_phase_out_on_reads_beyond_the_delta(case):
    reads, spans, rates, known, want = case
    assert rules_out(D, reads, spans, rates, known) is want
