"""Attribution rules on hand-made deltas (no database)."""

from __future__ import annotations

import pytest

from slurm_io.attribute.core import DeltaRow, JobWindow, attribute, share
from slurm_io.model import IdClass

MiB = 1 << 20


def delta(t0, t1, *, node="n1", uid=1000, job=None, cls=IdClass.JOB_MISSING, rb=0, wb=0,
          wreq=0, opens=0, last=None, target="fs-OST0000", wmin=None, wmax=None, whist=None):
    counters = {k: v for k, v in (("read_bytes", rb), ("write_bytes", wb),
                                  ("write_bytes_samples", wreq), ("open", opens)) if v}
    sizes = {"write": (wreq, wmin, wmax, whist)} if wreq else {}
    return DeltaRow(t0, t1, last, target, node, int(cls), job, uid, counters, sizes)


JOB = JobWindow(7, 1000, ("n1", "n2"), 1000.0, 2000.0)


def test_deltas_naming_the_job_are_wholly_its_own_even_outside_its_window():
    d = [delta(900, 1020, job=7, cls=IdClass.EXACT, rb=100),
         delta(1980, 2100, job=7, cls=IdClass.JOB_ONLY, rb=50)]
    io = attribute(JOB, d, [], [], now=5000)
    assert io.totals == {"read_bytes": 150}
    assert io.recovered == {} and io.split == {}


def test_job_missing_delta_inside_the_window_is_recovered_whole():
    io = attribute(JOB, [], [delta(1200, 1320, wb=600)], [JOB], now=5000)
    assert io.totals == {"write_bytes": 600} and io.recovered == {"write_bytes": 600}
    assert io.ambiguous == {} and io.split == {}
    assert io.by_node == {"n1": {"write_bytes": 600}}


def test_interval_straddling_the_start_goes_whole_to_the_only_job_and_is_flagged_split():
    # no other job of the uid on the node: what happened in (940, 1000] was the job starting
    # (a compute node runs a user's processes only inside their jobs)
    s = share(delta(940, 1060, wb=1200), JOB, [JOB], now=5000)
    assert s.fraction == pytest.approx(1.0) and s.split and not s.ambiguous
    io = attribute(JOB, [], [delta(940, 1060, wb=1200)], [JOB], now=5000)
    assert io.totals == {"write_bytes": 1200} and io.split == {"write_bytes": 1200}


def test_last_update_before_the_job_end_keeps_the_delta_whole():
    # read interval (1940, 2060], entry last updated at 1990, job ended at 2000
    s = share(delta(1940, 2060, wb=10, last=1990), JOB, [JOB], now=5000)
    assert s.fraction == pytest.approx(1.0) and not s.split


def test_two_jobs_of_the_same_uid_on_a_node_share_and_are_ambiguous():
    other = JobWindow(8, 1000, ("n1",), 1100.0, 1900.0)
    d = delta(1200, 1320, rb=1000)
    io7 = attribute(JOB, [], [d], [JOB, other], now=5000)
    io8 = attribute(other, [], [d], [JOB, other], now=5000)
    assert io7.totals["read_bytes"] + io8.totals["read_bytes"] == 1000
    assert io7.totals["read_bytes"] == 500 and io7.ambiguous == {"read_bytes": 500}


def test_concurrent_jobs_never_get_more_than_the_delta():
    a = JobWindow(1, 1000, ("n1",), 0.0, 100.0)
    b = JobWindow(2, 1000, ("n1",), 50.0, 200.0)
    d = delta(0, 200, rb=2000)
    fa = share(d, a, [a, b], now=500).fraction
    fb = share(d, b, [a, b], now=500).fraction
    assert fa + fb == pytest.approx(1.0)


def test_a_job_of_the_same_uid_on_another_node_does_not_compete():
    elsewhere = JobWindow(9, 1000, ("n9",), 1000.0, 2000.0)
    io = attribute(JOB, [], [delta(1200, 1320, rb=10)], [JOB, elsewhere], now=5000)
    assert io.ambiguous == {} and io.totals == {"read_bytes": 10}


def test_deltas_of_nodes_not_in_the_job_are_ignored():
    io = attribute(JOB, [], [delta(1200, 1320, node="n5", rb=10)], [JOB], now=5000)
    assert io.totals == {}


def test_running_job_counts_up_to_now():
    running = JobWindow(7, 1000, ("n1",), 1000.0, None)
    io = attribute(running, [], [delta(1200, 1320, rb=10), delta(1320, 1440, rb=5)], [running],
                   now=1440)
    assert io.totals == {"read_bytes": 15}


def test_timeline_buckets_at_the_collector_resolution():
    d = [delta(1080, 1200, job=7, cls=IdClass.EXACT, rb=4, opens=2),
         delta(1200, 1320, job=7, cls=IdClass.EXACT, wb=8, target="fs-OST0001")]
    io = attribute(JOB, d, [], [], now=5000)
    assert io.timeline == [[1200, 4, 0, 2], [1320, 0, 8, 0]]
    assert set(io.by_target) == {"fs-OST0000", "fs-OST0001"}


def test_4k_writes_give_write_kb_ops_256_and_all_small():
    d = [delta(1080, 1200, job=7, cls=IdClass.EXACT, wb=4096 * 1000, wreq=1000, wmin=4096,
               wmax=4096)]
    q = attribute(JOB, d, [], [], now=5000).quality
    assert q["write_kb_ops"] == pytest.approx(256)
    assert q["write_mean_size"] == 4096 and q["write_small_share"] == 1.0


def test_1m_writes_give_write_kb_ops_1_and_no_small_share():
    d = [delta(1080, 1200, job=7, cls=IdClass.EXACT, wb=MiB * 10, wreq=10, wmin=MiB, wmax=MiB)]
    q = attribute(JOB, d, [], [], now=5000).quality
    assert q["write_kb_ops"] == pytest.approx(1.0) and q["write_small_share"] == 0.0


def test_small_share_from_histograms_and_unknown_when_bounds_straddle():
    d = [delta(1080, 1200, job=7, cls=IdClass.EXACT, wb=3 * MiB + 4096 * 3, wreq=6,
               wmin=4096, wmax=MiB, whist=(("4K", 3), ("1M", 3)))]
    q = attribute(JOB, d, [], [], now=5000).quality
    assert q["write_small_share"] == 0.5 and q["write_hist"] == {"4K": 3, "1M": 3}
    d = [delta(1080, 1200, job=7, cls=IdClass.EXACT, wb=MiB + 4096, wreq=2, wmin=4096,
               wmax=MiB)]
    q = attribute(JOB, d, [], [], now=5000).quality
    assert q["write_small_share"] is None and q["write_small_share_basis"] == 0.0


def test_a_new_entry_created_after_the_other_job_ended_is_wholly_the_running_jobs():
    # job 6 of the same uid ended at 1000 and JOB started then; Lustre created the
    # `:uid:host` entry at 1010 (start_time, 2.15.2+): none of it can be job 6's
    before = JobWindow(6, 1000, ("n1",), 0.0, 1000.0)
    d = delta(940, 1060, wb=1200)._replace(entry_start=1010.0)
    io = attribute(JOB, [], [d], [JOB, before], now=5000)
    assert io.totals == {"write_bytes": 1200} and io.ambiguous == {}
    # without start_time both could own it: ambiguous, by time 60 s each
    io = attribute(JOB, [], [delta(940, 1060, wb=1200)], [JOB, before], now=5000)
    assert io.totals == {"write_bytes": 600} and io.by_time == {"write_bytes": 600}


def test_a_delta_is_split_once_per_batch_whatever_else_each_job_competes_with():
    # jobs 1 and 2 of uid 1000 share node n1 during (1200, 1320]; job 3 runs on n1 later
    # (3000-4000) and is among job 2's competitors only. The batch weighs the delta once:
    # the two shares add up to the delta, and job 3 (and a delta outside its run) get none
    a = JobWindow(1, 1000, ("n1",), 1000.0, 2000.0)
    b = JobWindow(2, 1000, ("n1",), 1100.0, 3500.0)
    c = JobWindow(3, 1000, ("n1",), 3000.0, 4000.0)
    d = delta(1200, 1320, wb=900)
    splits: dict = {}
    io_a = attribute(a, [], [d], [a, b], now=9000, splits=splits)
    io_b = attribute(b, [], [d], [a, b, c], now=9000, splits=splits)
    io_c = attribute(c, [], [d], [b, c], now=9000, splits=splits)
    assert io_a.totals["write_bytes"] + io_b.totals["write_bytes"] == 900
    assert io_c.totals == {} and io_c.n_recovered == 0
    assert len({k[:6] for k in splits}) == len(splits)  # one split per delta and facet
