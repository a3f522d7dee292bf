"""A phase at the edges of a blind stretch: one the ids lost as it began goes on into the
stretch (attribute.phases.cut_young), one whose rows begin as the ids come back began inside
it (begun_inside).

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s; the collectors read every 120 s
(test_evidence.py). A job whose new entry moved bytes for a few seconds before the ids of
the node went missing shows a phase of those seconds only; its rows end because the ids
did, not the phase. A job whose first rows come as the ids come back did not begin then.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.phases import EDGE, YOUNG, Phase, begun_inside, cut_young, meeting
from tests.attribute.test_evidence import WRITE, A, B, ev, row

OST = frozenset({"fs-OST0000"})
MDT = "fs-MDT0000"
RUNS = {1: (0.0, 10000.0), 2: (0.0, 10000.0)}

# case: (the phase, when the blind stretch around the delta began, the end the delta
#        meets it with)
CUT = {
    "shown 50 s, the ids lost 30 s after its last row: goes on a collector period": (
        Phase(3880.0, 3930.0, 240.0, OST), 3960.0, 3930.0 + YOUNG),
    "the stretch begun 10 s before its last row (servers read apart)": (
        Phase(3880.0, 3930.0, 240.0, OST), 3920.0, 3930.0 + YOUNG),
    "shown a whole collector period: still just begun": (
        Phase(3810.0, 3930.0, 240.0, OST), 3960.0, 3930.0 + YOUNG),
    "a visible 70 s after its last row: it ended there": (
        Phase(3880.0, 3930.0, 240.0, OST), 4000.0, 3930.0),
    "shown longer than a collector period: it may have ended as the ids went": (
        Phase(3700.0, 3930.0, 240.0, OST), 3960.0, 3930.0),
    "shown on the MDT only: its rate unknown, the rules around weigh it": (
        Phase(3880.0, 3930.0, None, frozenset()), 3960.0, 3930.0),
    # a phase shown in a sliver of a stretch chained through it (observed.stretch): the
    # stretch resumed, it did not begin as the phase's rows ended
    "a stretch that began before it: the phase showed in a sliver of it": (
        Phase(3880.0, 3930.0, 240.0, OST), 3500.0, 3930.0),
}


@pytest.mark.parametrize("case", CUT.values(), ids=CUT.keys())
def test_a_young_phase_cut_by_a_stretch_goes_on_into_it(case):
    phase, begun, end = case
    got = cut_young(phase, begun)
    assert got.t1 == end
    assert (got.t0, got.rate, got.osts) == (phase.t0, phase.rate, phase.osts)


# Job 1's new entry wrote 12000 bytes on fs-OST0000 by 3930 (its read 3880-4000, last
# update 3930: 240 bytes/s over 50 s, too short a row to be a peak); the ids of the node
# went missing at 3980. Job 2 opened files by its id until 3760, then nothing. The
# blind delta (4000, 4120] wrote 36000 bytes on that OST.
BLIND = [(3980.0, 4360.0)]
ROWS = (row(3880, 4000, job=1, wb=12000, last=3930),
        *[row(t, t + 120, job=2, target=MDT, opens=3) for t in range(3400, 3760, 120)])


def test_the_blind_write_after_a_phase_just_begun_is_its_own():
    # before, job 1's phase ended 20 s after its last row, before the delta: the rates
    # around it held job 1 to twice 1500 bytes and rule 2 gave the rest (0.91) to job 2,
    # whom no rate showed. Now job 1's phase meets the delta for 70 s (to 3930 + 120 s,
    # ± 20 s): 16800 expected, twice that explains the 36000 but for 2400 of them; and
    # those go to job 1 too, which wrote 12000 there by its id in the read right before
    # (readings.bordering), not to job 2, which only opened files minutes before
    s = split(row(4000, 4120, wb=36000), WRITE, [A, B], ev(*ROWS), BLIND, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(1.0)
    assert s.fractions[2] == pytest.approx(0.0)


def test_it_goes_on_one_collector_period_only():
    # the next read (4120, 4240] begins after 3930 + 120 + EDGE: the phase does not meet it
    assert 3930.0 + YOUNG + EDGE < 4120.0
    assert meeting(row(4120, 4240, wb=36000), WRITE, [A, B], RUNS, ev(*ROWS), BLIND) == {}
    found = meeting(row(4000, 4120, wb=36000), WRITE, [A, B], RUNS, ev(*ROWS), BLIND)
    assert list(found) == [1]
    assert found[1][0][1] == pytest.approx(3930.0 + YOUNG + EDGE - 4000.0)


def test_a_phase_shown_in_a_sliver_of_a_chained_stretch_is_not_cut():
    # the same rows, but the uid's OST activity was already blind 3600-3900: the 80-s
    # sliver before 3980 is shorter than a collector period and chains the two into one
    # stretch from 3600, which did not begin as job 1's rows ended (leaky seed 7)
    chained = [(3600.0, 3900.0), (3980.0, 4360.0)]
    found = meeting(row(4000, 4120, wb=36000), WRITE, [A, B], RUNS, ev(*ROWS), chained)
    assert found == {}


# case: (the phase, when the stretch around the delta ended, the start the delta meets it with)
BEGUN = {
    "first row 10 s after the stretch: began a collector period before": (
        Phase(4250.0, 4400.0, 240.0, OST), 4240.0, 4250.0 - YOUNG),
    "first row 50 s after it (servers read apart, a sliver)": (
        Phase(4290.0, 4400.0, 240.0, OST), 4240.0, 4290.0 - YOUNG),
    "the stretch ended 10 s after its first row": (
        Phase(4230.0, 4400.0, 240.0, OST), 4240.0, 4230.0 - YOUNG),
    "a visible 90 s before its first row: it began there": (
        Phase(4330.0, 4400.0, 240.0, OST), 4240.0, 4330.0),
    "a phase that began with the job: its start already counts (runs)": (
        Phase(1000.0, 1200.0, 240.0, OST), 1010.0, 1000.0),
    "shown on the MDT only: its rate unknown, the rules around weigh it": (
        Phase(4250.0, 4400.0, None, frozenset()), 4240.0, 4250.0),
}


@pytest.mark.parametrize("case", BEGUN.values(), ids=BEGUN.keys())
def test_a_phase_first_shown_as_the_ids_come_back_began_inside_the_stretch(case):
    phase, ended, start = case
    got = begun_inside(phase, ended, 1000.0)
    assert got.t0 == start
    assert (got.t1, got.rate, got.osts) == (phase.t1, phase.rate, phase.osts)


def test_the_blind_write_before_the_ids_came_back_goes_to_the_job_they_showed_writing():
    # The uid's OST activity was blind 3760-4240. Job 2's id wrote 12000 bytes on
    # fs-OST0000 as the ids came back (its read 4240-4360, last update 4270: 400 bytes/s
    # over 30 s, too short a row to be a peak); job 1 showed nothing after 3400 but a few
    # opens. Before, neither phase met the blind (4000, 4120]: job 2's rate around it (12000
    # over 840 observed s) explained 3429 of its 24000 bytes and rule 2 gave job 1, whom no
    # rate showed, the rest (0.86). Now job 2's phase reaches back to 4120 (± 20 s): 20 s
    # of the delta at 400 bytes/s, 8000; twice that it may explain, job 1 the last 8000
    rows = (row(4240, 4360, job=2, wb=12000, last=4270),
            *[row(t, t + 120, job=j, target=MDT, opens=3)
              for j in (1, 2) for t in range(3000, 3400, 120)])
    s = split(row(4000, 4120, wb=24000), WRITE, [A, B], ev(*rows), [(3760.0, 4240.0)],
              now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[2] == pytest.approx(2 / 3)
    assert s.fractions[1] == pytest.approx(1 / 3)
