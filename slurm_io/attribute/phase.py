"""A candidate's current I/O phase around a blind stretch, from its own rows at its edges.

Experimental (issue 21, third round): see evidence.split.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Sequence

from slurm_io.attribute.observed import MIN_OBSERVED, Evidence, Interval, merge, overlap

SLIVER = 120.0  # a visible gap between two blind stretches no longer than this is a sliver
EDGE = 2 * MIN_OBSERVED  # how far from a blind stretch its edge rows may end or begin
V = os.environ.get("EDGE_VARIANT", "")


def region(a: float, b: float, blind: Sequence[Interval]) -> Interval:
    """The blind stretch around (a, b): the blind stretches meeting it, chained through
    slivers no longer than SLIVER."""
    chain = merge([*blind, (a, b)])
    lo, hi = a, b
    for h0, h1 in chain:
        if h1 >= a and h0 <= b:
            lo, hi = min(lo, h0), max(hi, h1)
    changed = True
    while changed:
        changed = False
        for h0, h1 in chain:
            if h1 < lo and lo - h1 <= SLIVER:
                lo, changed = h0, True
            if h0 > hi and h0 - hi <= SLIVER:
                hi, changed = h1, True
    return lo, hi


def _rate(r, i: int) -> float:  # noqa: ANN001
    v = r.m[2] if i == 2 else r.m[i]
    return v / max(r.t1 - r.t0, 1.0)


def phase_rate(ev: Evidence, node: str, job: int, kind: str, i: int, target: str | None,
               where: Interval) -> float | None:
    """The job's rate of facet `i` in its current phase across the blind stretch `where`:
    the rate of its rows in slivers inside it, else the lower of its rates in the read right
    before and right after it when both show that facet moving; None otherwise."""
    rows = ev._rows.get((node, job))
    if not rows:
        return None
    h0, h1 = where
    before: list = []
    after: list = []
    inside: list = []
    for r in rows[bisect_left(ev._starts[(node, job)], h0 - EDGE - ev._span):]:
        if r.t0 > h1 + EDGE:
            break
        if r.kind != kind or (target is not None and r.target != target) or r.t1 <= r.t0:
            continue
        if h0 - EDGE <= r.t1 <= h0 + 30:
            before.append(r)
        elif h1 - 30 <= r.t0 <= h1 + EDGE:
            after.append(r)
        elif overlap(r.t0, r.t1, h0, h1) > 0.5 * (r.t1 - r.t0):
            inside.append(r)
    if inside:
        best = max(_rate(r, i) for r in inside)
        if best > 0:
            return best
    if "edgeonly" not in V and inside:
        pass
    if before and after:
        last = max(r.t1 for r in before)
        first = min(r.t0 for r in after)
        rb = max(_rate(r, i) for r in before if r.t1 >= last - 30)
        ra = max(_rate(r, i) for r in after if r.t0 <= first + 30)
        if rb > 0 and ra > 0:
            return max(rb, ra) if "maxedge" in V else min(rb, ra)
    if "oneedge" in V:
        got = [_rate(r, i) for r in before + after]
        if got and max(got) > 0:
            return max(got)
    return None


def has_rows(ev: Evidence, node: str, job: int, lo: float, hi: float) -> bool:
    """Whether the job has any row by its own id on `node` (either kind) meeting (lo, hi)."""
    rows = ev._rows.get((node, job))
    if not rows:
        return False
    for r in rows[bisect_left(ev._starts[(node, job)], lo - ev._span):]:
        if r.t0 >= hi:
            break
        if r.t1 > lo:
            return True
    return False
