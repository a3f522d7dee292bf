"""One owner per OST and collector interval: a split's crumbs go to its clear owner (issue 21).

A blind delta is a collector interval's bytes (or operations) on one target. On the
simulator's dense scenario 96 % of the ambiguous bytes lie in deltas one job owned alone
(>= 99 %): per OST and interval, one phase of one job reads or writes (docs/attribution.md,
"Where the error lies"). The rules weigh each candidate by its expected amount, and a
candidate whose expectation is a tenth of another's still gets a tenth of the delta: over
hundreds of deltas those crumbs add up in the jobs that did not move the bytes, small jobs
most of all (a few GiB given to a job that did 20 GiB is the per-job error the p90 reads).

So, where the rules found a clear owner (a candidate with at least CLEAR of the delta), a
share below CRUMB goes to the others, in proportion to theirs. Not where no candidate holds
CLEAR: there the rules weigh alike candidates (tasks of one farm, each reading its own OSTs
while the ids are missing), and an even split is the one whose errors cancel in each job's
sum; concentrating it there cost the dense scenario (bench/accuracy.py, seed 3: -0.004
points over placeable bytes with CRUMB alone). Only on the rules' evidence splits: a split
by time says nothing of who moved the bytes.

Measured on bench/accuracy.py's twelve scenario-seeds 1-4 (docs/attribution.md, issue 21's
eleventh round): the per-job p90 over placeable bytes falls on the eight where it was not
0 (dense and leaky), and no figure over placeable bytes and no distance to the ceiling
moves the wrong way; the headline of dense seed 2 loses 0.02 points, in deltas whose owner
printed its id nowhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.evidence import EVIDENCE, Split, split

if TYPE_CHECKING:
    from slurm_io.attribute.leaks import NodeBlind
    from slurm_io.attribute.observed import Evidence, Interval
    from slurm_io.attribute.rows import DeltaRow
    from slurm_io.jobs.info import JobWindow

CRUMB = 0.1  # a share below this, next to a clear owner, is taken for a crumb
CLEAR = 0.5  # a candidate with at least this share of the delta is its clear owner


def without_crumbs(fractions: dict[int, float]) -> dict[int, float]:
    """`fractions` (job -> share of one delta) with every share below CRUMB of their sum
    given to the other candidates in proportion to theirs, where one candidate holds at
    least CLEAR of it; as they are elsewhere. The sum is kept, and every job keeps its key."""
    total = sum(fractions.values())
    if total <= 0 or max(fractions.values()) < CLEAR * total:
        return fractions
    kept = {j: f for j, f in fractions.items() if f >= CRUMB * total}
    left = sum(kept.values())
    if left >= total:
        return fractions
    return {j: kept.get(j, 0.0) * total / left for j in fractions}


def owned_split(d: DeltaRow, i: int, candidates: Sequence[JobWindow], evidence: Evidence,
                blind: Sequence[Interval], now: float, leaks: NodeBlind | None = None,
                others: Sequence[Interval] = ()) -> Split:
    """evidence.split (the rules, whose weights its tests read as they are), then the
    crumbs of its evidence splits to the clear owner: what attribute.core and
    attribute.live divide a delta by."""
    s = split(d, i, candidates, evidence, blind, now, leaks, others)
    if s.rule != EVIDENCE:
        return s
    return s._replace(fractions=without_crumbs(s.fractions))
