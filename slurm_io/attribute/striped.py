"""Rule 10 of attribute.evidence: a blind delta on an OST no candidate's phase shows (issue 21).

A phase striped over two OSTs puts each increment on one of them, and before the ids go
missing its rows may show it on one only. A blind delta on the other then names nobody's
phase (phases.expected_of expects nothing of anyone there, and the rates around divide it),
and rule 0 may rule its owner out where another candidate's server read a sliver by its id
at the delta's start (dense seed 1, node005: a 38.1 GiB write on OST0005 by a job whose
rows showed it writing on OST0006 until 2 s before, given whole to a job writing on OST0002
whose server read 9 s into the delta). What the data still holds is what the shown OSTs
moved in the same read: a phase going while the ids are missing moves bytes on all its OSTs
at once (37.4 GiB blind on OST0006 beside those 38.1, 16.4 on the other's OST0002); and a
job some of whose processes print no id moves bytes by its id on one OST while those
processes move them blind on another (leaky seed 7, node020: a 41 GiB blind write on
OST0002 beside 26.7 GiB by the owner's id on OST0001).

`striped` weighs each candidate by the facet's bytes in the delta's read interval on the
OSTs its phases meeting the delta show, blind or by its own id (per phase their mean: a
phase spreads evenly over its OSTs). Only where the phases say nothing of the delta's OST:
every phase meeting it has a known rate (one shown on the MDT only may be anywhere:
attribute.joint) and none shows that OST, nor does any candidate's own row on it around the
stretch (±SLIVER: a job that moved bytes there as the ids went missing is the rules' around
it, dense seed 1, node015); the stretch is at most WINDOWS[0] long (a longer one may hide a
phase of a job whose rows show none: dense seed 2, node001, a 20-minute stretch); and one
candidate's OSTs at least moved COMPARABLE of the delta so (trickles beside a large delta
say nothing of it: dense seed 4, node002). Rule 0 then counts that candidate busy
(`striping`).

Pure: every function reads its arguments only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.observed import (
    SLIVER,
    WINDOWS,
    Evidence,
    Interval,
    measures,
    overlap,
    stretch,
)

if TYPE_CHECKING:
    from slurm_io.attribute.leaks import NodeBlind
    from slurm_io.attribute.phases import Meeting
    from slurm_io.attribute.rows import DeltaRow

COMPARABLE = 0.25  # a candidate's shown OSTs must have moved this share of the delta


def blind_bytes(reads: Sequence[tuple[float, float, float, float]], i: int, a: float,
                b: float) -> float:
    """Facet `i` of one OST's blind reads (start, end, read, written) inside (a, b), each by
    the share of it that falls there (as Evidence.amount prorates a job's own rows)."""
    return sum((r, w)[i] * overlap(a, b, t0, t1) / max(t1 - t0, 1.0)
               for t0, t1, r, w in reads if t1 > a and t0 < b)


def striped(d: DeltaRow, i: int, met: Meeting | None, leaks: NodeBlind | None,
            jobs: Collection[int], evidence: Evidence, blind: Sequence[Interval]
            ) -> dict[int, float]:
    """Each candidate's weight for byte facet `i` of `d` from what its shown OSTs moved in
    the read (the module's docstring); empty where the rule does not apply. `met`: the candidates'
    phases meeting the delta (phases.meeting, joint.filled); `jobs`: the candidates."""
    if met is None or leaks is None or i > 1 or d.node is None:
        return {}
    if any(p.rate is None or d.target in p.osts for v in met.values() for p, _ in v):
        return {}
    h0, h1 = stretch(d.ts_start, d.ts_end, blind)
    if h1 - h0 > WINDOWS[0]:
        return {}
    if any(r.target == d.target and r.m[i] > 0 for j in jobs
           for r in evidence.between(d.node, j, h0 - SLIVER, h1 + SLIVER)):
        return {}
    a, b = d.ts_start, d.ts_end
    out = {j: sum(sum(blind_bytes(leaks.reads.get(o, []), i, a, b)
                      + evidence.amount(d.node, j, [(a, b)], o, "OST", i)
                      for o in p.osts) / len(p.osts) for p, _ in v if p.rate and p.osts)
           for j, v in met.items()}
    amount = measures(d.counters)[i]
    return out if max(out.values(), default=0.0) >= COMPARABLE * amount > 0 else {}


def striping(d: DeltaRow, i: int, weights: dict[int, float]) -> frozenset[int]:
    """The candidates rule 0 counts busy by rule 10: those whose shown OSTs moved
    COMPARABLE of facet `i` of `d` (`weights`: `striped`'s)."""
    floor = COMPARABLE * measures(d.counters)[i]
    return frozenset(j for j, w in weights.items() if w >= floor)
