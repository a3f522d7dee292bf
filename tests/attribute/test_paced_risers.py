"""Rule 1's last resort, the rise on the MDT, held to the paces of those that rose
(attribute.readings.paced_risers), in tables.

A rise of a job's operations on the MDT during a blind delta says it entered an I/O phase,
not how much it moved; a job with a pace (bytes per operation of its I/O nearby) says how
much. A task begun inside the delta has no pace: what the paced candidates cannot have
moved is its start-up read.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.readings import paced_risers
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, A, B, ev, row

MDT, OST1 = "fs-MDT0000", "fs-OST0001"

# case: (the rise's weights, the paces, what a 1000-byte delta gives each)
PACED = {
    "a paced riser keeps its pace, the one without a pace the rest": (
        {1: 3.0, 2: 1.0}, {1: 100.0}, {1: 100.0, 2: 900.0}),
    "two paced risers, each held to its own pace": (
        {1: 2.0, 2: 2.0, 3: 1.0}, {1: 50.0, 2: 150.0}, {1: 50.0, 2: 150.0, 3: 800.0}),
    "two risers without a pace share what the paced give up as they shared the rise": (
        {1: 2.0, 2: 1.0, 3: 1.0}, {1: 100.0}, {1: 100.0, 2: 450.0, 3: 450.0}),
    "a paced riser whose share is under its pace keeps its share": (
        {1: 1.0, 2: 1.0}, {1: 800.0}, {1: 1.0, 2: 1.0}),
    "no riser without a pace: the rise divides it as before": (
        {1: 3.0, 2: 1.0}, {1: 100.0, 2: 100.0}, {1: 3.0, 2: 1.0}),
    "no paced riser: the rise divides it as before": (
        {1: 3.0, 2: 1.0}, {}, {1: 3.0, 2: 1.0}),
    "a paced candidate that did not rise gets nothing either way": (
        {1: 0.0, 2: 1.0, 3: 1.0}, {1: 500.0, 2: 100.0}, {1: 0.0, 2: 100.0, 3: 900.0}),
}


@pytest.mark.parametrize("case", PACED.values(), ids=PACED.keys())
def test_the_rise_is_held_to_the_paces_of_those_that_rose(case):
    weights, paces, want = case
    assert paced_risers(1000.0, weights, paces) == pytest.approx(want)


def test_the_whole_delta_stays_divided_when_the_paces_hold_the_risers():
    got = paced_risers(1000.0, {1: 5.0, 2: 3.0, 3: 0.5, 4: 0.5}, {1: 20.0, 2: 70.0})
    assert sum(got.values()) == pytest.approx(1000.0)
    assert got[3] == pytest.approx(got[4])


def test_nothing_to_divide_changes_nothing():
    assert paced_risers(0.0, {1: 3.0, 2: 1.0}, {1: 1.0}) == {1: 3.0, 2: 1.0}


def test_a_read_while_ids_are_missing_is_the_start_up_read_of_the_task_begun_inside_it():
    # Dense seed 2, node025: a 25.2 GiB read, all job 3483175's (begun inside it, shown on
    # the MDT only), went 0.35 to two farm tasks whose file operations rose more, paced at
    # 0.7 and 1.0 GB. Here jobs 1 and 2 read 50 bytes per operation on fs-OST0001 before
    # the stretch and rise on the MDT in the delta (300 and 600 operations); job 3 begins
    # inside it, opens 20 files, and ends while the OSTs are still blind: every one rose,
    # so the time overlap divided a 1 MB read (3 got 0.27); now 1 and 2 keep their loose
    # paces (twice 15000 and 30000 bytes: their phases there show the MDT only).
    late = JobWindow(3, 1000, ("n1",), 4030.0, 7000.0)
    rows = [row(4030, 4120, job=3, target=MDT, opens=20)]
    for j in (1, 2):
        rows += [row(2000, 2120, job=j, target=OST1, rb=500000),
                 row(2000, 2120, job=j, target=MDT, opens=10000),
                 row(3880, 4000, job=j, target=MDT, opens=10),
                 row(4000, 4120, job=j, target=MDT, opens=300 * j),
                 row(4120, 4240, job=j, target=MDT, opens=10)]
    s = split(row(4000, 4120, rb=1_000_000), READ, [A, B, late], ev(*rows),
              [(2500.0, 8000.0)], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 0.03, 2: 0.06, 3: 0.91})
