"""The caps of attribute.evidence (step 4 of its docstring, rule 3 in docs/attribution.md):
no candidate is given more of a `:uid:host` delta than it can have done, by the highest
rate it showed by its own id near the delta (its peak) or what the readings of rules 1
and 2 expect of it, whichever is higher.

Apart from evidence.py because it is the one step every split ends with; pure like the
rest: the peaks come from an Evidence, the liftings from the readings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_io.attribute.observed import CAP_SLACK, WINDOWS, measures, target_kind

if TYPE_CHECKING:
    from slurm_io.attribute.observed import Evidence
    from slurm_io.attribute.rows import DeltaRow


def capped(d: DeltaRow, i: int, fractions: dict[int, float], over: dict[int, float],
           evidence: Evidence, paced: dict[int, float] | None = None,
           phases: dict[int, float] | None = None, unseen: frozenset[int] = frozenset(),
           reach: dict[int, float] | None = None, uncapped: frozenset[int] = frozenset()
           ) -> dict[int, float]:
    """Fractions with no job given a rate above CAP_SLACK x the highest it showed by its
    own id on the node within the widest window around the delta (bytes for reads and
    writes, operations for the rest), or its amount in `paced` (its pace, or what its
    phase is expected to move in the delta: attribute.phases), or its rate in its current
    phase on the delta's target (`phases`) when higher, or its `reach` (phases.reach_of,
    not doubled: a bound already) when higher still; none for the `uncapped` (phases.unbounded:
    its phase is shown on the MDT only, its peaks are other phases'): what it can not have
    done goes to the candidates that can, in proportion to what they had, never to the
    `unseen` (ruled out by rule 0 with no row near the delta); where no candidate can, the
    rest is shared in proportion to their peaks (by time when no candidate showed any)."""
    amount = measures(d.counters)[i]
    if amount <= 0 or d.node is None or len(fractions) < 2:
        return fractions
    kind = target_kind(d.target)
    a, b = d.ts_start, d.ts_end
    caps: dict[int, float] = {}
    for j in fractions:
        if j in uncapped:  # no peak to read: none holds it
            caps[j] = float("inf")
            continue
        peak = evidence.peak(d.node, j, kind, i, a - WINDOWS[-1], b + WINDOWS[-1])
        caps[j] = float("inf") if peak is None else max(CAP_SLACK * max(
            peak * over[j], (paced or {}).get(j, 0.0),
            (phases or {}).get(j, 0.0) * over[j]), (reach or {}).get(j, 0.0)) / amount
    if all(c == float("inf") for c in caps.values()):
        return fractions
    out = dict(fractions)
    free = set(out) - unseen
    for _ in range(len(out)):
        hit = [j for j in free if out[j] > caps[j] + 1e-12]
        if not hit:
            return out
        excess = sum(out[j] - caps[j] for j in hit)
        for j in hit:
            out[j] = caps[j]
            free.discard(j)
        if not free:
            break
        base = sum(out[j] for j in free)
        for j in free:
            out[j] += excess * (out[j] / base if base > 0 else 1.0 / len(free))
    rest = sum(fractions.values()) - sum(out.values())
    if rest > 1e-12:
        takers = [j for j in out if j not in unseen] or list(out)
        peaks = {j: (caps[j] if caps[j] != float("inf") else 0.0) for j in takers}
        total = sum(peaks.values())
        for j in takers:
            out[j] += rest * (peaks[j] / total if total > 0
                              else over[j] / sum(over[k] for k in takers))
    return out
