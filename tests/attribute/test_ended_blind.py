"""A job that ended inside the blind stretch after the delta is expected at least its
current phase's rate where its last OST row by its id before the delta is on the delta's
own OST and none follows (attribute.readings.ended_blind, rule 1), in tables.

The frame of test_phases.py: node n1, uid 1000; the blind delta is (4000, 4120] on
fs-OST0000, inside a blind stretch (3600, 4600). No read after the stretch can show such a
job going on, as `continuing` reads one: the last row it printed is all there is of its
phase, unless it printed another OST since (it moved on) or ended before the delta.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.readings import cut_short, ended_blind
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, WRITE, B, ev, row
from tests.attribute.test_phases import DELTA

OST0, OST1, OST2, MDT = "fs-OST0000", "fs-OST0001", "fs-OST0002", "fs-MDT0000"
BLIND = [(3600.0, 4600.0)]
SLIVER_ROW = row(3605, 3655, job=1, rb=3000)  # read on the delta's OST as the ids went

# case: (the rows of job 1, when it ended, the candidates `continuing` named, what
# `ended_blind` gives of its current rate, 60)
ENDED = {
    "ended inside the stretch, last read on the delta's OST": (
        (SLIVER_ROW,), 4400.0, (), {1: 60.0}),
    "ended within a collector period of the stretch's end": (
        (SLIVER_ROW,), 4700.0, (), {1: 60.0}),
    "ended a read after the stretch: the read after could show it": (
        (SLIVER_ROW,), 4800.0, (), {}),
    "ended before the delta did": ((SLIVER_ROW,), 4100.0, (), {}),
    "its last read before was on another OST: it moved on": (
        (SLIVER_ROW, row(3700, 3750, job=1, target=OST1, rb=3000)), 4400.0, (), {}),
    "an OST row by its id after the delta": (
        (SLIVER_ROW, row(4200, 4250, job=1, target=OST1, rb=3000)), 4400.0, (), {}),
    "files opened on the MDT after it say nothing of the OST": (
        (SLIVER_ROW, row(4200, 4250, job=1, target=MDT, opens=9)), 4400.0, (), {1: 60.0}),
    "no OST row before the delta": (
        (row(3605, 3655, job=1, target=MDT, opens=9),), 4400.0, (), {}),
    "already continuing: its read after says more": ((SLIVER_ROW,), 4400.0, (1,), {}),
}


@pytest.mark.parametrize("case", ENDED.values(), ids=ENDED.keys())
def test_a_job_ended_in_the_stretch_keeps_the_rate_of_its_last_read_there(case):
    rows, end, going, want = case
    got = ended_blind(DELTA, {1: (0.0, end)}, BLIND, {1: 60.0}, going, ev(*rows))
    assert got == pytest.approx(want)


def test_no_current_phase_no_rate():
    assert ended_blind(DELTA, {1: (0.0, 4400.0)}, BLIND, {}, (), ev(SLIVER_ROW)) == {}


def test_a_delta_of_no_node_has_none_ended():
    assert ended_blind(DELTA._replace(node=None), {1: (0.0, 4400.0)}, BLIND, {1: 60.0}, (),
                       ev(SLIVER_ROW)) == {}


def test_a_blind_read_is_the_job_reading_there_as_the_ids_went_missing_until_it_ended():
    # Dense seed 2, node015: job 3482924 read OST0000 in a 53 s row as the ids went missing
    # and ended 930 s later, inside the stretch; job 3482922 had read OST0002 before it and
    # read OST0000 after it. Every blind read of OST0000 went to the second (rule 1: the
    # first's only row there lies in the stretch), where 0.76-0.87 was the first's. Here
    # job 1 reads fs-OST0001 until 3600, then fs-OST0000 (3000 in 50 s) and ends at 4400;
    # job 2 reads fs-OST0002 until 3600 and fs-OST0000 from 4600, 3600 a read. The ids came
    # back for two 50 s slivers inside the stretch, where job 2 printed nothing: its rows
    # on the two sides are not one phase (attribute.phases), as there.
    rows = [row(t, t + 120, job=1, target=OST1, rb=6000) for t in range(3120, 3600, 120)]
    rows += [SLIVER_ROW]
    rows += [row(t, t + 120, job=2, target=OST2, rb=6000) for t in range(3120, 3600, 120)]
    rows += [row(t, t + 120, job=2, rb=3600) for t in range(4600, 5200, 120)]
    first = JobWindow(1, 1000, ("n1",), 0.0, 4400.0)
    blind = [(3600.0, 3880.0), (3930.0, 4280.0), (4330.0, 4600.0)]
    s = split(row(4000, 4120, rb=9000), READ, [first, B], ev(*rows), blind, now=20000)
    assert s.rule == EVIDENCE
    # job 1: 60 a second over the delta's 120 s; job 2: rule 1's rate over the ±600 s it
    # was seen in (200 s before, the two slivers, 120 s after: one read of 3600 here)
    first_part, second_part = 60.0 * 120, 3600.0 / 420 * 120
    assert s.fractions == pytest.approx({1: first_part / (first_part + second_part),
                                         2: second_part / (first_part + second_part)})


# A job of no phase inside the stretch whose last read by its id, on the delta's own OST,
# was cut short by the ids going missing (attribute.readings.cut_short): 6000 in 120 s.
LAST_READ = row(3480, 3600, job=1, rb=6000, wb=1200)

# case: (the rows of job 1, when it ended, those with a current phase, those `continuing`
# named, what `cut_short` gives of its read rate)
CUT = {
    "its read there ended as the ids went missing": ((LAST_READ,), 4400.0, (), (), {1: 50.0}),
    "ended within NEAR of the stretch's start": (
        (row(3440, 3560, job=1, rb=6000),), 4400.0, (), (), {1: 50.0}),
    "ended more than NEAR before it: the phase had ended": (
        (row(3400, 3520, job=1, rb=6000),), 4400.0, (), (), {}),
    "a read shorter than MIN_OBSERVED / 4 is not a rate": (
        (row(3560, 3600, job=1, rb=6000),), 4400.0, (), (), {}),
    "its last read was on another OST": (
        (row(3360, 3480, job=1, rb=6000), row(3480, 3600, job=1, target=OST1, rb=6000)),
        4400.0, (), (), {}),
    "an OST row by its id since": (
        (LAST_READ, row(4200, 4250, job=1, target=OST1, rb=3000)), 4400.0, (), (), {}),
    "files opened on the MDT since say nothing of the OST": (
        (LAST_READ, row(4200, 4250, job=1, target=MDT, opens=9)), 4400.0, (), (), {1: 50.0}),
    "ended before the delta did": ((LAST_READ,), 4100.0, (), (), {}),
    "ended a read after the stretch": ((LAST_READ,), 4800.0, (), (), {}),
    "a phase inside the stretch: ended_blind's": ((LAST_READ,), 4400.0, (1,), (), {}),
    "already continuing: its read after says more": ((LAST_READ,), 4400.0, (), (1,), {}),
}


@pytest.mark.parametrize("case", CUT.values(), ids=CUT.keys())
def test_a_job_whose_read_the_ids_cut_short_keeps_its_rate_until_it_ended(case):
    rows, end, current, going, want = case
    window = JobWindow(1, 1000, ("n1",), 0.0, end)
    got = cut_short(DELTA, READ, [window], {1: (0.0, end)}, BLIND, current, going,
                    ev(*rows))
    assert got == pytest.approx(want)


def test_the_rate_cut_short_is_of_the_delta_s_own_facet():
    window = JobWindow(1, 1000, ("n1",), 0.0, 4400.0)
    got = cut_short(DELTA, WRITE, [window], {1: (0.0, 4400.0)}, BLIND, (), (), ev(LAST_READ))
    assert got == pytest.approx({1: 10.0})


def test_a_blind_read_is_the_job_reading_there_when_the_ids_went_missing_not_a_task_begun():
    # Dense seed 2, node015: job 3482911 read OST0005 at ~10 MB/s in 120 s reads until the
    # ids went missing, and ended 280 s later; task 3483042 began inside the next read and
    # read OST0005 from 420 s after it. Its phase there, bridged back to its start, was
    # the only one meeting the read, and the first job's read, ended as the rows show it,
    # expected nothing: the task took 0.30 of a 1.2 GiB blind read, every byte the first's.
    # Here job 1 reads fs-OST0000, 6000 a read, until 3600 and ends at 4400; job 2 begins
    # at 4060 and reads fs-OST0000 from 4600, 1200 a read.
    rows = [row(t, t + 120, job=1, rb=6000) for t in range(3000, 3600, 120)]
    rows += [row(t, t + 120, job=2, rb=1200) for t in range(4600, 5200, 120)]
    first = JobWindow(1, 1000, ("n1",), 0.0, 4400.0)
    task = JobWindow(2, 1000, ("n1",), 4060.0, 10000.0)
    s = split(row(4000, 4120, rb=6000), READ, [first, task], ev(*rows), BLIND, now=20000)
    assert s.rule == EVIDENCE
    # the task's phase: 10 a second over its 60 s in the delta; job 1's cut read: 50 a
    # second over the delta's 120 s (before, rule 2 gave it 0.8 by its rate at the edge)
    task_part, first_part = 10.0 * 60, 50.0 * 120
    assert s.fractions == pytest.approx({1: first_part / (first_part + task_part),
                                         2: task_part / (first_part + task_part)})


def test_a_burst_goes_to_the_job_whose_read_the_ids_cut_short_not_to_jobs_never_there():
    # Dense seed 2, node015, 9084-9200: job 3482700 read OST0004 as the ids went missing and
    # ended 6 s after a 1.0 GiB blind read of it; rule 2 held it to twice its rate there
    # and gave the rest, by time, to two jobs that never printed their id on OST0004 (0.13
    # each; truth 1.00 to the first). A job moving the delta's OST as the ids went missing
    # takes the rest of a burst as one moving it right before the delta does (rule 2's
    # `bordering`). Here job 1 reads fs-OST0000, 3600 a read, until 3600 and ends at 4126
    # (twice that a read before 3000: rule 3's cap holds it to no less than the burst);
    # jobs 2 and 3 read fs-OST0001; the blind read of fs-OST0000 is 12000.
    rows = [row(2880, 3000, job=1, rb=7200)]
    rows += [row(t, t + 120, job=1, rb=3600) for t in range(3000, 3600, 120)]
    rows += [row(t, t + 120, job=j, target=OST1, rb=3600)
             for t in (*range(3000, 3600, 120), *range(4600, 5200, 120)) for j in (2, 3)]
    first = JobWindow(1, 1000, ("n1",), 0.0, 4126.0)
    others = [JobWindow(j, 1000, ("n1",), 0.0, 10000.0) for j in (2, 3)]
    s = split(row(4000, 4120, rb=12000), READ, [first, *others], ev(*rows), BLIND, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1.0, 2: 0.0, 3: 0.0})
