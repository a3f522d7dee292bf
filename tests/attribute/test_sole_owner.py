"""One owner per OST and interval (attribute.sole_owner): next to a clear owner, a split's
crumbs go to the others; an even split among alike candidates stays as it is.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s (tests/attribute/test_evidence.py); the
blind delta is (4000, 4120] on fs-OST0000, 400 bytes written.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.core import JobWindow, attribute
from slurm_io.attribute.evidence import EVIDENCE, TIME, split
from slurm_io.attribute.sole_owner import owned_split, without_crumbs
from tests.attribute.test_evidence import BLIND, WRITE, A, B, direct_around, ev


@pytest.mark.parametrize("fractions, expected", [
    ({1: 0.95, 2: 0.05}, {1: 1.0, 2: 0.0}),
    ({1: 0.85, 2: 0.09, 3: 0.06}, {1: 1.0, 2: 0.0, 3: 0.0}),
    ({1: 0.6, 2: 0.32, 3: 0.08}, {1: 0.6 / 0.92, 2: 0.32 / 0.92, 3: 0.0}),
    ({1: 0.6, 2: 0.3, 3: 0.1}, {1: 0.6, 2: 0.3, 3: 0.1}),
    ({1: 0.45, 2: 0.45, 3: 0.1}, {1: 0.45, 2: 0.45, 3: 0.1}),
    ({1: 0.4, 2: 0.35, 3: 0.2, 4: 0.05}, {1: 0.4, 2: 0.35, 3: 0.2, 4: 0.05}),
    ({1: 0.475, 2: 0.025}, {1: 0.5, 2: 0.0}),
    ({1: 1.0, 2: 0.0}, {1: 1.0, 2: 0.0}),
    ({1: 0.0, 2: 0.0}, {1: 0.0, 2: 0.0}),
    ({}, {}),
], ids=["a crumb", "two crumbs", "a crumb beside two who keep theirs", "a tenth is no crumb",
        "no clear owner: alike candidates keep an even split", "a farm of four, spread",
        "half a delta: the crumb is measured on what was split", "nothing to move",
        "nothing split", "no candidate"])
def test_a_share_below_a_tenth_goes_to_the_others_beside_a_clear_owner(fractions, expected):
    got = without_crumbs(fractions)
    assert set(got) == set(fractions)  # every candidate keeps its key (its zero is a figure)
    assert got == pytest.approx(expected)
    assert sum(got.values()) == pytest.approx(sum(fractions.values()))


def _rates(per_read_1: int, per_read_2: int):
    return ev(*direct_around(1, 3400, 4720, per_read=per_read_1),
              *direct_around(2, 3400, 4720, per_read=per_read_2))


def test_an_evidence_split_with_a_clear_owner_gives_it_the_crumbs():
    # job 1 wrote 380 a read around the blind interval, job 2 20: the rules say 95 / 5,
    # and a delta has one owner far more often than two
    e = _rates(380, 20)
    rules = split(BLIND, WRITE, [A, B], e, [], now=20000)
    assert rules.rule == EVIDENCE
    assert rules.fractions == pytest.approx({1: 0.95, 2: 0.05})
    owned = owned_split(BLIND, WRITE, [A, B], e, [], now=20000)
    assert owned.rule == EVIDENCE and owned.fractions == pytest.approx({1: 1.0, 2: 0.0})


def test_an_evidence_split_without_a_clear_owner_is_left_as_the_rules_made_it():
    e = _rates(300, 100)
    assert owned_split(BLIND, WRITE, [A, B], e, [], now=20000).fractions == pytest.approx(
        {1: 0.75, 2: 0.25})


def test_a_split_by_time_is_left_as_it_is():
    # no rate at all: job 2 began 6 s before the read's end, and time says 120 : 6
    late = JobWindow(2, 1000, ("n1",), 4114.0, 10000.0)
    s = owned_split(BLIND, WRITE, [A, late], ev(), [], now=20000)
    assert s.rule == TIME
    assert s.fractions == pytest.approx({1: 120 / 126, 2: 6 / 126})


def test_each_jobs_figure_holds_the_whole_delta_or_none_of_it():
    own_1 = direct_around(1, 3400, 4720, per_read=380)
    own_2 = direct_around(2, 3400, 4720, per_read=20)
    one = attribute(A, own_1, [BLIND], [A, B], now=20000, evidence=own_2)
    two = attribute(B, own_2, [BLIND], [A, B], now=20000, evidence=own_1)
    assert one.totals["write_bytes"] == pytest.approx(sum(r.counters["write_bytes"]
                                                          for r in own_1) + 400)
    assert two.totals["write_bytes"] == pytest.approx(sum(r.counters["write_bytes"]
                                                          for r in own_2))
