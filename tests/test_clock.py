"""The daemons' clock (slurm_io/clock.py): the wall clock unless SLURM_IO_CLOCK compresses it
for a soak run, the same for every process given the same value."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from slurm_io import clock


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    clock._compressed.cache_clear()
    yield
    clock._compressed.cache_clear()


def test_without_the_variable_it_is_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(clock.ENV, raising=False)
    before = time.time()
    assert before <= clock.now() <= time.time()
    assert clock.wall_seconds(120.0) == 120.0


def test_compressed_from_an_absolute_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    wall0 = time.time() - 10.0  # ten wall seconds ago
    monkeypatch.setenv(clock.ENV, f"1790000000 {wall0} 720")
    now = clock.now()
    assert 1_790_000_000 + 10 * 720 <= now <= 1_790_000_000 + 11 * 720
    assert clock.wall_seconds(600.0) == pytest.approx(600 / 720)
    # another process with the same value reads the same clock (not its own start)
    other = subprocess.run([sys.executable, "-c", "from slurm_io import clock; "
                            "print(clock.now())"], capture_output=True, text=True, check=True,
                           env={"SLURM_IO_CLOCK": f"1790000000 {wall0} 720",
                                "PYTHONPATH": ":".join(sys.path)})
    assert abs(float(other.stdout) - clock.now()) < 720 * 5  # within 5 wall seconds


@pytest.mark.parametrize("value", ["1 2", "a b c", "1 2 0", "1 2 -3"])
def test_a_wrong_value_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(clock.ENV, value)
    with pytest.raises(SystemExit) as e:
        clock.now()
    assert clock.ENV in str(e.value) and "\n" not in str(e.value)
