"""What a candidate did in the slivers of the blind stretch around a delta, and rule 3's
cap (attribute.evidence with readings.phases, readings.continuing and readings.unseen),
in tables.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s; the blind delta is (4000, 4120] on
fs-OST0000, 12000 bytes written, and the collectors read every 120 s (test_evidence.py).
Job 1 printed its id during the delta, on the MDT and writing 10 bytes on fs-OST0001
(busy for rule 0, in an I/O phase on the OSTs); job 2 did not (rule 0 rules it out), so
before rule 3 job 1 has the whole delta. Job 1's highest rate by its id
in a row of at least 60 s is 100 bytes per 120-s read (an earlier, slower phase): held to
twice that, it keeps 200 / 12000 = 1/60 of the delta unless the rows below say more.

- Phase: job 1's rate on the delta's own target in the visible slivers inside the blind
  stretch around the delta (gaps of at most 120 s between blind stretches), rows shorter
  than 60 s included, is a rate the cap does not hold it below.
- Continuing (rule 1, last table): a phase shown in the read right after the delta, in
  a sliver, is at least the candidate's expected rate over the delta.
- Rule 1's phases (attribute.phases, tests/attribute/test_phases.py) weigh a delta where a
  candidate's phase meets it: a row in a sliver right before the delta gives that phase
  only its span's 20-s margin there (the continuing table, second case).
- Unseen: what the cap takes off never goes to a candidate rule 0 ruled out that has no
  row at all by its id on the node within 60 s of the delta's read interval, while a busy
  one moved data by its id on the delta's kind (OSTs) then.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split, stretch
from tests.attribute.test_evidence import WRITE, A, B, direct_around, ev, row

MDT = "fs-MDT0000"
SLOW = tuple(row(t, t + 120, job=1, wb=100) for t in range(3400, 3880, 120))  # peak 100/read
BUSY = (row(4000, 4120, job=1, target=MDT, opens=5),  # job 1 printed its id in the interval
        row(4000, 4120, job=1, target="fs-OST0001", wb=10))
NEAR_ROW = row(3900, 3990, job=2, target=MDT, opens=1)  # job 2: a row 10 s before it
DELTA = row(4000, 4120, wb=12000)
HELD = 200 / 12000  # job 1 held to twice its peak


# case: (job 1's rows near the delta, blind stretches of the uid, job 1's share). The node's
# ids came back for 60 s (3940-4000) between two blind stretches: a sliver.
SLIVER = [(3700, 3940), (4000, 4300)]
PHASE = {
    # 100 bytes/s in a 40-s row there: 12000 in 120 s is that phase, the cap rises to it
    "a row in a sliver inside the blind stretch": (
        (row(3950, 3990, job=1, wb=4000),), SLIVER, 1.0),
    "a 20-s row there: its rate all the same": ((row(3960, 3980, job=1, wb=2000),), SLIVER, 1.0),
    # 1 byte/s: twice that over the 120 s is 240, more than the peak's 200
    "a slow phase in the sliver lifts the cap only to it": (
        (row(3950, 3990, job=1, wb=40),), SLIVER, 240 / 12000),
    "the sliver shows the other facet: no phase": (
        (row(3950, 3990, job=1, rb=4000),), SLIVER, HELD),
    "the sliver on another target: not this target's phase": (
        (row(3950, 3990, job=1, target="fs-OST0001", wb=4000),), SLIVER, HELD),
    # 200 s between the stretches is no sliver: the row is another time, not this stretch
    "a gap longer than a collector period": (
        (row(3850, 3890, job=1, wb=4000),), [(3700, 3800), (4000, 4300)], HELD),
    # a 45-s row ending 25 s into the stretch is the read at its edge, not a sliver
    "the read at the edge of the stretch": ((row(3680, 3725, job=1, wb=4500),), SLIVER, HELD),
    # short rows right before and after the blind delta, outside it: not counted
    "rows at the edges of the stretch": (
        (row(3970, 4000, job=1, wb=3000), row(4120, 4150, job=1, wb=3000)), [], HELD),
}


@pytest.mark.parametrize("case", PHASE.values(), ids=PHASE.keys())
def test_a_candidate_in_a_phase_in_a_sliver_is_not_held_to_an_older_peak(case):
    edges, blind, share1 = case
    e = ev(*SLOW, *edges, *BUSY, NEAR_ROW)  # job 2 near: the cap's excess may go to it
    s = split(DELTA, WRITE, [A, B], e, blind, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(share1)
    assert s.fractions[2] == pytest.approx(1 - share1)


# case: (job 2's rows, job 1's share)
UNSEEN = {
    # job 2 never printed: no peak, an infinite cap; before: it got all the cap took off
    "no row of job 2 at all: the excess stays with the busy": ((), 1.0),
    # job 2 wrote 100 per read an hour before: it had a peak, but nothing near the delta
    "rows of job 2 only long before: the same": ((row(1000, 1120, job=2, wb=100),), 1.0),
    "a row of job 2 90 s before the interval: the same": (
        (row(3800, 3910, job=2, target=MDT, opens=1),), 1.0),
    # a row ending 10 s before the interval: its ids were not all lost, it may own it
    "a row of job 2 10 s before: it takes the excess": ((NEAR_ROW,), HELD),
    # on the object side, with a peak: the excess up to its cap, the rest by peaks 1:1
    "job 2 near, with a peak: the cap's usual sharing": (
        (NEAR_ROW, row(1000, 1120, job=2, wb=100)), 0.5),
}


@pytest.mark.parametrize("case", UNSEEN.values(), ids=UNSEEN.keys())
def test_the_cap_gives_nothing_to_a_ruled_out_candidate_with_no_row_near(case):
    rows2, share1 = case
    s = split(DELTA, WRITE, [A, B], ev(*SLOW, *BUSY, *rows2), [], now=20000)
    assert s.fractions[1] == pytest.approx(share1)
    assert s.fractions[2] == pytest.approx(1 - share1)


@pytest.mark.parametrize("busy", [(), BUSY[:1]], ids=["nobody busy", "busy on the MDT only"])
def test_without_a_busy_candidate_on_the_delta_kind_no_one_is_kept_from_the_excess(busy):
    # neither printed in the interval (rule 0 does not apply), or job 1 only opened files
    # (a job silent for its whole phase is as likely the owner): job 2, with no peak,
    # takes what the cap holds job 1 from, as before
    s = split(DELTA, WRITE, [A, B], ev(*SLOW, *busy), [], now=20000)
    assert s.fractions[1] == pytest.approx(HELD)
    assert s.fractions[2] == pytest.approx(1 - HELD)


@pytest.mark.parametrize("blind, interval, expected", [
    ([], (4000, 4120), (4000, 4120)),
    ([(3000, 4050)], (4000, 4120), (3000, 4120)),
    ([(3000, 3900), (4000, 4120), (4200, 5000)], (4000, 4120), (3000, 5000)),  # slivers
    ([(3000, 3800), (4000, 4120)], (4000, 4120), (4000, 4120)),  # 200 s apart: not a sliver
])
def test_the_blind_stretch_around_a_delta_chains_through_slivers(blind, interval, expected):
    assert stretch(*interval, blind) == expected


# Rule 1 with a phase still going after the delta. Job 1 wrote 100 per 120-s read on
# fs-OST0000 all along (rate 100 / 120 s: 100 over the delta), and 12000 in a read long
# before (a peak high enough that rule 3 does not bite); job 2 printed on fs-OST0000 only
# in one 50-s row of 5000 bytes (100 bytes/s) in a 60-s sliver between blind stretches.
# Around the delta its rate is that row over the ±10 min observed, 5000 / 980 s or
# 5000 / 1060 s; in its phase, 100 bytes/s x 120 s = 12000.
AFTER_BLIND = [(4000, 4120), (4180, 4400)]  # the sliver 4120-4180 right after the delta
BEFORE_BLIND = [(3800, 3940), (4000, 4120)]  # the sliver 3940-4000 right before it
STEADY = (*direct_around(1, 3400, 4720, per_read=100), row(1000, 1120, job=1, wb=12000))
# case: (job 2's row, blind stretches, job 1's share)
GOING = {
    # the row right after the delta: job 2 expected 12000, job 1 100
    "a phase shown in the read right after the delta": (
        row(4125, 4175, job=2, wb=5000), AFTER_BLIND, 100 / (100 + 12000)),
    # right before: the phase may have ended inside the delta. Its phase (attribute.phases)
    # is that row at 100 bytes/s, its span reaching 20 s past it (servers read apart): 15 s
    # of the delta, 1500; job 1's phase 100 (before the phases, its rate around: 5000 / 1060 s)
    "a phase shown only right before the delta: the phase's margin": (
        row(3945, 3995, job=2, wb=5000), BEFORE_BLIND, 100 / (100 + 1500)),
    # after the delta but on another target: not this target's phase. Job 2 has no rate
    # on fs-OST0000, so rule 2 gives it the burst beyond twice job 1's expected 100
    "on another target after the delta: rule 2 as before": (
        row(4125, 4175, job=2, target="fs-OST0001", wb=5000), AFTER_BLIND, 200 / 12100),
}


@pytest.mark.parametrize("case", GOING.values(), ids=GOING.keys())
def test_a_phase_still_going_right_after_the_delta_is_its_expected_rate(case):
    row2, blind, share1 = case
    s = split(row(4000, 4120, wb=12100), WRITE, [A, B], ev(*STEADY, row2), blind, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(share1)
    assert s.fractions[2] == pytest.approx(1 - share1)


def test_a_silent_candidate_in_an_outage_interval_may_take_the_excess():
    # the 22-minute interval of an outage (every row that long): job 2 printed nothing in
    # it, but a job computing 22 minutes and then writing prints nothing either; the cap's
    # excess goes to it as before (job 1 held to twice its peak over the interval)
    long_busy = (row(4000, 5320, job=1, target=MDT, opens=5),
                 row(4000, 5320, job=1, target="fs-OST0001", wb=10))
    s = split(row(4000, 5320, wb=120000), WRITE, [A, B], ev(*SLOW, *long_busy), [],
              now=20000)
    assert s.fractions[1] == pytest.approx(2 * 100 / 120 * 1320 / 120000)
    assert s.fractions[2] == pytest.approx(1 - 2 * 100 / 120 * 1320 / 120000)
