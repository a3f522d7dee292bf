"""The job page's charts, pure: readable at any job length (bins and time labels adapt),
the OST shares, and SVG that escapes what it prints."""

from __future__ import annotations

import re
from datetime import datetime

from slurm_io.web import chart

T0 = datetime(2026, 11, 20, 8, 0).timestamp()


def timeline(seconds: float, step: float) -> list[list[float]]:
    n = int(seconds // step)
    return [[T0 + step * (k + 1), 1e6 * step, 2e5 * step, 10 * step] for k in range(n)]


def test_a_five_minute_job_gets_fine_bins_and_clock_labels() -> None:
    b = chart.binned(timeline(300, 10), T0, T0 + 300)
    assert b.width == 10 and len(b.read) == 30
    assert all(abs(r - 1e6) < 1 for r in b.read)  # the rate, not the interval's bytes
    svg = chart.rates_svg(b)
    labels = re.findall(r'text-anchor="middle" font-size="11" fill="#0f172a">([^<]+)<', svg)
    assert 3 <= len(labels) <= 8 and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", x) for x in labels)
    assert svg.count("<rect") > 60  # 30 read bars, 30 write bars, the background


def test_a_seven_day_job_fits_in_at_most_max_bins_with_day_labels() -> None:
    b = chart.binned(timeline(7 * 86400, 120), T0, T0 + 7 * 86400)
    assert len(b.read) <= chart.MAX_BINS and b.width >= 3600
    assert abs(sum(b.read) * b.width - 1e6 * 7 * 86400) < 1e3  # no byte lost in binning
    labels = re.findall(r'text-anchor="middle" font-size="11" fill="#0f172a">([^<]+)<',
                        chart.meta_svg(b))
    assert 3 <= len(labels) <= 8 and all(re.fullmatch(r"[A-Z][a-z]{2} \d\d", x)
                                         for x in labels)


def test_bins_are_never_finer_than_the_collectors_resolution() -> None:
    b = chart.binned(timeline(600, 120), T0, T0 + 600)
    assert b.width >= 120


def test_a_job_without_timeline_still_draws_an_empty_chart() -> None:
    svg = chart.rates_svg(chart.binned([], T0, T0 + 60))
    assert svg.startswith("<svg") and 'role="img"' in svg and "<title" in svg


def test_ost_shares_are_biggest_first_and_the_rest_summed() -> None:
    by_target = {f"fs-OST{k:04x}": {"read_bytes": k + 1, "write_bytes": 0} for k in range(20)}
    by_target["fs-MDT0000"] = {"open": 5}
    rows = chart.ost_shares(by_target, top=16)
    assert len(rows) == 17 and rows[0][0] == "fs-OST0013" and rows[-1][0] == "4 other OSTs"
    assert sum(r + w for _, r, w in rows) == sum(range(1, 21))
    svg = chart.ost_svg(chart.ost_shares({"<b>OST1": {"read_bytes": 1}}))
    assert "<b>" not in svg and "&lt;b&gt;OST1" in svg


def test_axis_tops_are_round() -> None:
    assert [chart.nice_max(v) for v in (0, 0.3, 1, 1.1, 3, 7, 420)] == [1, 0.5, 1, 2, 5, 10,
                                                                        500]
