"""LASSi's formulas on plain data."""

from __future__ import annotations

import pytest

from slurm_io.lassi import metrics as M


def test_risk_is_lassis_formula():
    # (x - a avg) / (a avg): twice the average with a = 2 is 0, four times is 1, none is -1
    assert M.risk(20, 10) == 0
    assert M.risk(40, 10) == 1
    assert M.risk(0, 10) == -1
    assert M.risk(30, 10, a=1) == 2
    assert M.risk(5, None) == 0 and M.risk(5, 0) == 0


def test_risk_oss_and_mds_sum_the_positive_risks_only():
    avgs = dict.fromkeys(M.METRICS, 10.0)
    s = M.score({"read_kb": 60, "write_ops": 5, "open": 100, "close": 30}, avgs)
    assert s.risk_oss == pytest.approx(2.0)  # read_kb: (60 - 20) / 20; write_ops negative
    assert s.risk_mds == pytest.approx(4.0 + 0.5)  # open 4, close 0.5
    assert set(s.risks) == {"read_kb", "open", "close"}


def test_kb_ops():
    n = 1000
    assert M.kb_ops(n, n * 4096 / 1024) == pytest.approx(256)  # 4 KiB requests
    assert M.kb_ops(n, n * 1024) == pytest.approx(1)  # 1 MiB requests
    assert M.kb_ops(0, 0) is None


def test_averages_ignore_zeros_and_baseline_falls_back_to_the_day():
    avg = M.averages([{"open": 10}, {"open": 30, "mkdir": 4}, {}])
    assert avg["open"] == 20 and avg["mkdir"] == 4 and avg["read_kb"] is None
    filled, own = M.fill_baseline({"open": 5.0}, avg)
    assert filled["open"] == 5.0 and filled["mkdir"] == 4 and own == ["mkdir"]


def test_metric_values_split_by_target_kind():
    sums = {"read_bytes": 2048, "read_bytes_samples": 2, "other": 7, "open": 3}
    assert M.metric_values("OST", sums) == {"read_kb": 2.0, "read_ops": 2.0, "other": 7.0}
    assert M.metric_values("MDT", sums) == {"open": 3.0}


def test_spread_buckets_and_log_bins():
    assert M.spread_buckets(118, 240, 120) == [120]  # a normal read: the bucket of its end
    assert M.spread_buckets(0, 600, 120) == [0, 120, 240, 360, 480]  # missed reads: spread
    assert M.spread_buckets(0, 600, 120, first=240) == [240, 360, 480]
    assert M.log_bin(64, 4) == 3 and M.log_bin(63.9, 4) == 2 and M.log_bin(1, 4) == 0
    assert M.log_bin(0.5, 4) == -1 and M.log_bin(0, 4) is None
