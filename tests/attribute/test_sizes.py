"""Request sizes as evidence (attribute.sizes), in numbers: a blind delta's bytes per
request divide it between candidates of small and of large requests."""

from __future__ import annotations

import pytest

from slurm_io.attribute.core import DeltaRow, JobWindow
from slurm_io.attribute.evidence import EVIDENCE, Evidence, split
from slurm_io.attribute.sizes import by_size
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
