"""Request sizes as evidence (attribute.sizes), in numbers: a blind delta's bytes per
request divide it between candidates of small and of large requests."""

from __future__ import annotations

import pytest

from slurm_io.attribute.core import DeltaRow, JobWindow
from slurm_io.attribute.evidence import EVIDENCE, Evidence, split
from slurm_io.attribute.sizes import by_requests, by_size
from slurm_io.model import IdClass

KIB, MIB = 1024, 1 << 20


def test_the_requests_give_each_size_class_its_bytes():
    # 100 MiB in 4 MiB requests (25) and 10 MiB in 4 KiB requests (2560) in one delta
    got = by_size(110 * MIB, 25 + 2560, {1: 1.0, 2: 1.0}, {1: 4 * KIB, 2: 4 * MIB})
    assert got is not None
    assert got[1] == pytest.approx(10 / 110) and got[2] == pytest.approx(100 / 110)


def test_within_a_class_the_other_rules_divide():
    # jobs 2 and 3 write 4 MiB requests and the rates say 3:1 between them; job 1 4 KiB
    got = by_size(110 * MIB, 25 + 2560, {1: 1.0, 2: 3.0, 3: 1.0},
                  {1: 4 * KIB, 2: 4 * MIB, 3: 4 * MIB})
    assert got is not None
    assert got[1] == pytest.approx(10 / 110)
    assert got[2] == pytest.approx(0.75 * 100 / 110) and got[3] == pytest.approx(0.25 * 100 / 110)


@pytest.mark.parametrize(("requests", "sizes"), [
    (25, {1: 4 * MIB, 2: 2 * MIB}),  # both write large requests: sizes cannot tell
    (2585, {1: 4 * KIB, 2: None}),  # job 2 made no request by its id nearby
    (2585, {1: 200 * KIB, 2: 4 * MIB}),  # job 1 is neither small nor large
    (10, {1: 4 * KIB, 2: 4 * MIB}),  # 11 MiB per request: above every candidate's size
    (0, {1: 4 * KIB, 2: 4 * MIB}),  # no request count (an op-only or damaged delta)
])
def test_where_sizes_say_nothing_nothing_changes(requests, sizes):
    assert by_size(110 * MIB, requests, {1: 1.0, 2: 1.0}, sizes) is None


def _delta(t0, t1, job, *, wb, reqs, node="n1"):
    counters = {"write_bytes": wb, "write_bytes_samples": reqs}
    cls = IdClass.JOB_MISSING if job is None else IdClass.EXACT
    return DeltaRow(t0, t1, None, "fs-OST0000", node, int(cls), job, 1000, counters, {})


def test_a_small_request_job_and_a_large_one_split_by_their_requests():
    # around the blind interval both wrote 110 MiB per read by their own ids, job 1 in
    # 4 KiB requests, job 2 in 4 MiB ones: their rates alone give half each. The blind
    # delta's 2585 requests for 110 MiB say 10 MiB were job 1's and 100 MiB job 2's.
    a, b = JobWindow(1, 1000, ("n1",), 0.0, 9000.0), JobWindow(2, 1000, ("n1",), 0.0, 9000.0)
    rows = []
    for t in range(3400, 4720, 120):
        if t == 4000:
            continue
        rows.append(_delta(t, t + 120, 1, wb=110 * MIB, reqs=110 * 256))
        rows.append(_delta(t, t + 120, 2, wb=110 * MIB, reqs=110 // 4))
    e = Evidence([(r.job, r.node, r) for r in rows])
    blind = _delta(4000, 4120, None, wb=110 * MIB, reqs=25 + 2560)
    s = split(blind, 1, [a, b], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(10 / 110, rel=1e-3)
    assert s.fractions[2] == pytest.approx(100 / 110, rel=1e-3)


# by_requests: the request count bounds the bytes of the candidates whose size rows show
KB5, MB2 = 5 * 1000, 2.2e6


def test_a_burst_of_large_requests_is_not_the_job_of_small_ones():
    # dense seed 2, node015: 3.17 GB in 1,439 requests; job 1 writes 5 KB requests by its
    # id around it and its rate expects 0.5 GB; job 2, a task shown on the MDT only, has no
    # size and no rate. Job 1 could have made every request: 1,439 x 5 KB at most.
    got = by_requests(1439 * MB2, 1439, {1: 0.5e9, 2: 0.0}, {1: KB5, 2: None},
                      {1: 122.0, 2: 122.0}, ())
    assert got is not None
    assert got[1] == pytest.approx(1439 * KB5)
    assert got[2] == pytest.approx(1439 * MB2 - 1439 * KB5)


def test_within_each_side_the_weights_divide_and_among_the_unseen_without_any_time():
    got = by_requests(1000 * MB2, 1000, {1: 3.0, 2: 1.0, 3: 0.0, 4: 0.0},
                      {1: KB5, 2: 2 * KB5, 3: None, 4: None}, {1: 120, 2: 120, 3: 90, 4: 30},
                      ())
    assert got is not None
    cap = 1000 * 2 * KB5  # the largest size seen: every request could be job 2's
    assert got[1] == pytest.approx(0.75 * cap) and got[2] == pytest.approx(0.25 * cap)
    rest = 1000 * MB2 - cap
    assert got[3] == pytest.approx(0.75 * rest) and got[4] == pytest.approx(0.25 * rest)


@pytest.mark.parametrize(("amount", "requests", "weights", "sizes", "excluded"), [
    (1439 * MB2, 1439, {1: 1.0, 2: 1.0}, {1: KB5, 2: 4 * MIB}, ()),  # every size known
    (1439 * MB2, 1439, {1: 1.0, 2: 1.0}, {1: None, 2: None}, ()),  # none known
    (1439 * MB2, 1439, {1: 1.0, 2: 0.0}, {1: KB5, 2: None}, (2,)),  # the unseen ruled out
    (1439 * MB2, 1439, {1: 1.0, 2: 1.0}, {1: MB2, 2: None}, ()),  # the seen make such sizes
    (1439 * 3 * KB5, 1439, {1: 1.0, 2: 1.0}, {1: KB5, 2: None}, ()),  # under APART x theirs
    (1439 * MB2, 1439, {1: 0.001, 2: 1.0}, {1: KB5, 2: None}, ()),  # their weight fits
    (1439 * MB2, 0, {1: 1.0, 2: 1.0}, {1: KB5, 2: None}, ()),  # no request count
])
def test_where_the_count_binds_no_one_nothing_changes(amount, requests, weights, sizes,
                                                      excluded):
    assert by_requests(amount, requests, weights, sizes, {1: 120, 2: 120}, excluded) is None


def test_a_task_shown_on_the_mdt_only_gets_the_large_requests_no_rate_gives_it():
    # job 1 writes 110 MiB a read in 4 KiB requests around the blind interval; job 2 opens a
    # few files on the MDT in it and never prints an OST row; both open files in it. The
    # blind delta: 1 GiB in 300 requests, 3.4 MiB each. Rule 2 gives job 1 twice what its
    # rate expects (0.21 of it) and job 2 the rest; job 1's 4 KiB requests could carry
    # 1.2 MiB of it.
    a, b = JobWindow(1, 1000, ("n1",), 0.0, 9000.0), JobWindow(2, 1000, ("n1",), 0.0, 9000.0)
    rows = [_delta(t, t + 120, 1, wb=110 * MIB, reqs=110 * 256)
            for t in range(3400, 4720, 120) if t != 4000]
    mdt = [DeltaRow(4000, 4120, None, "fs-MDT0000", "n1", int(IdClass.EXACT), j, 1000,
                    {"open": 20}, {}) for j in (1, 2)]
    e = Evidence([(r.job, r.node, r) for r in [*rows, *mdt]])
    blind = _delta(4000, 4120, None, wb=1024 * MIB, reqs=300)
    s = split(blind, 1, [a, b], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(300 * 4 * KIB / (1024 * MIB), rel=1e-3)
    assert s.fractions[2] == pytest.approx(1 - 300 * 4 * KIB / (1024 * MIB), rel=1e-3)
