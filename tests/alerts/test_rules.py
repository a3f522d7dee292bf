"""The alert rules as pure functions: each kind fires at its threshold and not below."""

from __future__ import annotations

from slurm_io.alerts.rules import JobWindow, Rules, advice, check, lassi_values

RULES = Rules(window=3600, interval=120, risk=5, metadata_ops=1e6, small_writes=200_000,
              small_write_size=16384, sustained=0.75)


def _w(**totals: float) -> JobWindow:
    return JobWindow(1, "1", 1000, "u", "a", "n", ("c1",), 0.0, totals=dict(totals))


def test_metadata_threshold():
    assert [f.kind for f in check(_w(open=600_000, close=400_000), RULES, {})] == ["metadata"]
    assert check(_w(open=500_000, close=499_999), RULES, {}) == []


def test_small_writes_must_be_small_many_and_sustained():
    w = _w(write_bytes_samples=300_000, write_bytes=300_000 * 4096)
    w.write_intervals = 30
    assert [f.kind for f in check(w, RULES, {})] == ["small_writes"]
    w.write_intervals = 20  # 2/3 of the intervals: a burst, not sustained
    assert check(w, RULES, {}) == []
    big = _w(write_bytes_samples=300_000, write_bytes=300_000 * (1 << 20))
    big.write_intervals = 30
    assert check(big, RULES, {}) == []
    w.write_intervals = 30
    assert [a.key for a in advice(w, check(w, RULES, {}), RULES)] == ["small_writes"]
    storm = _w(open=2e6)
    texts = advice(storm, check(storm, RULES, {}), RULES)
    assert [a.key for a in texts] == ["metadata"] and "opens" in texts[0].finding


def test_risk_against_the_baseline_and_none_without_one():
    by_kind = {"MDT": {"open": 3e5, "close": 3e5}}
    w = _w(open=3e5, close=3e5)
    w.lassi = {"fs1": lassi_values(by_kind)}
    base = {"fs1": {"open": 1e4, "close": 1e4}}
    found = check(w, RULES, base)
    assert [f.kind for f in found] == ["risk"]
    # (3e5 - 2e4) / 2e4 = 14 per operation, two operations
    assert found[0].figures["risk_mds"] == 28.0
    assert check(w, RULES, {}) == []
    assert check(w, RULES, {"fs1": {"open": 1e5, "close": 1e5}}) == []  # 0.5 each
