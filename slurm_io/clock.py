"""The time the daemons read: the wall clock, or a compressed one for a soak run.

Why a seam: bench/soak.py runs the collectors, their fake lctl and `jobio db prune` through
30 days in an hour. The time a collector stamps on a read (the rows' ts_end), the tick it
waits for, the age of its kept batches and the pruner's "now" must then pass 720 times
faster, and agree between processes. SLURM_IO_CLOCK="SIM0 WALL0 SPEED" gives every process
started with it the same clock: now() = SIM0 + (wall - WALL0) * SPEED (an absolute wall
reference, not each process's start), and a wait of s simulated seconds lasts s / SPEED.
Unset -- every site -- it is time.time() and waits are real seconds. Nothing else reads it:
PostgreSQL's now(), timeouts, retries and back-offs stay on the wall clock.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache

ENV = "SLURM_IO_CLOCK"


@lru_cache(maxsize=1)
def _compressed() -> tuple[float, float, float] | None:
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        sim0, wall0, speed = (float(x) for x in text.split())
    except ValueError:
        raise SystemExit(f"{ENV} must be 'SIM0 WALL0 SPEED' (three numbers), "
                         f"not {text!r}") from None
    if not speed > 0:
        raise SystemExit(f"{ENV}: SPEED must be positive, not {speed}")
    return sim0, wall0, speed


def now() -> float:
    """Seconds since the epoch on the daemons' clock."""
    c = _compressed()
    return time.time() if c is None else c[0] + (time.time() - c[1]) * c[2]


def wall_seconds(seconds: float) -> float:
    """How long a wait of `seconds` on the daemons' clock lasts on the wall clock."""
    c = _compressed()
    return seconds if c is None else seconds / c[2]
