"""The rate of a phase shown on the MDT only, from the course of one blind OST (issue 21).

A candidate whose I/O phase fell wholly in a stretch of blind OSTs shows that phase on the
MDT only: its span (attribute.phases), not its rate nor its OSTs. The phases then do not
weigh a delta it meets (phases.expected_of), and the rates around it, its pace or the rise
of its MDT activity divide the delta: tasks of a farm begun together, each reading OSTs of
its own, get shares by their MDT operations, whoever read that OST. What the data still
holds is the OST's course over the stretch: read after read, one OST's blind bytes rise and
fall with the spans of the phases that moved them, and an OST still read after a task's MDT
operations stopped is not that task's (nor one read before its phase began).

`filled` fits, for an OST delta that MDT-only phases meet, a rate per such phase on that
OST: the least squares (rates >= 0) of the OST's blind bytes read after read over the
stretch around the delta, less what the candidates' phases of known rate and OSTs expect
there, by each MDT-only phase's span's overlap with each read. A stretch of a blind
interval with no blind read of the OST (MIN_GAP or more) counts as reads of nothing, in
pieces of PERIOD: every byte moved on it then would have been blind.

The fit is used only where it rules a phase out: where it gives one MDT-only phase at most
RULED_OUT of what the phases expect in the delta, from reads of its span beyond the delta
(MIN_OTHER_READS or more). Then its rates weigh the delta as any phase's do (rule 1). A fit
that only reshuffles shares among phases that all read is noise more often than not: a
phase moves its bytes in bursts, each to one of its OSTs, so one OST's bytes per read vary
threefold with no change of phase, and a share half right on one OST and half wrong on
another does not cancel in the job's sum as an even split does (docs/attribution.md, ninth
and tenth rounds). Not fitted either where the course cannot tell the phases apart: fewer
reads meeting them than phases + 1, a phase met by one read only, two phases meeting the
reads alike (the cosine of their overlaps above MAX_COSINE), a job of the uid that is no
candidate running beside the delta (the course may be its); nor without the node's blind
reads (a delta weighed alone). There the rules around the delta decide, as before.

Pure: every function reads its arguments only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.leaks import nnls
from slurm_io.attribute.observed import Interval, overlap, stretch
from slurm_io.attribute.phases import Meeting, Phase, rate_on, span

if TYPE_CHECKING:
    from slurm_io.attribute.leaks import NodeBlind
    from slurm_io.attribute.rows import DeltaRow

MAX_COSINE = 0.8  # two phases' overlaps with the reads this alike: the course cannot tell
MIN_GAP = 60.0  # seconds of a blind interval with no blind read of the OST: a read of nothing
PERIOD = 120.0  # the pieces such a stretch counts as (a collector period)
RULED_OUT = 0.05  # a phase fitted to at most this share of the delta did not move it
MIN_OTHER_READS = 2  # reads of its span beyond the delta that must say so (one may be a lull)

Read = tuple[float, float, float]  # start, end, blind bytes of the facet


def course(reads: Sequence[tuple[float, float, float, float]], i: int, lo: float, hi: float,
           blind: Sequence[Interval]) -> list[Read]:
    """The OST's blind reads (start, end, read, written; by start) meeting [lo, hi] with
    facet `i`'s bytes, and the parts of the `blind` intervals there that no blind read of it
    covers for MIN_GAP or more, as reads of nothing in pieces of about PERIOD."""
    out: list[Read] = []
    covered: list[Interval] = []
    for t0, t1, r, w in reads:
        if t1 > lo and t0 < hi:
            out.append((t0, t1, (r, w)[i]))
            covered.append((t0, t1))
    for h0, h1 in blind:
        cursor = max(lo, h0)
        end = min(hi, h1)
        for t0, t1 in [*covered, (end, end)]:
            if t1 <= cursor or t0 > end:
                continue
            _nothing(cursor, min(t0, end), out)
            cursor = max(cursor, t1)
    return sorted(out)


def _nothing(a: float, b: float, out: list[Read]) -> None:
    """(a, b) as reads of nothing, about PERIOD each, if it is MIN_GAP long or more."""
    if b - a < MIN_GAP:
        return
    n = max(1, round((b - a) / PERIOD))
    step = (b - a) / n
    out.extend((a + k * step, a + (k + 1) * step, 0.0) for k in range(n))


def cosine(x: Sequence[float], y: Sequence[float]) -> float:
    """How alike two courses are in shape, whatever their sizes (1.0 where one is empty:
    nothing tells it apart)."""
    nx, ny = math.sqrt(sum(v * v for v in x)), math.sqrt(sum(v * v for v in y))
    return sum(a * b for a, b in zip(x, y, strict=True)) / (nx * ny) if nx and ny else 1.0


def stretch_course(d: DeltaRow, i: int, leaks: NodeBlind, blind: Sequence[Interval],
                   apart: Interval, within: Interval | None = None
                   ) -> tuple[Interval, list[Read]]:
    """The blind stretch around `d`, and its OST's course (`course`) over `within` (the
    whole stretch by default), its blind intervals those inside the stretch, and only the
    reads inside `apart` (`fence`: no job of the uid that is no candidate ran then)."""
    h0, h1 = stretch(d.ts_start, d.ts_end, blind)
    lo, hi = within if within is not None else (h0, h1)
    inside = [(max(a, h0), min(b, h1)) for a, b in blind if b > h0 and a < h1]
    reads = [r for r in course(leaks.reads.get(d.target, []), i, lo, hi, inside)
             if r[0] >= apart[0] and r[1] <= apart[1]]
    return (h0, h1), reads


def fence(d: DeltaRow, others: Sequence[Interval]) -> Interval | None:
    """The time around `d` no other job of the uid ran in (`others`: their runs on the
    node); None if one ran beside the delta itself."""
    lo, hi = float("-inf"), float("inf")
    for s0, s1 in others:
        if s1 <= d.ts_start:
            lo = max(lo, s1)
        elif s0 >= d.ts_end:
            hi = min(hi, s0)
        else:
            return None
    return lo, hi


def fit(reads: Sequence[Read], known: Sequence[float], spans: Sequence[Sequence[Interval]]
        ) -> list[float] | None:
    """Each phase's rate (bytes/s, >= 0) that best explains `reads` less `known` (what the
    phases of known rate expect in each), a phase `spans[p]` moving its rate over its
    overlap with each read; None where the course cannot tell the phases apart."""
    y = [max(0.0, r[2] - k) for r, k in zip(reads, known, strict=True)]
    cols = [[sum(overlap(t0, t1, *s) for s in spans_p) for t0, t1, _ in reads]
            for spans_p in spans]
    return fit_columns(y, cols)


def fit_columns(y: Sequence[float], cols: Sequence[Sequence[float]], extra: int = 0
                ) -> list[float] | None:
    """The least squares (each coefficient >= 0) of `y` read after read on `cols` (one per
    unknown, read after read); None where the reads cannot tell the unknowns apart: fewer
    reads meeting them than unknowns + 1 + `extra`, one met by fewer than two reads, or two
    alike (their cosine over those reads above MAX_COSINE)."""
    useful = [k for k in range(len(y)) if any(c[k] > 0 for c in cols)]
    if len(useful) < len(cols) + 1 + extra or any(sum(v > 0 for v in c) < 2 for c in cols):
        return None  # a phase met by one read: its rate there would be that read, not a fit
    if any(cosine([cols[p][k] for k in useful], [cols[q][k] for k in useful]) > MAX_COSINE
           for p in range(len(cols)) for q in range(p)):
        return None
    return nnls(cols, y, useful)


def rules_out(d: DeltaRow, reads: Sequence[Read], spans: Sequence[Sequence[Interval]],
              rates: Sequence[float], known_in_delta: float) -> bool:
    """Whether the fit rules phases out of `d`: some phase's rate over its overlap with the
    delta at most RULED_OUT of what every phase expects there, and each such phase's span
    meeting at least MIN_OTHER_READS reads beyond the delta's own."""
    mine = [r * sum(overlap(d.ts_start, d.ts_end, *s) for s in spans_p)
            for r, spans_p in zip(rates, spans, strict=True)]
    total = sum(mine) + known_in_delta
    out = [spans_p for m, spans_p in zip(mine, spans, strict=True) if m <= RULED_OUT * total]
    return total > 0 and bool(out) and all(
        sum(1 for t0, t1, _ in reads
            if t0 != d.ts_start and any(overlap(t0, t1, *s) > 0 for s in spans_p))
        >= MIN_OTHER_READS for spans_p in out)


def filled(d: DeltaRow, i: int, met: Meeting | None, runs_of: dict[int, Interval],
           leaks: NodeBlind | None, blind: Sequence[Interval],
           others: Sequence[Interval] = ()) -> Meeting | None:
    """`met` (phases.meeting) with each MDT-only phase given its rate on d's OST from the
    OST's course where the fit rules one of them out (the module's docstring); `met` itself
    elsewhere. `others`: the runs of the uid's jobs on the node that are no candidates."""
    if met is None or leaks is None or i > 1:
        return met
    unknown = {j: [span(p, runs_of[j]) for p, _ in v if p.rate is None]
               for j, v in met.items()}
    unknown = {j: s for j, s in unknown.items() if s}
    apart = fence(d, others)
    if not unknown or apart is None:
        return met
    lo = min(a for s in unknown.values() for a, _ in s)
    hi = max(b for s in unknown.values() for _, b in s)
    _, reads = stretch_course(d, i, leaks, blind, apart, (lo, hi))
    known = [0.0] * len(reads)
    known_in_delta = 0.0
    for j, v in met.items():
        for p, ov in v:
            per_ost = rate_on(p, d.target)
            if per_ost:
                s = span(p, runs_of[j])
                known_in_delta += per_ost * ov
                for k, (t0, t1, _) in enumerate(reads):
                    known[k] += per_ost * overlap(t0, t1, *s)
    jobs = sorted(unknown)
    spans = [unknown[j] for j in jobs]
    rates = fit(reads, known, spans)
    if rates is None or not rules_out(d, reads, spans, rates, known_in_delta):
        return met
    rate = dict(zip(jobs, rates, strict=True))
    return {j: [(Phase(p.t0, p.t1, rate[j], frozenset({d.target})) if p.rate is None else p,
                 ov) for p, ov in v] for j, v in met.items()}
