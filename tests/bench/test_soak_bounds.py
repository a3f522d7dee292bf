"""The soak's database bound (bench/soak_plot.py): flat once both retentions apply, judged
on each simulated day's peak of a sawtooth (a day's partition dropped each night)."""
from __future__ import annotations

import pytest

from bench import soak_plot


def _run(peaks_mb: list[float], from_day: int = 0) -> list[dict[str, float]]:
    """Samples of a run: each day rises from 80 % of its peak to the peak (the nightly drop)."""
    rows = []
    for day, peak in enumerate(peaks_mb, start=from_day):
        for step in range(4):
            rows.append({"sim_day": day + step / 4, "db_bytes": peak * 1e6 * (0.8 + step / 15)})
    return rows


def test_daily_peaks_are_each_days_largest_sample_from_the_settle_day() -> None:
    rows = _run([100, 200, 300])
    peaks = soak_plot.daily_peaks(rows, 1)
    assert sorted(peaks) == [1, 2]
    assert peaks[1] == pytest.approx(200e6 * (0.8 + 3 / 15))


@pytest.mark.parametrize(("peaks", "flat"), [
    ([300] * 14, True),                        # flat
    ([300, 305, 298, 310, 302] * 3, True),     # noise within +10 %
    ([300 + 3 * d for d in range(21)], True),  # +1 % a day over 21 days: within the bound
    ([300 + 10 * d for d in range(21)], False),  # the results tier growing unpruned
    ([300] * 7 + [400] * 7, False),            # a step up
])
def test_database_is_judged_flat_by_its_halves(peaks: list[float], flat: bool,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert soak_plot._judge_db_size(_run(peaks, 9), 9) is flat
    assert "second half's highest" in capsys.readouterr().out


def test_a_run_shorter_than_its_retention_is_not_judged(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A site's 5-year results retention: the database grows all the run, by design."""
    assert soak_plot._judge_db_size(_run([100 + 50 * d for d in range(30)]), 1827) is True
    assert "not judged" in capsys.readouterr().out
