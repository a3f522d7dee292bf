"""A blind OST delta no candidate's phase shows goes by the fit of the OST's course on each
candidate's MDT operations, where the fit explains the course (attribute.mdt_course, rule
11), in tables.

Node n1, uid 1000. The uid's OSTs on the node are blind from 3880 to 4720: seven reads of
120 s. Two tasks run all along and show only MDT rows by their ids there. Task 3 reads
fs-OST0000 at 100 bytes/s over the first four reads (50 operations per read), then computes
(10 per read); task 4 computes over the first two (10 per read), then reads fs-OST0001 at
100 bytes/s over the next four (50 per read). In the third and fourth reads both read, each
its own OST, and make as many operations: the rates around and the phases weigh them alike
on either OST.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.leaks import NodeBlind
from slurm_io.attribute.mdt_course import by_operations, operations, residual
from slurm_io.attribute.phases import Phase, meeting
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, ev, row

MDT, OST0, OST1 = "fs-MDT0000", "fs-OST0000", "fs-OST0001"
READS = [(3880.0 + 120 * k, 4000.0 + 120 * k) for k in range(7)]
STRETCH = [(3880.0, 4720.0)]
T3 = JobWindow(3, 1000, ("n1",), 3000.0, 10000.0)
T4 = JobWindow(4, 1000, ("n1",), 3000.0, 10000.0)
RUNS = {3: (3000.0, 10000.0), 4: (3000.0, 10000.0)}
OPS = {3: (50, 50, 50, 50, 10, 10, 10), 4: (10, 10, 50, 50, 50, 50, 10)}
COURSE = {OST0: (12000, 12000, 12000, 12000, 0, 0, 0),
          OST1: (0, 0, 12000, 12000, 12000, 12000, 0)}


def mdt(job, ops=None):
    """The task's MDT rows by its id, read after read, with its operations."""
    return [row(t0, t1, job=job, target=MDT, opens=n)
            for (t0, t1), n in zip(READS, ops or OPS[job], strict=True)]


def blind(target, per_read=None):
    """The uid's `:uid:host` reads of `target` (none where 0)."""
    per_read = per_read or COURSE[target]
    return [row(t0, t1, target=target, rb=b) for (t0, t1), b in zip(READS, per_read,
                                                                     strict=True) if b]


ROWS = mdt(3) + mdt(4)
NODE = NodeBlind("n1", blind(OST0) + blind(OST1))


def weigh(delta, rows=ROWS, node=NODE, stretch=STRETCH, weights=None, others=()):
    e = ev(*rows)
    met = meeting(delta, READ, [T3, T4], RUNS, e, stretch)
    return by_operations(delta, READ, weights or {3: 1.0, 4: 1.0}, met, e, node, stretch,
                         others)


@pytest.mark.parametrize("target, k, owner", [(OST0, 1, 3), (OST1, 4, 4), (OST0, 2, 3),
                                              (OST1, 3, 4)])
def test_each_tasks_ost_goes_to_the_task_whose_operations_its_course_follows(target, k,
                                                                                owner):
    # in the third and fourth reads too, where both tasks read and make as many operations
    t0, t1 = READS[k]
    got = weigh(row(t0, t1, target=target, rb=12000))
    assert got is not None
    assert got[owner] / sum(got.values()) == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("target, owner", [(OST0, 3), (OST1, 4)])
def test_split_gives_each_ost_read_in_both_tasks_reads_to_its_owner(target, owner):
    t0, t1 = READS[2]
    s = split(row(t0, t1, target=target, rb=12000), READ, [T3, T4], ev(*ROWS), STRETCH,
              now=20000, leaks=NODE)
    assert s.rule == EVIDENCE
    assert s.fractions[owner] == pytest.approx(1.0, abs=0.02)


DELTA = row(*READS[2], target=OST0, rb=12000)
SHORT = [(3880.0, 4240.0)]  # three reads: too few for two unknowns and EXTRA_READS
# case: (rows, node's blind reads, stretch, weights, others): the fit does not apply
NOT_APPLIED = {
    "the stretch holds too few reads": (
        [r for r in ROWS if r.ts_start < 4240], NodeBlind("n1", [
            r for r in blind(OST0) + blind(OST1) if r.ts_start < 4240]), SHORT, None, ()),
    # task 3's operations go on as they were after its read but for one read: fs-OST0000's
    # course stops with nothing in the operations to say so (their courses still apart:
    # cosine 0.76; the fit leaves 0.58 of the course)
    "a task's operations go on after its read: the fit leaves too much": (
        mdt(3, (50, 50, 50, 50, 50, 10, 50)) + mdt(4), NODE, STRETCH, None, ()),
    "the tasks' operations alike read after read": (
        mdt(3, OPS[3]) + mdt(4, OPS[3]), NODE, STRETCH, None, ()),
    "one candidate left by rule 0": (ROWS, NODE, STRETCH, {3: 1.0, 4: 0.0}, ()),
    "a job of the uid that is no candidate running beside the delta: the course may be its": (
        ROWS, NODE, STRETCH, None, [(3900.0, 5000.0)]),
    "without the node's blind reads": (ROWS, None, STRETCH, None, ()),
}


@pytest.mark.parametrize("case", NOT_APPLIED.values(), ids=NOT_APPLIED.keys())
def test_where_the_fit_does_not_hold_the_rules_before_it_stand(case):
    rows, node, stretch, weights, others = case
    assert weigh(DELTA, rows, node, stretch, weights, others) is None


def test_a_phase_showing_the_deltas_ost_at_a_known_rate_weighs_it_instead():
    e = ev(*ROWS)
    met = {3: [(Phase(3880.0, 4360.0, 100.0, frozenset({OST0})), 120.0)],
           4: [(Phase(4120.0, 4600.0, None, frozenset()), 120.0)]}
    assert by_operations(DELTA, READ, {3: 1.0, 4: 1.0}, met, e, NODE, STRETCH, ()) is None


def test_an_outages_long_read_is_left_to_the_rules_beside_it():
    # phases.meeting says nothing of an interval longer than WINDOWS[0]
    long = row(3880, 4720, target=OST0, rb=48000)
    assert weigh(long) is None


def test_a_candidate_rule_0_ruled_out_keeps_nothing():
    got = weigh(row(*READS[1], target=OST0, rb=12000), weights={3: 2.0, 4: 1.0, 9: 0.0})
    assert got is not None and got[9] == 0.0 and set(got) == {3, 4, 9}


# case: (rows (start, end, operations), reads, operations per read)
OPERATIONS = {
    "a row inside a read": ([(4000, 4120, 50)], [(4000, 4120, 0.0)], [50.0]),
    "a row over two reads, prorated": ([(4060, 4180, 60)],
                                       [(4000, 4120, 0.0), (4120, 4240, 0.0)], [30.0, 30.0]),
    "no row in the read": ([(4000, 4120, 50)], [(4240, 4360, 0.0)], [0.0]),
}


@pytest.mark.parametrize("case", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_a_tasks_operations_read_after_read(case):
    rows, reads, want = case
    e = ev(*[row(a, b, job=3, target=MDT, opens=n) for a, b, n in rows])
    assert operations(e.between("n1", 3, 0, 10000), reads) == pytest.approx(want)


def test_an_ost_row_is_no_operation():
    e = ev(row(4000, 4120, job=3, target=OST0, rb=500))
    assert operations(e.between("n1", 3, 0, 10000), [(4000.0, 4120.0, 0.0)]) == [0.0]


# case: (course, columns, rates, share left unexplained)
RESIDUAL = {
    "an exact fit": ([10.0, 20.0], [[1.0, 2.0]], [10.0], 0.0),
    "half of one read of two alike": ([10.0, 10.0], [[1.0, 1.0]], [5.0],
                                      pytest.approx(0.5)),
    "reads no column meets do not count": ([10.0, 99.0], [[1.0, 0.0]], [10.0], 0.0),
    "an empty course says nothing": ([0.0, 0.0], [[1.0, 1.0]], [0.0], 1.0),
}


@pytest.mark.parametrize("case", RESIDUAL.values(), ids=RESIDUAL.keys())
def test_what_the_fit_leaves_unexplained(case):
    y, cols, rates, want = case
    assert residual(y, cols, rates) == want


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.lists(st.integers(0, 2000), min_size=7, max_size=7), min_size=2,
                    max_size=3),
       per_read=st.lists(st.integers(0, 10**9), min_size=7, max_size=7),
       k=st.integers(0, 6), weights=st.lists(st.floats(0.0, 1e9), min_size=3, max_size=3))
def test_whatever_the_course_the_fit_gives_each_candidate_a_share_or_leaves_the_delta(
        ops, per_read, k, weights):
    # the candidates keep their keys, none gets a negative or infinite share, and one
    # rule 0 ruled out (weight 0) keeps nothing
    jobs = [3, 4, 5][:len(ops)]
    runs = {j: (3000.0, 10000.0) for j in jobs}
    cands = [JobWindow(j, 1000, ("n1",), 3000.0, 10000.0) for j in jobs]
    rows = [r for j, o in zip(jobs, ops, strict=True) for r in mdt(j, o) if r.counters]
    per_read[k] = max(per_read[k], 1)  # the delta itself moved bytes
    e = ev(*rows)
    delta = row(*READS[k], target=OST0, rb=per_read[k])
    met = meeting(delta, READ, cands, runs, e, STRETCH)
    given = dict(zip(jobs, weights, strict=False))
    got = by_operations(delta, READ, given, met, e, NodeBlind("n1", blind(OST0, per_read)),
                        STRETCH, ())
    if got is None:
        return
    assert set(got) == set(given)
    assert all(0.0 <= v < float("inf") for v in got.values()) and sum(got.values()) > 0
    assert all(got[j] == 0.0 for j, w in given.items() if w <= 0)
