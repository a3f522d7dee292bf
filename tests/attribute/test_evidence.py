"""The evidence rule for `:uid:host` deltas two or more jobs of a user could own, in numbers.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s. The blind stretch is the delta's own
interval (4000, 4120]; the collectors read every 120 s.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.core import DeltaRow, JobWindow, attribute
from slurm_io.attribute.evidence import (
    EVIDENCE,
    SINGLE,
    TIME,
    Evidence,
    merge,
    split,
    subtract,
)
from slurm_io.model import IdClass

A = JobWindow(1, 1000, ("n1",), 0.0, 10000.0)
B = JobWindow(2, 1000, ("n1",), 0.0, 10000.0)
READ, WRITE, OPS = 0, 1, 2


def row(t0, t1, *, job=None, target="fs-OST0000", rb=0, wb=0, opens=0, node="n1", last=None):
    counters = {k: v for k, v in (("read_bytes", rb), ("write_bytes", wb), ("open", opens))
                if v}
    cls = IdClass.JOB_MISSING if job is None else IdClass.EXACT
    return DeltaRow(t0, t1, last, target, node, int(cls), job, 1000, counters, {})


def direct_around(job, t_from, t_to, *, per_read, target="fs-OST0000", kind="wb", step=120):
    """A job's own deltas every `step` seconds outside the blind interval (4000, 4120]."""
    out = []
    t = t_from
    while t < t_to:
        if not (4000 <= t < 4120):
            out.append(row(t, t + step, job=job, target=target, **{kind: per_read}))
        t += step
    return out


def ev(*rows):
    return Evidence([(r.job, r.node, r) for r in rows])


BLIND = row(4000, 4120, wb=400)
BOTH_OPENED = (row(4000, 4120, job=1, target="fs-MDT0000", opens=5),
               row(4000, 4120, job=2, target="fs-MDT0000", opens=5))


def test_split_follows_each_jobs_own_rate_around_the_blind_interval():
    # job 1 wrote 300 per read around it, job 2 100: the 400 blind bytes split 300 / 100
    e = ev(*direct_around(1, 3400, 4720, per_read=300), *direct_around(2, 3400, 4720,
                                                                       per_read=100))
    s = split(BLIND, WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(0.75) and s.fractions[2] == pytest.approx(0.25)


def test_a_job_observed_doing_nothing_gets_nothing():
    e = ev(*direct_around(1, 3400, 4720, per_read=300))
    s = split(BLIND, WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE and s.fractions == {1: 1.0, 2: 0.0}


def test_reads_and_writes_are_weighed_separately():
    # job 1 only reads, job 2 only writes: each part of a delta with both goes one way
    e = ev(*direct_around(1, 3400, 4720, per_read=500, kind="rb"),
           *direct_around(2, 3400, 4720, per_read=50))
    d = row(4000, 4120, rb=500, wb=50)
    assert split(d, READ, [A, B], e, [], now=20000).fractions == {1: 1.0, 2: 0.0}
    assert split(d, WRITE, [A, B], e, [], now=20000).fractions == {1: 0.0, 2: 1.0}
    io = attribute(A, [], [d], [A, B], now=20000, evidence=direct_around(2, 3400, 4720,
                                                                       per_read=50))
    # attribute() gets job 1's own deltas as `direct`; here none: it has rate 0 on writes,
    # and no one read around it; but job 2 never moved more than 50 bytes a read: it gets
    # at most 100 of the 500 read, job 1 the rest
    assert io.totals == {"read_bytes": 400} and io.by_evidence == {"read_bytes": 400}


def test_another_target_of_the_same_kind_counts_when_the_delta_target_shows_nothing():
    e = ev(*direct_around(1, 3400, 4720, per_read=200, target="fs-OST0001"),
           *direct_around(2, 3400, 4720, per_read=600, target="fs-OST0002"))
    s = split(BLIND, WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(0.25) and s.fractions[2] == pytest.approx(0.75)


def test_the_delta_target_comes_before_other_targets():
    e = ev(*direct_around(1, 3400, 4720, per_read=300),
           *direct_around(2, 3400, 4720, per_read=900, target="fs-OST0002"))
    assert split(BLIND, WRITE, [A, B], e, [], now=20000).fractions == {1: 1.0, 2: 0.0}


def test_metadata_target_activity_is_no_evidence_for_an_object_target():
    e = ev(*direct_around(1, 3400, 4720, per_read=300, target="fs-MDT0000"))
    s = split(BLIND, WRITE, [A, B], e, [], now=20000)
    assert s.rule == TIME and s.fractions == {1: 0.5, 2: 0.5}


def test_a_job_that_ran_only_while_blind_falls_back_to_time():
    short = JobWindow(3, 1000, ("n1",), 3990.0, 4130.0)
    e = ev(*direct_around(1, 3400, 4720, per_read=300))
    # short overlaps the delta for 120 s, job 1 for 120 s; short's run outside the blind
    # stretch is 20 s in all, below what makes a rate: time overlap decides
    s = split(BLIND, WRITE, [A, short], e, [], now=20000)
    assert s.rule == TIME and s.fractions[1] == pytest.approx(0.5)


def test_rows_are_aligned_by_time_not_by_read():
    # job 2's server reads 7 s later (and was blind as well from 4007 to 4127): its rows
    # straddle the window's edges; only the parts inside count, pro rata
    e = ev(*direct_around(1, 3400, 4720, per_read=300),
           *[row(t + 7, t + 127, job=2, wb=300) for t in range(3400, 4720, 120) if t != 4000])
    s = split(BLIND, WRITE, [A, B], e, [], now=20000)
    # job 2's rows 3887-4007 and 4607-4727 lie 7/120 outside the window: 2965 against 3000
    assert s.fractions[2] == pytest.approx(2965 / 5965)


@pytest.mark.parametrize(("blind_from", "blind_last", "own_last", "rate1", "share1"), [
    # some processes of job 2 lost their id (ranks started outside srun) while the others
    # kept it: job 2's own entry was updated at 4060, inside the blind entry's span
    # (4010-4110); job 1 100 per read, job 2 300 around. Job 2's own 300 bytes in the 60 s
    # to that update, and its row right after the delta, show its phase going on at 5
    # bytes/s: it is expected 600 (rule 1's continuing, issue 21), job 1 100
    (4010.0, 4110.0, 4060.0, 100, 1 / 7),
    # a node-wide stretch of missing ids ended at 4070 (the blind entry's last update) and
    # job 2 printed its id again after it (4110): equal rates around, but its 300 bytes in
    # the 110 s to 4110 (and the row after the delta) put job 2 at 300 x 120 / 110
    (3000.0, 4070.0, 4110.0, 300, 300 / (300 + 300 * 120 / 110)),
])
def test_a_job_printing_its_id_during_the_blind_interval_may_still_own_it(
        blind_from, blind_last, own_last, rate1, share1):
    # job 2 printing its id on the OSTs then does not make the blind bytes job 1's: the
    # rates around decide (both opened files by their id on the MDT, so neither was idle)
    blind = row(4000, 4120, wb=400, last=blind_last)._replace(entry_start=blind_from)
    e = ev(*direct_around(1, 3400, 4720, per_read=rate1), *direct_around(2, 3400, 4720,
                                                                         per_read=300),
           row(4000, 4120, job=2, wb=300, last=own_last), *BOTH_OPENED)
    s = split(blind, WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(share1)
    assert s.fractions[2] == pytest.approx(1 - share1)


def test_blind_stretches_are_not_counted_as_observed_time():
    # job 2 starts at 3000 inside a blind stretch 2800-4000 that hides both jobs; around it
    # job 1 writes 100/read, job 2 100/read: equal rates, equal overlap -> half each
    late = JobWindow(2, 1000, ("n1",), 3000.0, 10000.0)
    rows = [r for r in direct_around(1, 1600, 5320, per_read=100) if not 2800 <= r.ts_start
            < 4000]
    rows += [r for r in direct_around(2, 3160, 5320, per_read=100) if r.ts_start >= 4000]
    blind = merge([(2800.0, 4000.0)])
    s = split(BLIND, WRITE, [A, late], ev(*rows), blind, now=20000)
    assert s.rule == EVIDENCE and s.fractions[2] == pytest.approx(0.5)


def test_the_jobs_that_overlap_share_the_whole_delta_and_never_more():
    # the delta spans 3800-4200 but job 2 runs only from 4000 and job 1 from 3900: 3800-3900
    # is no job's time, so I/O in it can only have been a job's start (no processes of a
    # user outside their jobs on a compute node); the two share all of it, no more
    early = JobWindow(1, 1000, ("n1",), 3900.0, 10000.0)
    late = JobWindow(2, 1000, ("n1",), 4000.0, 10000.0)
    d = row(3800, 4200, wb=1000)
    e = ev(*direct_around(1, 4200, 5000, per_read=300), *direct_around(2, 4200, 5000,
                                                                       per_read=300))
    s = split(d, WRITE, [early, late], e, [], now=20000)
    assert sum(s.fractions.values()) == pytest.approx(1.0)
    # equal rates: by overlap, 300 s against 200 s
    assert s.fractions[1] == pytest.approx(0.6)


def test_no_job_is_given_more_than_twice_the_highest_rate_it_showed():
    # job 1 streams in bursts and was idle around the blind interval (but read 60 000 in one
    # read interval earlier); job 2 writes a steady 100 per read. Job 2's rate says "all
    # of it is mine", but 12 000 bytes in 120 s is 60x what job 2 ever did: it gets at most
    # twice its peak (200), job 1 the rest
    e = ev(row(1000, 1120, job=1, rb=60000), *direct_around(2, 3400, 4720, per_read=100))
    s = split(row(4000, 4120, wb=12000), WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[2] == pytest.approx(200 / 12000)
    assert s.fractions[1] == pytest.approx(1 - 200 / 12000)


def test_what_no_job_ever_showed_is_shared_by_their_peaks():
    # both jobs capped: 2 x 100 and 2 x 300 per read fit in the 8000; the rest goes 1:3
    e = ev(*direct_around(1, 3400, 4720, per_read=100), *direct_around(2, 3400, 4720,
                                                                       per_read=300))
    s = split(row(4000, 4120, wb=8000), WRITE, [A, B], e, [], now=20000)
    assert sum(s.fractions.values()) == pytest.approx(1.0)
    assert s.fractions[2] == pytest.approx(3 * s.fractions[1])


def test_one_candidate_is_not_ambiguous():
    s = split(BLIND, WRITE, [A], Evidence(), [], now=20000)
    assert s.rule == SINGLE and s.fractions == {1: 1.0}


def test_attribute_says_how_much_rests_on_evidence_and_on_time():
    own = direct_around(1, 3400, 4720, per_read=300)
    other = direct_around(2, 3400, 4720, per_read=100)
    d_w = row(4000, 4120, wb=400)
    d_meta = row(4000, 4120, opens=10, target="fs-MDT0000")
    io1 = attribute(A, own, [d_w, d_meta], [A, B], now=20000, evidence=other)
    io2 = attribute(B, other, [d_w, d_meta], [A, B], now=20000, evidence=own)
    assert io1.by_evidence == {"write_bytes": 300} and io2.by_evidence == {"write_bytes": 100}
    assert io1.by_time == {"open": 5} and io2.by_time == {"open": 5}
    assert io1.ambiguous == {"open": 5, "write_bytes": 300}
    # the direct part is untouched: 10 reads of 300 each
    assert io1.totals["write_bytes"] - io1.recovered["write_bytes"] == 300 * 10


def test_subtract_and_merge_of_intervals():
    assert merge([(5, 6), (1, 3), (2, 4)]) == [(1, 4), (5, 6)]
    assert subtract(0, 10, [(1, 4), (5, 6), (9, 12)]) == [(0, 1), (4, 5), (6, 9)]
    assert subtract(2, 3, [(1, 4)]) == []


C = JobWindow(3, 1000, ("n1",), 0.0, 10000.0)


def test_a_burst_far_beyond_every_measured_rate_goes_to_the_job_idle_around_it():
    # job 1 writes a steady 100 per read around the blind read, job 2 nothing (it computes).
    # 1000 blind bytes are 10x job 1's rate: job 1 is given twice its rate (200), the
    # burst nobody's rate shows (800) is job 2's, the candidate idle by its id around it
    e = ev(*direct_around(1, 3400, 4720, per_read=100))
    s = split(row(4000, 4120, wb=1000), WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(0.2) and s.fractions[2] == pytest.approx(0.8)


def test_a_job_writing_right_at_the_edge_of_the_blind_stretch_keeps_its_burst():
    # job 1 wrote 600 in the read just before the blind one and nothing else within 10 min:
    # its 10-min rate predicts 60, but its rate at the edge predicts 600, and 2 x 600 covers
    # the 1000 blind bytes: all of them stay job 1's, job 2 (idle) gets none
    e = ev(row(3880, 4000, job=1, wb=600))
    s = split(row(4000, 4120, wb=1000), WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE and s.fractions == {1: 1.0, 2: 0.0}


def test_the_rest_of_a_burst_follows_the_metadata_activity_that_rose_during_it():
    # OSTs blind, MDT not: jobs 1 and 2 open 10 files per read throughout; job 3 opens none
    # around the blind read and 50 during it (it entered an I/O phase). Job 1 writes 100
    # per read around it, jobs 2 and 3 nothing: of 1000 blind bytes job 1 gets 2 x 100, the
    # 800 no rate shows go to job 3, whose metadata activity rose, none to job 2
    mdt = "fs-MDT0000"
    e = ev(*direct_around(1, 3400, 4720, per_read=100),
           *direct_around(1, 3400, 4720, per_read=10, target=mdt, kind="opens"),
           *direct_around(2, 3400, 4720, per_read=10, target=mdt, kind="opens"),
           row(4000, 4120, job=1, target=mdt, opens=10), row(4000, 4120, job=2, target=mdt,
                                                             opens=10),
           row(4000, 4120, job=3, target=mdt, opens=50))
    s = split(row(4000, 4120, wb=1000), WRITE, [A, B, C], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(0.2) and s.fractions[3] == pytest.approx(0.8)
    assert s.fractions[2] == 0.0


def test_without_rates_the_job_whose_metadata_activity_rose_gets_the_blind_bytes():
    # neither job wrote by its id within an hour (no OST rate); on the MDT, not blind, job 1
    # opens a steady 10 files per read throughout, job 2 none around and 40 during the
    # blind read: job 2 entered an I/O phase then, and gets all 500 bytes (not 250 by time)
    mdt = "fs-MDT0000"
    e = ev(*direct_around(1, 3400, 4720, per_read=10, target=mdt, kind="opens"),
           row(4000, 4120, job=1, target=mdt, opens=10),
           row(4000, 4120, job=2, target=mdt, opens=40))
    s = split(row(4000, 4120, wb=500), WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE and s.fractions == {1: 0.0, 2: 1.0}


def test_a_job_that_printed_its_id_until_the_blind_entry_was_created_may_own_it():
    # job 1's own entry was last updated at 4030; the `:uid:host` entry was created at 4060
    # (start_time): job 1 printed its id until the ids went missing. By the rates around
    # (300 and 100 per read) it gets 3/4 of the 150 blind bytes; both did I/O in that
    # interval (job 2 opened files on the MDT), so neither is ruled out as idle
    busy2 = row(4000, 4120, job=2, target="fs-MDT0000", opens=5)
    e = ev(*direct_around(1, 3400, 4720, per_read=300), row(4000, 4120, job=1, wb=150,
                                                            last=4030),
           *direct_around(2, 3400, 4720, per_read=100), busy2)
    blind = row(4000, 4120, wb=150)._replace(entry_start=4060.0)
    s = split(blind, WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(0.75) and s.fractions[2] == pytest.approx(0.25)


def test_the_time_rule_alone_for_measuring_ignores_what_the_jobs_did_by_their_id():
    # core.attribute_by_time (bench/accuracy.py's baseline, no production path): the same
    # delta as above is halved between the two jobs, all of it by time
    from slurm_io.attribute.core import attribute_by_time

    own = direct_around(1, 3400, 4720, per_read=300)
    other = direct_around(2, 3400, 4720, per_read=100)
    d_w = row(4000, 4120, wb=400)
    io1 = attribute_by_time(A, own, [d_w], [A, B], now=20000)
    io2 = attribute_by_time(B, other, [d_w], [A, B], now=20000)
    assert io1.by_time == io2.by_time == {"write_bytes": 200} and io1.by_evidence == {}
    with_evidence = attribute(A, own, [d_w], [A, B], now=20000, evidence=other)
    assert with_evidence.by_evidence == {"write_bytes": 300}
    assert io1.totals["write_bytes"] - io1.recovered["write_bytes"] == 300 * 10
