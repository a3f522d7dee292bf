"""Shares of the `:uid:host` deltas of one recent interval, for the live views (`jobio top`,
the exporter, the alerts): the same rules as a job's attribution (attribute.evidence.split
per facet, with the evidence index and blind stretches attribute.core builds), applied to
the deltas of an interval instead of those of a job.

A view over an interval cannot read a job's stored figures (job_io holds a job's totals,
not its share of each interval), so it computes the shares; it computes them by the same
functions on the same kind of inputs, so a finished job's figures over the intervals of its
run add up to what `jobio show` reports (tests/views/test_top_evidence.py). What the rules
look at lies within evidence.WINDOWS of a delta: the inputs are fetched that far around
the interval, plus an hour for long intervals, by the same questions as a job's (attribute.sql).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute import sql
from slurm_io.attribute.core import blind_stretches, evidence_index, sole_deltas
from slurm_io.attribute.evidence import (
    FACETS,
    WINDOWS,
    Evidence,
    effective,
    facet,
    run_of,
    target_kind,
)
from slurm_io.attribute.leaks import NodeBlind
from slurm_io.attribute.ranges import touches
from slurm_io.attribute.rows import DeltaRow
from slurm_io.attribute.sole_owner import owned_split
from slurm_io.jobs.info import JobWindow

if TYPE_CHECKING:
    import psycopg

Fractions = tuple[float, float, float]  # of the read, write and operations facets
_AROUND = WINDOWS[-1] + 3600.0


def _us(t: float) -> float:
    """`t` on the server's microsecond grid, as the queries compare it."""
    return round(t * 1e6) / 1e6


def interval_shares(conn: psycopg.Connection, candidates: dict[tuple[int, int], list[JobWindow]],
                    lo: float, hi: float, now: float
                    ) -> list[tuple[int, DeltaRow, dict[int, Fractions]]]:
    """(host id, delta, job -> fractions) for each `:uid:host` delta with ts_end in (lo, hi]
    of the (host id, uid) pairs in `candidates` (the jobs of that uid on that host around
    the interval). The fractions of a delta add up to at most 1 per facet; the rest is the
    user's load outside jobs."""
    if not candidates:
        return []
    pairs = sorted(candidates)
    a, b = lo - _AROUND, hi + _AROUND
    # the deltas of the pairs with ts_end in (a, b] (ts_start < ts_end: the pair window's
    # upper bound a second later bounds only ts_end); then exactly b, on the server's grid
    b_us = _us(b)
    names = sql.host_names(conn, [p[0] for p in pairs])
    by_name = {(names[h], uid): (a, b + 1.0) for h, uid in pairs if h in names}
    around = [d for d in sql.deltas_by_pair(conn, by_name, 0.0) if d.ts_end <= b_us]
    jobs = sorted({c.job for cs in candidates.values() for c in cs})
    by_job = sql.deltas_by_job(conn, dict.fromkeys(jobs, (a, b)))
    ev_rows = [d for j in jobs for d in by_job.get(j, ())]
    ids = {name: h for h, name in names.items()}
    out = []
    by_pair: dict[tuple[int, int], list[DeltaRow]] = defaultdict(list)
    for d in around:
        if d.node in ids and d.uid is not None:
            by_pair[(ids[d.node], d.uid)].append(d)
    # every job of the uid on the host within the rules' reach: which deltas one alone owns
    neighbours: dict[tuple[str, int], list[JobWindow]] = defaultdict(list)
    for nj in sql.jobs_by_pair(conn, {k: (a, b) for k in by_name}):
        neighbours[(nj.node, nj.uid)].append(nj.job)
    for pair, rows in by_pair.items():
        cands = candidates.get(pair, [])
        if not cands:
            continue
        node = names[pair[0]]
        sole = sole_deltas(rows, {node: neighbours.get((node, pair[1]), cands)}, now, (a, b))
        ev = evidence_index(cands[0], [d for d in ev_rows if d.job == cands[0].job], cands,
                            ev_rows, sole)
        blind = blind_stretches(rows)
        leaks = NodeBlind(rows[0].node or "", rows)  # one node, one uid
        for d in rows:
            if not lo < d.ts_end <= hi:
                continue
            out.append((pair[0], d, fractions(d, cands, ev, blind.get(
                (d.node or "", target_kind(d.target)), []), now, leaks)))
    return out


def fractions(d: DeltaRow, cands: Sequence[JobWindow], ev: Evidence,
              holes: Sequence[tuple[float, float]], now: float, leaks: NodeBlind | None = None
              ) -> dict[int, Fractions]:
    """Each candidate's part of the facets of `d`, by evidence.split (as attribute.core):
    every candidate the split weighed, those it gave nothing included, and those whose run
    meets the delta's interval only at an edge (one of them may still own it:
    attribute.ranges; the views leave them out of the figures)."""
    present = {facet(k) for k, v in d.counters.items() if v}
    eff = effective(d)
    parts: dict[int, list[float]] = {c.job: [0.0, 0.0, 0.0] for c in cands
                                     if touches(eff, run_of(c, now))}
    for i, name in enumerate(FACETS):
        if name not in present:
            continue
        s = owned_split(d, i, cands, ev, holes, now, leaks)
        for job, f in s.fractions.items():
            parts.setdefault(job, [0.0, 0.0, 0.0])[i] = f
    return {j: (f[0], f[1], f[2]) for j, f in parts.items()}

