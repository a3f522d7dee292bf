"""A blind OST delta that no candidate's phase shows, divided by the OST's course against
each candidate's MDT operations (issue 21, rule 11).

While a node's ids are missing on the OSTs, its jobs' MDT rows by their ids go on: read
after read, how many operations each job made. The OST's blind bytes, read after read, rise
and fall with the operations of the job that moved them. Where no candidate's phase meeting
the delta shows the delta's OST at a known rate (their phases show other OSTs, bridged over
the stretch, or the MDT only), the rates around and the paces weigh the candidates alike on
every OST: two tasks of one user, each reading its own OST through the stretch, got the same
shares of both OSTs (dense seed 2, node001: 0.65 / 0.35 on fs-OST0002 and fs-OST0006, each
OST all one task's). The least squares (rates >= 0) of the OST's blind bytes over the
stretch on the candidates' operations, read after read, then divides the delta, where it
holds:

- reads enough: the unknowns + 1 + EXTRA_READS or more (a fit of nearly as many reads as
  unknowns passes through any course: leaky seed 4, node032, three reads for two tasks
  gave a 19.3 GiB write to the task whose operations began one read later);
- each candidate's operations in two reads or more, no two candidates' courses alike
  (joint.fit_columns), no job of the uid that is no candidate running beside the delta
  (joint.fence: the course may be its);
- the fit explains the course: what it leaves unexplained is at most MAX_RESIDUAL of the
  course (the root of the sums of squares). A job's operations go on between its I/O
  phases (a task statting its inputs while it computes); where they do, the fit is poor
  and says nothing (dense seed 2, node001 again: fs-OST0002's course, all the task's whose
  operations went on after its read ended, left 0.60 unexplained, fs-OST0006's 0.29).

One OST's course is too noisy to reshuffle the shares of phases that all read it, by their
spans (attribute.joint, the ninth and tenth rounds of docs/attribution.md); operations
differ read after read where spans are flat, and the residual bound keeps the fits that
follow them. Pure: every function reads its arguments only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.joint import Read, fence, fit_columns, stretch_course
from slurm_io.attribute.observed import Evidence, Interval, Row, overlap
from slurm_io.attribute.phases import Meeting, rate_on

if TYPE_CHECKING:
    from slurm_io.attribute.leaks import NodeBlind
    from slurm_io.attribute.rows import DeltaRow

EXTRA_READS = 2  # reads beyond the unknowns + 1 that the fit needs
MAX_RESIDUAL = 0.4  # of the course's size: a fit leaving more unexplained says nothing


def operations(rows: Sequence[Row], reads: Sequence[Read]) -> list[float]:
    """A job's MDT operations in each of `reads`, each of its MDT `rows` prorated by its
    overlap with the read (servers read at their own times)."""
    mine = [r for r in rows if r.kind == "MDT" and r.m[2] > 0]
    return [sum(r.m[2] * overlap(t0, t1, r.t0, r.t1) / max(1.0, r.t1 - r.t0) for r in mine)
            for t0, t1, _ in reads]


def residual(y: Sequence[float], cols: Sequence[Sequence[float]], rates: Sequence[float]
             ) -> float:
    """What the fit leaves unexplained of `y`, as a share of it (1.0 where `y` is empty),
    over the reads some column meets."""
    useful = [k for k in range(len(y)) if any(c[k] > 0 for c in cols)]
    size = math.sqrt(sum(y[k] ** 2 for k in useful))
    if size <= 0:
        return 1.0
    left = sum((y[k] - sum(r * c[k] for r, c in zip(rates, cols, strict=True))) ** 2
               for k in useful)
    return math.sqrt(left) / size


def by_operations(d: DeltaRow, i: int, weights: Mapping[int, float], met: Meeting | None,
                  evidence: Evidence, leaks: NodeBlind | None, blind: Sequence[Interval],
                  others: Sequence[Interval]) -> dict[int, float] | None:
    """`weights` (job -> expected amount of facet `i`) with the candidates that have some
    (rule 0 ruled the others out) weighed by the fit of the OST's course on their
    operations (the module's docstring); None where it does not hold or does not apply:
    `met` (phases.meeting) None, or a phase in it showing d's OST at a known rate."""
    jobs = sorted(j for j, w in weights.items() if w > 0)
    if met is None or leaks is None or d.node is None or len(jobs) < 2:
        return None
    if any(rate_on(p, d.target) for v in met.values() for p, _ in v):
        return None  # a phase's rate there weighs it (rule 1)
    apart = fence(d, others)
    if apart is None:
        return None
    (h0, h1), reads = stretch_course(d, i, leaks, blind, apart)
    here = [k for k, r in enumerate(reads) if r[0] == d.ts_start and r[1] == d.ts_end]
    if not here or len(reads) < len(jobs) + 1 + EXTRA_READS:
        return None  # (fit_columns would say so, after reading every candidate's rows)
    cols = [operations(evidence.between(d.node, j, h0, h1), reads) for j in jobs]
    y = [r[2] for r in reads]
    rates = fit_columns(y, cols, EXTRA_READS)
    if rates is None or residual(y, cols, rates) > MAX_RESIDUAL:
        return None
    amounts = {j: r * c[here[0]] for j, r, c in zip(jobs, rates, cols, strict=True)}
    if sum(amounts.values()) <= 0:
        return None
    return {j: amounts.get(j, 0.0) for j in weights}
