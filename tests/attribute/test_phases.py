"""Each candidate's current I/O phase rebuilt from its own rows, and the split by the bytes
each phase is expected to move in a blind delta (attribute.phases, rule 1), in tables.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s; the blind delta is (4000, 4120] on
fs-OST0000, 24000 bytes written; the collectors read every 120 s (test_evidence.py). The
uid's OST activity on the node was blind from 3880 to 4240 (three reads): a job writing
12000 bytes per read on fs-OST0000 right before and right after that stretch wrote 100
bytes/s in it, 12000 of them in the delta.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.bursts import FRESH, began_near, busy_elsewhere, loosened, paced_later
from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.phases import (
    LOOSE_PACE,
    Phase,
    expected,
    loose_paces,
    moving_none,
    runs,
    unbounded,
)
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, WRITE, A, B, ev, row

MDT = "fs-MDT0000"
STRETCH = [(3880.0, 4240.0)]
DELTA = row(4000, 4120, wb=24000)
RUNS = {1: (0.0, 10000.0), 2: (0.0, 10000.0)}


def around(job, *, target="fs-OST0000", wb=12000, rb=0, before=(3760, 3880),
           after=(4240, 4360)):
    """The job's rows in the reads right before and right after the blind stretch."""
    return tuple(row(t0, t1, job=job, target=target, wb=wb, rb=rb)
                 for t0, t1 in (before, after) if t1 > t0)


ENDED = around(1, before=(3640, 3760), after=(3760, 3880))  # two reads up to the stretch
# a phase whose rows begin as the stretch ends (4240) began inside it, a collector period
# back (phases.begun_inside): its span reaches 4100, the delta's last 20 s at 100 bytes/s
BACK = 2000.0

# case: (rows of jobs 1 and 2, what the phases expect of each in the delta's bytes written)
EXPECTED = {
    # rows on both sides of the stretch: the ids, not the job, went missing in between
    "a phase on both sides of the stretch is bridged": (around(1), {1: 12000.0, 2: 0.0}),
    "two phases: each at its own rate": (around(1) + around(2, wb=36000),
                                         {1: 12000.0, 2: 36000.0}),
    # 24000 over two OSTs in 240 s: 100 bytes/s, half of it on the delta's OST
    "a phase on two OSTs: half its rate on each": (
        around(1, wb=6000) + around(1, wb=6000, target="fs-OST0001"), {1: 6000.0, 2: 0.0}),
    # job 1 stopped writing before the ids went missing (shown two reads: not just begun,
    # phases.cut_young): compute after it
    "a phase that ended before the stretch moves nothing in it": (
        ENDED + around(2), {1: 0.0, 2: 12000.0}),
    # 120 s with no row before the stretch: a compute gap the blind stretch does not explain
    "a visible gap of compute is not bridged": (
        around(1, before=(3640, 3760)) + around(2), {1: BACK, 2: 12000.0}),
    # the MDT was not blind: its operations by job 1's id show the phase going on
    "MDT rows inside the stretch carry the phase": (
        (*around(1, after=(0, 0)), row(3880, 4000, job=1, target=MDT, opens=5),
         row(4000, 4120, job=1, target=MDT, opens=5), *around(2, before=(0, 0))),
        {1: 12000.0, 2: BACK}),
    "a phase on another OST moves nothing on this one": (
        around(1, target="fs-OST0001") + around(2), {1: 0.0, 2: 12000.0}),
    "the other facet only: a rate of 0 for this one": (
        around(1, wb=0, rb=12000) + around(2), {1: 0.0, 2: 12000.0}),
    # 3000 bytes in a 10-s row count over 30 s: 15000 in 150 s, 100 bytes/s
    "a row cut short counts at least 30 s": (
        around(1, before=(3860, 3870), after=(0, 0), wb=3000) + around(1, before=(0, 0)),
        {1: 12000.0, 2: 0.0}),
    # servers read at different moments: a phase's span reaches 20 s past its last row
    "a phase that ended 10 s before the delta began is given those 10 s": (
        around(1, before=(3870, 3990), after=(0, 0)) + around(2), {1: 1000.0, 2: 12000.0}),
    # one run from 3400: 276000 bytes in the 600 s its rows cover, on two OSTs
    "a run's rate over all its rows, spread over every OST it wrote on": (
        (row(3400, 3520, job=1, target="fs-OST0003", wb=120000),
         row(3520, 3640, job=1, target="fs-OST0003", wb=120000),
         row(3640, 3760, job=1, wb=12000), *around(1)),
        {1: 27600.0, 2: 0.0}),
}


@pytest.mark.parametrize("case", EXPECTED.values(), ids=EXPECTED.keys())
def test_each_candidates_phase_says_what_it_moved_in_the_delta(case):
    rows, want = case
    got = expected(DELTA, WRITE, [A, B], RUNS, ev(*rows), STRETCH)
    assert got == pytest.approx(want)


# case: (rows, blind stretches, delta): where the phases do not weigh the delta
NOTHING = {
    "no candidate has a phase meeting the delta": (ENDED, STRETCH, DELTA),
    "an outage's 22-minute interval: the rows beside it say more": (
        around(1, before=(2640, 2760), after=(4120, 4240)), [(2760.0, 4120.0)],
        row(2760, 4120, wb=24000)),
    # job 1 showed only metadata operations by its id then: its rate is unknown
    "a phase shown on the MDT only meets the delta": (
        (row(3880, 4000, job=1, target=MDT, opens=5),
         row(4000, 4120, job=1, target=MDT, opens=5), *around(2)),
        STRETCH, DELTA),
    "a delta of the MDT": (around(1), STRETCH, row(4000, 4120, target=MDT, opens=50)),
}


@pytest.mark.parametrize("case", NOTHING.values(), ids=NOTHING.keys())
def test_where_no_phase_weighs_the_delta_the_rules_before_it_do(case):
    rows, blind, delta = case
    assert expected(delta, WRITE, [A, B], RUNS, ev(*rows), blind) == {}


def test_a_job_begun_inside_the_stretch_moved_data_from_its_start():
    # a farm task started at 3950, its first rows as the ids came back: it read from its
    # start (the start-up read); one begun at 3000 with no row before the stretch only
    # reaches the delta's last 20 s (BACK)
    late = JobWindow(3, 1000, ("n1",), 3950.0, 10000.0)
    early = JobWindow(4, 1000, ("n1",), 3000.0, 10000.0)
    rows = around(3, before=(0, 0)) + around(4, before=(0, 0))
    got = expected(DELTA, WRITE, [late, early], {3: (3950.0, 10000.0), 4: (3000.0, 10000.0)},
                   ev(*rows), STRETCH)
    assert got == pytest.approx({3: 12000.0, 4: BACK})


def test_a_run_is_split_by_a_gap_the_blind_stretches_do_not_cover():
    rows = ev(*[row(t, t + 120, job=1, wb=1200) for t in (1000, 1120, 1500, 1620)])
    got = runs(rows.between("n1", 1, 0, 10000), WRITE, [(1240.0, 1400.0)], None)
    assert [(p.t0, p.t1) for p in got] == [(1000, 1240), (1500, 1740)]
    assert [p.rate for p in got] == [10.0, 10.0]
    assert all(p.osts == frozenset({"fs-OST0000"}) for p in got)


def test_the_split_follows_the_phases_where_the_rates_around_do_not():
    # job 2 wrote 3x job 1's rate in the ten minutes before the stretch, then computed: the
    # rates around the delta (rule 1) gave it three quarters; its phase had ended, and job
    # 1's went on through the stretch
    rows = (*around(1), *[row(t, t + 120, job=2, wb=36000) for t in range(3280, 3760, 120)])
    s = split(DELTA, WRITE, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1.0, 2: 0.0})


# case: (job 1's phases meeting the delta as (rate of the delta's facet, its OSTs), whether
#        its rows say it moved none of that facet then)
MOVING_NONE = {
    "a phase reading on the OSTs, none written": ([(0.0, {"fs-OST0001"})], True),
    "a phase writing": ([(100.0, {"fs-OST0001"})], False),
    "a phase shown on the MDT only: its bytes unknown": ([(None, set())], False),
    "two phases, one of them writing": ([(0.0, {"fs-OST0001"}), (100.0, {"fs-OST0002"})],
                                        False),
    "two phases, neither writing": ([(0.0, {"fs-OST0001"}), (0.0, {"fs-OST0002"})], True),
}


@pytest.mark.parametrize("case", MOVING_NONE.values(), ids=MOVING_NONE.keys())
def test_a_phase_whose_rows_show_none_of_the_facet_moved_none_of_it(case):
    phases, none = case
    found = {1: [(Phase(3760.0, 4360.0, rate, frozenset(osts)), 120.0) for rate, osts in phases]}
    assert moving_none(found) == (frozenset({1}) if none else frozenset())
    assert moving_none(None) == frozenset() and moving_none({}) == frozenset()


def test_a_job_reading_then_is_not_paced_at_the_writes_of_its_other_phases():
    # Job 1 wrote 24000 bytes per open an hour before (2 opens, 48000 bytes) and reads
    # 1200 bytes per read on fs-OST0001 around the stretch, opening 2 files during the
    # delta; job 2's phase shows on the MDT only. Paced at its old writes, job 1 was
    # expected the whole delta (48000 against 24000); its rows say it was reading: job 2,
    # the one whose bytes no row shows, gets what job 1's rates cannot explain (rule 2:
    # job 1 at most twice what its writes of the hour expect, 48000 over the 6960 s the
    # widest window saw it x 120 s; its reads at the stretch's edges are no edge rate of
    # writes, as its phase there moved none: until 2026-11-28 they bounded it at 2400).
    rows = [row(1000, 1120, job=1, target="fs-OST0003", wb=48000),
            row(1000, 1120, job=1, target=MDT, opens=2),
            *around(1, target="fs-OST0001", wb=0, rb=1200),
            row(4000, 4120, job=1, target=MDT, opens=2),
            *[row(t, t + 120, job=2, target=MDT, opens=3) for t in range(3400, 4720, 120)]]
    s = split(DELTA, WRITE, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    held = 2 * 48000 * 120 / 6960
    assert s.fractions == pytest.approx({1: held / 24000, 2: 1 - held / 24000})


# case: (each job's phases meeting the delta as their rates of the facet (None: shown on the
#        MDT only), the jobs that have a pace, the jobs rule 3 does not hold to their peaks)
UNBOUNDED = {
    "one phase shown on the MDT only, no pace": ({1: [None], 2: [100.0]}, set(), {1}),
    "its pace bounds it": ({1: [None], 2: [100.0]}, {1}, set()),
    "two such: their peaks tell them apart": ({1: [None], 2: [None]}, set(), set()),
    "two such, one paced: the other": ({1: [None], 2: [None]}, {2}, {1}),
    "a phase of known rate next to its MDT-only one": ({1: [None, 0.0]}, set(), {1}),
    "phases of known rates only": ({1: [0.0], 2: [100.0]}, set(), set()),
}


@pytest.mark.parametrize("case", UNBOUNDED.values(), ids=UNBOUNDED.keys())
def test_the_one_phase_shown_on_the_mdt_only_is_not_held_to_its_peaks(case):
    rates, paced, free = case
    found = {j: [(Phase(3760.0, 4360.0, r, frozenset() if r is None else frozenset({"x"})),
                  120.0) for r in rs] for j, rs in rates.items()}
    assert unbounded(found, paced) == frozenset(free)
    assert unbounded(None, set()) == frozenset() and unbounded({}, set()) == frozenset()


def test_a_read_begun_while_the_osts_were_blind_is_not_held_to_the_jobs_old_peaks():
    # 24000 bytes read in the delta. Job 1 wrote 100 bytes/s around the stretch and did
    # nothing by its id during the delta (rule 0); job 2 opened files on the MDT through
    # the stretch with no OST row (a phase shown on the MDT only: a start-up read) and had
    # written 10 bytes/s half an hour before, which gives it no pace for reads. Held to
    # twice that peak, job 2 kept a tenth and the rest went to job 1, which was not reading.
    rows = (*around(1), row(3000, 3120, job=2, target="fs-OST0001", wb=1200),
            *[row(t, t + 120, job=2, target=MDT, opens=5) for t in (3880, 4000, 4120)])
    s = split(row(4000, 4120, rb=24000), READ, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 2: 1.0})


# case: (job 1's phases meeting the delta as their starts, whether it has a pace, whether it
#        began inside the delta, whether rule 2 reads its pace and not its edge rate)
LATER = {
    "paced, its phase begun after the delta's start": ([4240.0], True, False, True),
    "paced, its phase going when the delta began": ([3760.0], True, False, False),
    "no pace: its edge rate is all rule 2 has": ([4240.0], False, False, False),
    "begun inside the delta: its reach bounds it": ([4240.0], True, True, False),
    "two phases, one going when the delta began": ([3760.0, 4240.0], True, False, False),
}


@pytest.mark.parametrize("case", LATER.values(), ids=LATER.keys())
def test_a_paced_job_whose_phase_began_later_is_held_to_its_pace(case):
    starts, is_paced, began_inside, later = case
    found = {1: [(Phase(t0, t0 + 240.0, 100.0, frozenset({"fs-OST0001"})), 20.0)
                 for t0 in starts]}
    got = paced_later(DELTA, found, {1} if is_paced else set(), {1} if began_inside else set())
    assert got == (frozenset({1}) if later else frozenset())
    assert paced_later(DELTA, None, {1}, set()) == paced_later(DELTA, {}, {1}, set()) == set()


def test_a_job_opening_a_file_in_a_blind_write_is_not_given_it_by_its_later_phase():
    # 24000 bytes written in the delta. Job 1 opened one file on the MDT during it and began
    # writing 500 bytes/s on fs-OST0001 as the ids came back (100 opens per 60000 bytes: a
    # pace of 600 bytes for the delta); job 2 opened files during it and moved no byte by
    # its id within the hour. Lifted by the rate of the phase it began later,
    # job 1 could explain the whole delta and got it; held to twice its pace, it keeps 1200
    # bytes and the rest is the burst no rate shows (rule 2), job 2's.
    rows = (row(4000, 4120, job=1, target=MDT, opens=1),
            *[row(t, t + 120, job=1, target="fs-OST0001", wb=60000) for t in (4240, 4360)],
            *[row(t, t + 120, job=1, target=MDT, opens=100) for t in (4240, 4360)],
            row(4000, 4120, job=2, target=MDT, opens=3))
    s = split(DELTA, WRITE, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1200 / 24000, 2: 22800 / 24000})


def test_a_pace_of_a_phase_shown_on_the_mdt_only_is_held_loosely():
    found = {1: [(Phase(3760.0, 4360.0, None, frozenset()), 120.0)],
             2: [(Phase(3760.0, 4360.0, 100.0, frozenset({"fs-OST0001"})), 120.0)]}
    assert loose_paces(found, {1: 1000.0, 2: 1000.0}) == {1: LOOSE_PACE * 1000.0, 2: 1000.0}
    assert loose_paces(None, {1: 1000.0}) == {1: 1000.0}
    assert loose_paces(found, {}) == {}


def test_a_blind_write_three_times_the_pace_of_an_mdt_only_phase_stays_with_it():
    # 24000 bytes written in the delta. Job 2 opened 10 files on the MDT during it, its OSTs
    # blind (a phase shown on the MDT only); an hour's rows give it 800 bytes per open: a
    # pace of 8000. Job 1 did nothing by its id then (rule 0). Held to twice its pace, job 2
    # kept two thirds and the rest went to job 1; a pace learnt from the job's other phases
    # holds an MDT-only phase to twice that again (phases.loose_paces).
    rows = (row(3000, 3120, job=2, target="fs-OST0001", wb=8000),
            row(3000, 3120, job=2, target=MDT, opens=10),
            *[row(t, t + 120, job=2, target=MDT, opens=10) for t in (3880, 4000, 4120)])
    s = split(DELTA, WRITE, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 2: 1.0})


# case: (the delta's bytes, job 1's pace as rule 2 expects it, job 1's loose pace (its phase
#        shown on the MDT only where above its pace), a task begun near the delta, whether
#        rule 2 holds job 1 to twice its loose pace rather than to twice its pace)
LOOSENED = {
    "the loose pace explains the delta": (24000.0, 8000.0, LOOSE_PACE * 8000.0, False, True),
    "it does not: the burst is another job's": (40000.0, 8000.0, LOOSE_PACE * 8000.0, False,
                                                False),
    "a task begun near it: its start-up read": (24000.0, 8000.0, LOOSE_PACE * 8000.0, True,
                                                False),
    "a phase of known rate: no loose pace": (24000.0, 8000.0, 8000.0, False, False),
    "no pace expected of it in the delta": (24000.0, 0.0, LOOSE_PACE * 8000.0, False, False),
}


@pytest.mark.parametrize("case", LOOSENED.values(), ids=LOOSENED.keys())
def test_a_burst_goes_to_a_job_no_rate_shows_only_where_loose_paces_cannot_explain_it(case):
    amount, pace, loose, fresh, lifted = case
    reach = {3: 5.0}  # a bound of another job's, kept either way
    got = loosened(amount, {1: pace, 2: 0.0}, {}, reach, {1: loose}, {1: 8000.0}, fresh)
    assert got == ({**reach, 1: 2 * loose} if lifted else reach)
    assert reach == {3: 5.0}  # not changed in place


def test_a_task_begun_less_than_a_collector_period_before_the_delta_is_near_it():
    assert FRESH == 120.0
    assert began_near(DELTA, [0.0, 4000.0 - FRESH + 1])
    assert began_near(DELTA, [4100.0])
    assert not began_near(DELTA, [0.0, 4000.0 - FRESH - 1])
    assert not began_near(DELTA, [])


def test_a_blind_write_its_loose_pace_explains_is_not_given_to_a_job_with_no_rate():
    # 24000 bytes written in the delta. Job 2 opened 10 files on the MDT during it, its OSTs
    # blind (a phase shown on the MDT only), paced at 8000 by an hour's rows (800 bytes per
    # open). Job 1 opened a file then and moved no byte by its id within the hour: no rate.
    # Rule 2 held job 2 to twice its pace and gave the rest, a third, to job 1 as a burst
    # no rate shows; four times its pace (its loose pace, as rule 3 holds it) explains the
    # whole delta, and no task began near it (bursts.loosened).
    rows = (row(3000, 3120, job=2, target="fs-OST0001", wb=8000),
            row(3000, 3120, job=2, target=MDT, opens=10),
            *[row(t, t + 120, job=2, target=MDT, opens=10) for t in (3880, 4000, 4120)],
            row(4000, 4120, job=1, target=MDT, opens=1))
    s = split(DELTA, WRITE, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 2: 1.0})
    # a task begun 60 s before the delta may be doing its start-up read: rule 2 as before
    late = A._replace(start=3940.0)
    s = split(DELTA, WRITE, [late, B], ev(*rows), STRETCH, now=20000)
    assert s.fractions[1] > 0.2


# case: (the delta's bytes, job 1's phase rate of the facet as its rows show it (None: on the
#        MDT only), whether job 2's phase moved none of it, whether job 1 is ruled out,
#        whether rule 2 gives job 2 no part of a burst)
BUSY = {
    "job 1's phase can have moved it all": (24000.0, 300.0, True, False, True),
    "half of it, 36000 of 72000 (a rate is a mean: CAP_SLACK)": (
        72000.0, 300.0, True, False, True),
    "less than half: the burst is still job 2's": (80000.0, 300.0, True, False, False),
    "job 2's phase moved the facet": (24000.0, 300.0, False, False, False),
    "job 1's rate unknown (MDT only)": (24000.0, None, True, False, False),
    "job 1 ruled out by rule 0": (24000.0, 300.0, True, True, False),
}


@pytest.mark.parametrize("case", BUSY.values(), ids=BUSY.keys())
def test_a_job_busy_with_the_other_facet_takes_no_burst_the_others_phases_explain(case):
    amount, rate, moved_none, ruled_out, busy = case
    found = {1: [(Phase(3760.0, 4360.0, rate, frozenset() if rate is None
                        else frozenset({"fs-OST0001"})), 120.0)],
             2: [(Phase(3760.0, 4360.0, 0.0, frozenset({"fs-OST0002"})), 120.0)]}
    none = frozenset({2}) if moved_none else frozenset()
    got = busy_elsewhere(amount, found, none, {1} if ruled_out else set())
    assert got == (frozenset({2}) if busy else frozenset())
    assert busy_elsewhere(amount, None, frozenset({2}), set()) == frozenset()


def test_a_blind_write_beside_a_job_writing_elsewhere_is_not_given_to_a_job_reading():
    # 24000 bytes written in the delta on fs-OST0000. Job 1's write phase ran from 3270
    # through the stretch on fs-OST0001: 306000 bytes in the 730 s its rows cover (419
    # bytes/s, 50300 in the delta), most of it in its first row, 1200 per read near the
    # stretch. Job 2 read on fs-OST0002 around it (its phase moved no writes). Rule 2 held
    # job 1 to twice its edge rate (2400) and gave the rest to job 2 as a burst no rate
    # shows; job 1's phase can have written it all, job 2's rows say it was reading
    # (bursts.busy_elsewhere). Leaky seed 3, node015: a job whose processes left part of
    # its writes without its id.
    rows = (row(3270, 3390, job=1, target="fs-OST0001", wb=300000),
            row(3390, 3520, job=1, target="fs-OST0001", wb=1200),
            *[row(t, t + 120, job=1, target="fs-OST0001", wb=1200)
              for t in (3520, 3640, 3760, 4240)],
            *around(2, target="fs-OST0002", wb=0, rb=12000))
    s = split(DELTA, WRITE, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1.0, 2: 0.0})


def test_a_job_writing_at_the_edges_has_no_edge_rate_of_reads():
    # 13000 bytes read in the delta on fs-OST0000, the stretch blind until 4240. Job 1 wrote
    # 38000 bytes per read on fs-OST0006 right up to the stretch and after it (its phase
    # there moved no reads: phases.moving_none) and had read 6000 on fs-OST0000 ten minutes
    # before; job 2 began 90 s into the delta and read on fs-OST0001 after the stretch.
    # A job's peak counts reads and writes together: rule 2 read job 1's writes at the edges
    # as reads it could have done and gave it the whole read. Its bound is now twice the
    # reads its rate expects (666.7 bytes: 1333.3 of the 13000); the rest is the new task's
    # start-up read (dense seed 3, node008: 27 GiB of a task's first reads went to a writer).
    ost6 = "fs-OST0006"
    late = JobWindow(2, 1000, ("n1",), 4090.0, 10000.0)
    rows = (row(3400, 3520, job=1, rb=6000),
            *[row(t, t + 120, job=1, target=ost6, wb=38000) for t in (3640, 3760)],
            row(3880, 3998, job=1, target=ost6, wb=30000),
            row(4001, 4079, job=1, target=MDT, opens=161),
            row(4240, 4360, job=1, target=ost6, wb=7000),
            row(4001, 4097, job=2, target=MDT, opens=141),
            row(4240, 4314, job=2, target="fs-OST0001", rb=16540))
    s = split(row(4000, 4120, rb=13000), READ, [A, late], ev(*rows), [(4000.0, 4240.0)],
              now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1333.3 / 13000, 2: 1 - 1333.3 / 13000}, abs=1e-4)
