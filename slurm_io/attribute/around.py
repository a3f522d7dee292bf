"""Rule 1's reading of a blind delta: each candidate's rate around it, blind time taken out.

The rate of each candidate by its own id in the reads next to the delta, over the seconds
it was observed there (the node's blind stretches and the delta itself taken out), at the
narrowest window of WINDOWS in which every candidate was observed MIN_OBSERVED seconds;
attribute.evidence weighs the delta by it where no phase decides (docs/attribution.md, "How
a delta is split", rule 1). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.observed import (
    MIN_OBSERVED,
    WINDOWS,
    Evidence,
    Interval,
    merge,
    overlap,
    subtract,
    target_kind,
)

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow
    from slurm_io.jobs.info import JobWindow


def rates_around(d: DeltaRow, i: int, active: Sequence[JobWindow], runs: dict[int, Interval],
                 over: dict[int, float], evidence: Evidence, blind: Sequence[Interval]
                 ) -> tuple[dict[int, float], frozenset[int]] | None:
    """Rule 1: each candidate's rate around the delta (blind stretches taken out) times its
    overlap; None where a candidate was never observed or none moved the facet nearby."""
    assert d.node is not None
    a, b = d.ts_start, d.ts_end
    kind = target_kind(d.target)
    holes = merge([*blind, (a, b)])
    observed: dict[int, float] = {}
    windows: list[Interval] = []
    chosen = WINDOWS[0]
    for chosen in WINDOWS:
        windows = subtract(a - chosen, b + chosen, holes)
        observed = {c.job: sum(overlap(x, y, *runs[c.job]) for x, y in windows)
                    for c in active}
        if min(observed.values()) >= MIN_OBSERVED:
            break
    if min(observed.values()) < MIN_OBSERVED:
        return None  # a candidate ran (almost) only while blind: nothing to weigh it by
    for target in (d.target, None):
        weights = {}
        for c in active:
            got = evidence.amount(d.node, c.job, windows, target, kind, i)
            weights[c.job] = over[c.job] * got / observed[c.job]
        if sum(weights.values()) > 0:
            return weights, frozenset()
    if chosen < WINDOWS[-1]:
        # nothing of that facet nearby: the same kind over the widest window
        wide = subtract(a - WINDOWS[-1], b + WINDOWS[-1], holes)
        seen_for = {c.job: sum(overlap(x, y, *runs[c.job]) for x, y in wide) for c in active}
        weights = {c.job: over[c.job] * evidence.amount(d.node, c.job, wide, None, kind, i)
                   / seen_for[c.job] for c in active}
        if sum(weights.values()) > 0:
            return weights, frozenset()
    return None
