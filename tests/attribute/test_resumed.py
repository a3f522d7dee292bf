"""A burst beyond the rates goes first to a job moving that facet by its id on the delta's
OST in the read right before or right after it (attribute.readings.bordering, built on
`resumed`, rule 2), in tables.

The frame of test_phases.py: node n1, uid 1000; the blind delta is (4000, 4120] on
fs-OST0000. A phase going on there as the ids came back was going in the delta, whatever
its rate as its rows show it: a phase begun inside the blind stretch shows only its end,
while a job whose phase on other OSTs ended before the stretch is idle by its id and no
likelier the owner than any other.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.bursts import RESUMED_SHARE, beyond_rates
from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.readings import bordering, resumed
from tests.attribute.test_evidence import OPS, READ, WRITE, A, B, ev, row
from tests.attribute.test_phases import DELTA

OST0, OST1, MDT = "fs-OST0000", "fs-OST0001", "fs-MDT0000"

# case: (the rows of job 1, the facet, what `resumed` gives)
RESUMED = {
    "wrote by its id on the delta's OST in the next read": (
        (row(4120, 4240, job=1, wb=500),), WRITE, {1: 500.0}),
    "half of the next read's row lies within a collector period of the delta": (
        (row(4180, 4300, job=1, wb=500),), WRITE, {1: 250.0}),
    "on another OST": ((row(4120, 4240, job=1, target=OST1, wb=500),), WRITE, {}),
    "the other facet": ((row(4120, 4240, job=1, rb=500),), WRITE, {}),
    "read, asked for reads": ((row(4120, 4240, job=1, rb=500),), READ, {1: 500.0}),
    "right before the delta: its phase may have ended in it": (
        (row(3880, 4000, job=1, wb=500),), WRITE, {}),
    "two reads after": ((row(4240, 4360, job=1, wb=500),), WRITE, {}),
    "files opened on the MDT only": ((row(4120, 4240, job=1, target=MDT, opens=9),), WRITE, {}),
    "operations are no burst": ((row(4120, 4240, job=1, target=MDT, opens=9),), OPS, {}),
    "another job's row": ((row(4120, 4240, job=2, wb=500),), WRITE, {}),
}


@pytest.mark.parametrize("case", RESUMED.values(), ids=RESUMED.keys())
def test_what_each_job_moved_on_the_delta_ost_right_after_it(case):
    rows, facet, want = case
    assert resumed(DELTA, facet, [1], ev(*rows)) == pytest.approx(want)


def test_a_delta_of_no_node_has_none_resumed():
    assert resumed(DELTA._replace(node=None), WRITE, [1],
                   ev(row(4120, 4240, job=1, wb=500))) == {}


# case: (what jobs 3 (rated: 10 expected, 100 at the edges), 1 and 2 (idle by their id)
# moved on the delta's OST right after it, the candidates rule 0 ruled out, the tasks
# whose start-up read is unseen, what each is given of a 1000-byte delta); job 3 can
# explain twice its edge rate, 200: the rest is 800
BACK = {
    "none resumed: the idle share the rest by time": (
        {}, set(), set(), {3: 200.0, 1: 400.0, 2: 400.0}),
    "the rated job resumed: the rest is its, beyond its rate": (
        {3: 500.0}, set(), set(), {3: 1000.0, 1: 0.0, 2: 0.0}),
    "an idle job resumed: the rest is its": (
        {1: 300.0}, set(), set(), {3: 200.0, 1: 800.0, 2: 0.0}),
    "two resumed: the rest in proportion to what each moved": (
        {3: 600.0, 1: 200.0}, set(), set(), {3: 800.0, 1: 200.0, 2: 0.0}),
    "moved under a quarter of the rest: a trickle says nothing": (
        {3: RESUMED_SHARE * 800.0 - 1.0}, set(), set(), {3: 200.0, 1: 400.0, 2: 400.0}),
    "every one resumed: it tells them apart no more": (
        {1: 300.0, 2: 300.0, 3: 300.0}, set(), set(), {3: 200.0, 1: 400.0, 2: 400.0}),
    "resumed but ruled out by rule 0": ({1: 300.0}, {1}, set(), {3: 200.0, 1: 0.0, 2: 800.0}),
    "before a task whose start-up read is unseen": (
        {3: 500.0}, set(), {2}, {3: 1000.0, 1: 0.0, 2: 0.0}),
}


@pytest.mark.parametrize("case", BACK.values(), ids=BACK.keys())
def test_a_burst_beyond_the_rates_goes_first_to_a_job_moving_on_that_ost_right_after(case):
    back, excluded, first, want = case
    got = beyond_rates(1000.0, {3: 10.0, 1: 0.0, 2: 0.0}, frozenset(excluded),
                       {1: 120.0, 2: 120.0, 3: 60.0}, {3: 100.0}, {}, None, first, back)
    assert got == pytest.approx(want)


def test_where_the_rates_explain_the_delta_what_moved_after_changes_nothing():
    got = beyond_rates(150.0, {3: 100.0, 1: 0.0}, frozenset(), {1: 120.0, 3: 120.0}, {}, {},
                       None, (), {1: 300.0})
    assert got == {3: 100.0, 1: 0.0}


def test_a_blind_write_is_the_job_writing_there_by_its_id_as_the_ids_came_back():
    # Dense seed 2, node011: a 16.6 GiB blind write on OST0003 went 0.59 to job 3482896,
    # whose write on OST0000 and OST0001 had ended by its id 240 s before the delta (no
    # blind byte read on either since), and 0.41 to job 3482891, whose write there began
    # inside the stretch and showed its id in the next read (8.6 GiB): all its own. Here
    # job 1 wrote 60000 per read on fs-OST0001 until 3640; the uid's OSTs were blind from
    # 3640, the delta's entry last written at 4080, blind again from 4120 to 4145; job 2
    # writes 30000 per read on fs-OST0000 from 4120: rule 2 had given job 1 a third.
    rows = (row(3400, 3520, job=1, target=OST1, wb=60000),
            row(3520, 3640, job=1, target=OST1, wb=60000),
            row(4120, 4240, job=2, wb=30000), row(4120, 4240, job=2, target=MDT, opens=20),
            row(4240, 4360, job=2, wb=30000))
    s = split(row(4000, 4120, wb=60000, last=4080), WRITE, [A, B], ev(*rows),
              [(3640.0, 4080.0), (4120.0, 4145.0)], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 2: 1.0})


# case: (the rows of job 1, the facet, what `bordering` gives)
BORDERING = {
    "wrote by its id on the delta's OST in the read before": (
        (row(3880, 4000, job=1, wb=500),), WRITE, {1: 500.0}),
    "and in the read after: the larger counts, a steady pace is no more for both": (
        (row(3880, 4000, job=1, wb=500), row(4120, 4240, job=1, wb=300)), WRITE,
        {1: 500.0}),
    "half of the read before lies within a collector period of the delta": (
        (row(3820, 3940, job=1, wb=500),), WRITE, {1: 250.0}),
    "two reads before": ((row(3760, 3880, job=1, wb=500),), WRITE, {}),
    "on another OST before": ((row(3880, 4000, job=1, target=OST1, wb=500),), WRITE, {}),
    "the other facet before": ((row(3880, 4000, job=1, rb=500),), WRITE, {}),
    "files opened on the MDT before": (
        (row(3880, 4000, job=1, target=MDT, opens=9),), WRITE, {}),
    "operations are no burst": ((row(3880, 4000, job=1, opens=9),), OPS, {}),
}


@pytest.mark.parametrize("case", BORDERING.values(), ids=BORDERING.keys())
def test_what_each_job_moved_on_the_delta_ost_right_before_or_right_after_it(case):
    rows, facet, want = case
    assert bordering(DELTA, facet, [1], ev(*rows)) == pytest.approx(want)


def test_a_blind_write_is_the_job_writing_there_by_its_id_as_the_ids_went_missing():
    # Dense seed 2, node005: job 3482892 wrote 27.3 GB on OST0003 by its id in the read
    # before an 8.1 GiB blind write there (a 54 s row: too short to be a peak), and its
    # rows elsewhere put it at 0.5 GB a read: 0.12 to it, 0.44 to each of two jobs idle by
    # their id. Here job 1 writes 1000 a read on fs-OST0001 around the stretch, 30000 on
    # fs-OST0000 in the 50 s before the ids went missing, 60000 in a later read (its peak);
    # job 2 only opens files, far from the delta: rule 2 gave it 0.81 of a 20000-byte write.
    rows = [row(t, t + 120, job=1, target=OST1, wb=1000) for t in range(3040, 3880, 120)]
    rows += [row(3940, 3990, job=1, wb=30000), row(5600, 5720, job=1, target=OST1, wb=60000)]
    rows += [row(t, t + 120, job=1, target=OST1, wb=1000) for t in range(4240, 4800, 120)]
    rows += [row(3400, 3520, job=2, target=MDT, opens=5),
             row(4400, 4520, job=2, target=MDT, opens=5)]
    s = split(row(4000, 4120, wb=20000), WRITE, [A, B], ev(*rows), [(3990.0, 4240.0)],
              now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1.0, 2: 0.0})


def test_a_delta_of_no_node_borders_on_nothing():
    assert bordering(DELTA._replace(node=None), WRITE, [1],
                     ev(row(3880, 4000, job=1, wb=500))) == {}
