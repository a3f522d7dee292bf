"""The range rule (attribute.ranges) on hand-made deltas: least and most per job (no database).

Table tests: each row is a situation of the rules (own deltas, one candidate, several,
a candidate the split gave nothing, a job whose run misses the delta's interval) with the
least and most the rule must give, worked out by hand from the rule's text.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.core import JobWindow, attribute
from slurm_io.attribute.ranges import Bounds, bound, covers, wide
from slurm_io.model import IdClass
from tests.attribute.test_core import delta

A = JobWindow(1, 1000, ("n1",), 1000.0, 2000.0)
B = JobWindow(2, 1000, ("n1",), 1100.0, 1900.0)
C = JobWindow(3, 1000, ("n1",), 1950.0, 3000.0)  # ends after A: overlaps only A's end

OWN = delta(1200, 1320, job=1, cls=IdClass.EXACT, rb=100, wb=10, opens=3)
MISSING = delta(1200, 1320, rb=1000, wb=400, opens=8)  # A and B both run then
AT_END = delta(1960, 2080, rb=600)  # A (until 2000) and C (from 1950) both run then
LATE = delta(2500, 2620, rb=50)  # only C runs then


@pytest.mark.parametrize(("name", "job", "direct", "recovered", "cands", "read", "write",
                          "meta"), [
    # a delta naming the job: certain, least = most = the figure
    ("own only", A, [OWN], [], [A], (100, 100), (10, 10), (3, 3)),
    # one candidate: the job's whole, certain
    ("one candidate", A, [], [MISSING], [A], (1000, 1000), (400, 400), (8, 8)),
    # two candidates: least nothing of it, most all of it
    ("shared, A", A, [OWN], [MISSING], [A, B], (100, 1100), (10, 410), (3, 11)),
    ("shared, B", B, [], [MISSING], [A, B], (0, 1000), (0, 400), (0, 8)),
    # A's run and C's both overlap the interval: shared; the delta after A ended is C's alone
    ("edge, A", A, [], [AT_END, LATE], [A, C], (0, 600), (0, 0), (0, 0)),
    ("edge, C", C, [], [AT_END, LATE], [A, C], (50, 650), (0, 0), (0, 0)),
    # no delta at all
    ("nothing", A, [], [], [A], (0, 0), (0, 0), (0, 0)),
])
def test_range_rule_table(name, job, direct, recovered, cands, read, write, meta):
    io = attribute(job, direct, recovered, cands, now=5000)
    assert io.ranges == {"read_bytes": read, "write_bytes": write, "metadata_ops": meta}, name
    for k, fig in (("read_bytes", io.totals.get("read_bytes", 0)),
                   ("write_bytes", io.totals.get("write_bytes", 0)),
                   ("metadata_ops", io.quality["metadata_ops"])):
        assert covers(io.ranges[k], fig), (name, k)


def test_every_candidate_may_own_a_shared_delta_and_the_leasts_leave_it_to_someone():
    """Over the candidates of one delta: the figures add up to it, every most holds it
    whole, the leasts add up to nothing of it (no one is proven to own it)."""
    ios = [attribute(j, [], [MISSING], [A, B], now=5000) for j in (A, B)]
    assert sum(io.totals["read_bytes"] for io in ios) == 1000
    assert [io.ranges["read_bytes"] for io in ios] == [(0, 1000), (0, 1000)]


def test_the_range_does_not_depend_on_how_the_evidence_splits():
    """With evidence (A busy by its id during the blind delta) the split moves the figures,
    the range stays what the candidate sets give: the splitting rules change the figure,
    never the range (another candidate could have done it all, a process that lost its id
    prints nothing else)."""
    busy = delta(1200, 1320, job=1, cls=IdClass.EXACT, rb=5)
    io_b = attribute(B, [], [MISSING], [A, B], now=5000, evidence=[busy])
    io_a = attribute(A, [busy], [MISSING], [A, B], now=5000, evidence=[busy])
    assert io_a.totals["read_bytes"] + io_b.totals.get("read_bytes", 0) == 1005
    assert io_b.ranges["read_bytes"] == (0, 1000)
    assert io_a.ranges["read_bytes"] == (5, 1005)


def test_a_candidate_given_nothing_keeps_the_shared_delta_in_its_most():
    b = Bounds()
    b.shared({"read_bytes": 1000}, (0.0, 0.0, 0.0), ("evidence", "", ""), (True, False, False))
    assert b.ranges((0, 0, 0))["read_bytes"] == (0, 1000)


@pytest.mark.parametrize(("least", "most", "figure", "expected"), [
    (0.0, 0.0, 0, (0, 0)),
    (10.4, 20.2, 15, (10, 21)),  # outward to whole numbers
    (10.0, 20.0, 25, (10, 25)),  # a rounded figure is always inside
    (12.0, 20.0, 11, (11, 20)),
])
def test_bound_rounds_outward_and_holds_the_figure(least, most, figure, expected):
    assert bound(least, most, figure) == expected


@pytest.mark.parametrize(("figure", "r", "shown"), [
    (1000, (995, 1005), False),  # 1 % exactly: plain
    (1000, (990, 1011), True),  # wider than 1 %
    (0, (0, 0), False),
    (0, (0, 1), True),  # given nothing, may have done something
    (1000, None, False),  # unknown (stored by an older release): plain
])
def test_a_range_is_shown_when_wider_than_one_percent(figure, r, shown):
    assert wide(figure, r) is shown


def test_bounds_accumulate_facets_independently():
    b = Bounds()
    b.own({"read_bytes": 7, "open": 2})
    b.shared({"read_bytes": 10, "write_bytes": 20, "close": 4}, (0.5, 0.0, 1.0),
             ("evidence", "time", "single"), (True, False, True))
    assert b.ranges((12, 0, 6)) == {"read_bytes": (7, 17), "write_bytes": (0, 0),
                                    "metadata_ops": (6, 6)}


def test_a_delta_last_updated_in_the_second_the_job_started_is_in_its_most():
    """The entry's last update (snapshot_time) is the job's start: the effective interval
    (ts_start, last update] meets the run only at its edge, so the split gives the job
    nothing (and the bytes stay the user's), but Lustre's whole seconds do not rule the
    job out: its most holds the delta (seen on the leaky simulation, seed 1)."""
    d = delta(941, 1064, rb=320, last=1000)
    io = attribute(A, [], [d], [A], now=5000)
    assert io.totals.get("read_bytes", 0) == 0
    assert io.ranges["read_bytes"] == (0, 320)
    # a job that ended before the interval began does not meet it
    before = JobWindow(4, 1000, ("n1",), 500.0, 900.0)
    assert attribute(before, [], [d], [before], now=5000).ranges["read_bytes"] == (0, 0)


def test_a_job_starting_in_the_second_of_the_last_update_makes_the_delta_uncertain():
    """The split gives a delta whose entry was last updated at 1100 to A alone (B starts at
    1100: no overlap), but that update may be B's first I/O: A's least leaves it out, B's
    most holds it."""
    d = delta(1041, 1164, rb=500, last=1100)
    io_a = attribute(A, [], [d], [A, B], now=5000)
    io_b = attribute(B, [], [d], [A, B], now=5000)
    assert io_a.totals["read_bytes"] == 500 and io_b.totals.get("read_bytes", 0) == 0
    assert io_a.ranges["read_bytes"] == (0, 500)
    assert io_b.ranges["read_bytes"] == (0, 500)
