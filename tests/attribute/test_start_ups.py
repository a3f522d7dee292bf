"""A read burst no rate shows goes first to the tasks whose start-up read is yet to be seen
(attribute.bursts.unshown_starts, rule 2), and a task just begun is weighed by its rate on
the delta's OST, not only by the few files it opened (attribute.phases.rated_here, rule 1),
in tables.

The frame of test_phases.py: node n1, uid 1000; the blind delta is (4000, 4120] on
fs-OST0000; the uid's OST activity on the node was blind from 3880 to 4240. A task begun
inside that stretch printed nothing by its id yet: its start-up read, the commonest phase
to begin while the ids are missing, is somewhere in the blind bytes; a job whose own rows
showed its phases is more likely computing between them.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.bursts import beyond_rates, unshown_starts
from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.phases import Phase, rated_here
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, A, ev, row
from tests.attribute.test_phases import DELTA, STRETCH

# case: (each candidate's run start, their rows, the candidates whose start is unshown)
UNSHOWN = {
    "begun inside the stretch before the delta, no row since": ({2: 3950.0}, (), {2}),
    "begun inside the delta itself": ({2: 4060.0}, (), {2}),
    "begun before the stretch: its start-up was in sight": ({2: 3800.0}, (), set()),
    "begun inside the stretch, its id seen on the MDT since": (
        {2: 3950.0}, (row(3950, 3990, job=2, target="fs-MDT0000", opens=4),), set()),
    "a row of another job says nothing of it": (
        {2: 3950.0}, (row(3950, 3990, job=1, target="fs-MDT0000", opens=4),), {2}),
    "a job running all along": ({1: 0.0}, (), set()),
    "begun after the delta: not its read": ({2: 4130.0}, (), set()),
}


@pytest.mark.parametrize("case", UNSHOWN.values(), ids=UNSHOWN.keys())
def test_which_tasks_have_not_shown_their_start_up_read(case):
    starts, rows, want = case
    runs = {j: (s0, 10000.0) for j, s0 in starts.items()}
    assert unshown_starts(DELTA, runs, STRETCH, ev(*rows)) == frozenset(want)


def test_a_delta_of_no_node_has_no_start_ups():
    assert unshown_starts(DELTA._replace(node=None), {2: (3950.0, 10000.0)}, STRETCH,
                          ev()) == frozenset()


# case: (the candidates whose start-up is unshown, what the surprise hints, what jobs 3
# (rated: 10 expected, 100 at the edges), 1 and 2 (idle by their id) are given of a
# 1000-byte delta); job 3 explains twice its edge rate, 200
FIRST = {
    "none unshown: the idle share the rest by time": (set(), {}, {3: 200.0, 1: 400.0, 2: 400.0}),
    "one idle task unshown: the rest is its": ({2}, {}, {3: 200.0, 1: 0.0, 2: 800.0}),
    "before what the surprise hints": ({2}, {1: 5.0}, {3: 200.0, 1: 0.0, 2: 800.0}),
    "every idle one unshown: it tells them apart no more, the surprise does": (
        {1, 2}, {1: 5.0}, {3: 200.0, 1: 800.0, 2: 0.0}),
    "the one unshown has a rate: held to it, the idle share the rest": (
        {3}, {}, {3: 200.0, 1: 400.0, 2: 400.0}),
}


@pytest.mark.parametrize("case", FIRST.values(), ids=FIRST.keys())
def test_a_burst_beyond_the_rates_goes_first_to_a_task_not_yet_seen_starting(case):
    first, hint, want = case
    got = beyond_rates(1000.0, {3: 10.0, 1: 0.0, 2: 0.0}, frozenset(),
                       {1: 120.0, 2: 120.0, 3: 60.0}, {3: 100.0}, hint, None, first)
    assert got == pytest.approx(want)


def test_a_blind_read_is_the_new_tasks_not_that_of_a_job_whose_read_had_ended():
    # Dense seed 3, node007: a 75.4 GiB read on OST0002 in a blind stretch went a third each
    # to job 7128449, whose read phase had shown by its id and ended 160 s before the ids
    # went missing, and job 7128459, begun 53 s before the delta and printing nothing by its
    # id (its start-up read, all of it blind), beside job 7128463, reading at a rate its
    # rows showed. Here job 1 read by its id on fs-OST0000 until 3400, job 3 reads 10000
    # bytes per read on fs-OST0001 around a stretch blind from 3760 to 4480, job 2 began at
    # 3900: of 100000 bytes read, job 3's rate explains twice 10000, the rest is job 2's.
    fresh = JobWindow(2, 1000, ("n1",), 3900.0, 10000.0)
    reading = JobWindow(3, 1000, ("n1",), 0.0, 10000.0)
    rows = (row(3160, 3280, job=1, rb=40000), row(3280, 3400, job=1, rb=40000),
            *[row(t, t + 120, job=3, target="fs-OST0001", rb=10000)
              for t in (3520, 3640, 4480, 4600)])
    s = split(row(4000, 4120, rb=100000), READ, [A, fresh, reading], ev(*rows),
              [(3760.0, 4480.0)], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.0, 2: 0.8, 3: 0.2})


OST0, OST1, MDT = "fs-OST0000", "fs-OST0001", "fs-MDT0000"

# case: (job 1's phase meeting the delta (4000, 4120] on fs-OST0000, whether rule 1 weighs
# job 1 by the higher of its pace and its rate there)
RATED_HERE = {
    "begun inside the delta, reading its OST": (Phase(4060.0, 4500.0, 500.0, frozenset({OST0})),
                                                True),
    "begun as the delta began": (Phase(4000.0, 4500.0, 500.0, frozenset({OST0, OST1})), True),
    "begun before the delta: its pace reads a phase going": (
        Phase(3900.0, 4500.0, 500.0, frozenset({OST0})), False),
    "its rows show other OSTs": (Phase(4060.0, 4500.0, 500.0, frozenset({OST1})), False),
    "shown on the MDT only: no rate": (Phase(4060.0, 4500.0, None, frozenset()), False),
    "moving none of the facet": (Phase(4060.0, 4500.0, 0.0, frozenset({OST0})), False),
}


@pytest.mark.parametrize("case", RATED_HERE.values(), ids=RATED_HERE.keys())
def test_which_tasks_just_begun_are_weighed_by_their_rate_on_the_delta_ost(case):
    phase, want = case
    assert rated_here(DELTA, {1: [(phase, 60.0)]}) == (frozenset({1}) if want else frozenset())


def test_no_phases_no_task_rated_here():
    assert rated_here(DELTA, None) == frozenset()


def test_a_task_begun_inside_the_read_is_weighed_by_its_rate_not_the_files_it_opened():
    # Dense seed 1, node029: a blind read on OST0007 went 0.73 to job 8793204, paced at
    # 154 MB (its MDT operations in the delta x its bytes per operation nearby), whose
    # phase ended 10 s into the read on another OST, and 0.27 to task 8793217, begun 68 s
    # into it, reading on OST0007 from then on at 3 MB/s (158 MB over its overlap), paced
    # at 57 MB: it had opened its files and read little yet; the read was all its own.
    # Here job 1 made 3 MDT operations in the delta at 5000 bytes each nearby (15000), task
    # 3 began at 4068, opened 10 files in the delta, and read 3000 bytes/s on fs-OST0000
    # after it at 100 bytes per operation (its pace 1000).
    late = JobWindow(3, 1000, ("n1",), 4068.0, 10000.0)
    rows = (row(3400, 3520, job=1, target=OST1, rb=50000),
            row(3400, 3520, job=1, target=MDT, opens=10),
            row(4000, 4120, job=1, target=MDT, opens=3),
            row(4000, 4120, job=3, target=MDT, opens=10),
            row(4240, 4360, job=3, target=OST0, rb=360000),
            row(4240, 4360, job=3, target=MDT, opens=3600))
    s = split(row(4000, 4120, rb=30000), READ, [A, late], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[3] > 0.7  # 0.06 by the paces alone
