"""Rule 0's idle candidates (attribute.evidence with readings.busy_at_edge), in tables.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s; the blind delta is (4000, 4120] on
fs-OST0000, 24000 bytes written; the uid's OST activity on the node was blind for exactly
that read (test_evidence.py). Job 2 printed its id inside the interval: the read of
fs-OST0001 at 4009, 8000 bytes written since 3998 (its server read 11 s after the others:
rule 0 counts it busy). Job 1 printed none there, but wrote on fs-OST0000 itself until the
read that ended at 3998, two seconds before the delta began: servers read at different
moments, and that row says job 1 was writing on the delta's OST as the ids went missing
(dense seed 1, node005: a 37 GiB blind write on the OST the idle job had been writing on,
given whole to the job whose sliver fell inside the interval).
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.readings import busy_at_edge, continuing
from slurm_io.jobs.info import JobWindow
from tests.attribute.test_evidence import READ, WRITE, A, B, ev, row

STRETCH = [(4000.0, 4120.0)]
DELTA = row(4000, 4120, wb=24000)
JOB2 = (row(3880, 3990, job=2, target="fs-OST0001", wb=20000),
        row(3998, 4009, job=2, target="fs-OST0001", wb=8000))  # busy: a sliver inside


def job1(t1=3998.0, *, target="fs-OST0000", wb=12000, t0=3880.0):
    """Job 1's last row before the delta: by default 12000 bytes written on the delta's OST
    in the read ending 2 s before it (102 bytes/s: 12200 over the delta, half of it)."""
    return (row(t0, t1, job=1, target=target, wb=wb),)


# case: (job 1's row, job 2's rows, the facet, whether rule 0 must keep job 1)
EDGE = {
    "a write on the delta's OST ending 2 s before it": (job1(), JOB2, WRITE, True),
    "ending 20 s after its start": (job1(4020.0, t0=3900.0), JOB2, WRITE, True),
    # a row ending up to NEAR (60 s) before it ended at its entry's last update: the job's
    # id stopped moving then, as the ids went missing (dense seed 2, node001: 27 s)
    "ending 30 s before it: its id stopped as the ids went missing": (
        job1(3970.0, t0=3850.0), JOB2, WRITE, True),
    "ending 70 s before it: the phase had ended": (job1(3930.0, t0=3810.0), JOB2, WRITE,
                                                   False),
    "on another OST: it says nothing of this one": (job1(target="fs-OST0002"), JOB2, WRITE,
                                                    False),
    "of the other facet": (job1(), JOB2, READ, False),
    # 1200 bytes in 118 s: 1220 over the delta, under a quarter of it (a log, not a phase)
    "a trickle, not an I/O phase": (job1(wb=1200), JOB2, WRITE, False),
    # a quarter of the delta (6000) is the floor: 6100 over it kept, 5900 not
    "a rate explaining just over a quarter": (job1(wb=6000), JOB2, WRITE, True),
    "just under a quarter": (job1(wb=5800), JOB2, WRITE, False),
    # an outage's long read ending there: its rate says little of the delta's moment
    "a read longer than two collector periods": (job1(t0=3600.0), JOB2, WRITE, False),
    # job 2 went on writing on the delta's OST in the read right after it: its phase ran
    # through the delta, and rule 0 keeps what it decided
    "a busy job writing on it right after": (
        job1(), (*JOB2, row(4120, 4240, job=2, wb=9000)), WRITE, False),
    "no busy job: rule 0 does not apply": (job1(), JOB2[:1], WRITE, False),
}


@pytest.mark.parametrize("case", EDGE.values(), ids=EDGE.keys())
def test_a_job_writing_on_the_delta_ost_as_the_ids_went_missing_is_not_idle(case):
    rows, others, i, kept = case  # the floor: EDGE_SHARE (a quarter) of the delta
    e = ev(*rows, *others)
    seen = frozenset({2}) if len(others) > 1 else frozenset()  # job 2's sliver inside
    delta = DELTA if i == WRITE else row(4000, 4120, rb=24000)
    going = continuing(delta, i, [A, B], e, {2: 100.0})  # job 2's rate in its phase
    got = busy_at_edge(delta, i, [A, B], e, seen, going)
    assert got == (frozenset({1}) if kept else frozenset())


# case: (when job 3 began, whether rule 0 must keep job 1, whose row on the delta's OST
# ended 30 s before it, at 3970)
FRESH = {
    "a task begun since that row ended: its start-up read is the likelier owner": (
        3985.0, False),
    "begun inside the delta": (4050.0, False),
    "begun just before that row ended (within EDGE)": (3960.0, False),
    "begun well before that row ended": (3900.0, True),
}


@pytest.mark.parametrize("case", FRESH.values(), ids=FRESH.keys())
def test_a_task_begun_since_the_edge_row_keeps_rule_0_for_it(case):
    began, kept = case
    third = JobWindow(3, 1000, ("n1",), began, 10000.0)
    rows = (*job1(3970.0, t0=3850.0), *JOB2)
    e = ev(*rows)
    got = busy_at_edge(DELTA, WRITE, [A, B, third], e, frozenset({2}), {})
    assert got == (frozenset({1}) if kept else frozenset())


def test_a_task_begun_since_does_not_matter_for_a_row_ending_within_edge():
    third = JobWindow(3, 1000, ("n1",), 3999.0, 10000.0)
    got = busy_at_edge(DELTA, WRITE, [A, B, third], ev(*job1(), *JOB2), frozenset({2}), {})
    assert got == frozenset({1})


def test_a_blind_write_on_the_ost_the_idle_job_was_writing_on_is_not_all_the_busy_ones():
    # rule 0 gave job 2 the whole delta (job 1 had no row inside it). Kept, job 1's phase
    # on fs-OST0000 meets the delta by its span's margin and job 2's phase is on fs-OST0001:
    # rule 2 gives the burst to the job whose rate can explain it on this OST
    e = ev(*job1(), *JOB2)
    s = split(DELTA, WRITE, [A, B], e, STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1.0, 2: 0.0})


def test_a_blind_read_is_the_job_reading_there_until_its_id_stopped_moving():
    # Dense seed 2, node001, scratch-OST0002, 7761-7882: job 3482806 read there by its id
    # about 1 GB a read until 7734 (its entry's last update), 27 s before a 0.87 GiB blind
    # read of it, all its own; job 3482799, busy by its id on OST0005 in the delta, had it
    # all (rule 0 ruled the first out: its row ended more than EDGE before). Here job 1
    # reads fs-OST0000 12000 a read until 3973; job 2 writes on fs-OST0001 in the delta.
    rows = [row(t, t + 93, job=1, rb=12000) for t in range(3520, 3900, 120)]
    rows += [row(t, t + 110, job=2, target="fs-OST0001", wb=20000)
             for t in range(3520, 4240, 120)]
    s = split(row(4000, 4120, rb=12000), READ, [A, B], ev(*rows), STRETCH, now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions == pytest.approx({1: 1.0, 2: 0.0})
