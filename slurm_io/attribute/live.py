"""Shares of the `:uid:host` deltas of one recent interval, for the live views (`jobio top`,
the exporter, the alerts): the same rules as a job's attribution (attribute.evidence.split
per facet, with the evidence index and blind stretches attribute.core builds), applied to
the deltas of an interval instead of those of a job.

A view over an interval cannot read a job's stored figures (job_io holds a job's totals,
not its share of each interval), so it computes the shares; it computes them by the same
functions on the same kind of inputs, so a finished job's figures over the intervals of its
run add up to what `jobio show` reports (tests/views/test_top_evidence.py). What the rules
look at lies within evidence.WINDOWS of a delta: the inputs are fetched that far around
the interval, plus an hour for long intervals (as attribute.sql fetches a job's evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import psycopg

from slurm_io.attribute.core import (
    DeltaRow,
    JobWindow,
    blind_stretches,
    evidence_index,
)
from slurm_io.attribute.evidence import FACETS, WINDOWS, Evidence, facet, split, target_kind
from slurm_io.attribute.sql import DELTA_COLUMNS, _ts, delta_rows
from slurm_io.model import IdClass

Fractions = tuple[float, float, float]  # of the read, write and operations facets
_AROUND = WINDOWS[-1] + 3600.0

_PAIR_SQL = (
    DELTA_COLUMNS + " FROM unnest(%s::int[], %s::int[]) AS w(host_id, uid)"
    " JOIN jobstats_delta d ON d.host_id = w.host_id AND d.uid = w.uid"
    f" AND d.id_class = {int(IdClass.JOB_MISSING)} AND d.ts_end > %s AND d.ts_end <= %s"
    " JOIN fs_target t ON t.target_id = d.target_id JOIN host h ON h.host_id = d.host_id"
)
_EVIDENCE_SQL = (
    DELTA_COLUMNS + " FROM jobstats_delta d JOIN fs_target t USING (target_id)"
    " LEFT JOIN host h USING (host_id)"
    " WHERE d.job = ANY(%s) AND d.ts_end >= %s AND d.ts_end <= %s"
)


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
    around = delta_rows_of(conn, _PAIR_SQL, ([p[0] for p in pairs], [p[1] for p in pairs],
                                             _ts(lo - _AROUND), _ts(hi + _AROUND)))
    jobs = sorted({c.job for cs in candidates.values() for c in cs})
    ev_rows = delta_rows_of(conn, _EVIDENCE_SQL, (jobs, _ts(lo - _AROUND), _ts(hi + _AROUND)))
    names = dict(conn.execute("SELECT name, host_id FROM host WHERE host_id = ANY(%s)",
                              ([p[0] for p in pairs],)).fetchall())
    out = []
    by_pair: dict[tuple[int, int], list[DeltaRow]] = defaultdict(list)
    for d in around:
        if d.node in names and d.uid is not None:
            by_pair[(names[d.node], d.uid)].append(d)
    for pair, rows in by_pair.items():
        cands = candidates.get(pair, [])
        if not cands:
            continue
        ev = evidence_index(cands[0], [d for d in ev_rows if d.job == cands[0].job], cands,
                            ev_rows)
        blind = blind_stretches(rows)
        for d in rows:
            if not lo < d.ts_end <= hi:
                continue
            out.append((pair[0], d, fractions(d, cands, ev, blind.get(
                (d.node or "", target_kind(d.target)), []), now)))
    return out


def fractions(d: DeltaRow, cands: Sequence[JobWindow], ev: Evidence,
              holes: Sequence[tuple[float, float]], now: float) -> dict[int, Fractions]:
    """Each candidate's part of the facets of `d`, by evidence.split (as attribute.core)."""
    present = {facet(k) for k, v in d.counters.items() if v}
    parts: dict[int, list[float]] = {}
    for i, name in enumerate(FACETS):
        if name not in present:
            continue
        s = split(d, i, cands, ev, holes, now)
        for job, f in s.fractions.items():
            parts.setdefault(job, [0.0, 0.0, 0.0])[i] = f
    return {j: (f[0], f[1], f[2]) for j, f in parts.items() if any(f)}


def delta_rows_of(conn: psycopg.Connection, query: str, params: tuple[object, ...]
                  ) -> list[DeltaRow]:
    with conn.cursor(binary=True) as cur:
        cur.execute(query, params)
        return delta_rows(cur)
