"""What the data shows about each job by its own id: intervals, facets and the Evidence index.

The building blocks of the evidence rule (attribute.evidence): a delta's effective interval,
interval arithmetic (overlap, union, difference), the facets a delta is weighed by, and the
index of each job's directly identified rows per node, sorted by time, with the questions
the rule asks of it (was the job seen then, its amount in a window, its peak rate, its bytes
per metadata operation, its rate in the slivers of a blind stretch, any row near an
interval, its rows in an interval: what attribute.phases rebuilds its phases from); and
apart, the `:uid:host` deltas one job alone can own (its sole deltas, attribute.core), whose
rates count among its peaks. The readings of a blind delta's own interval are in
attribute.readings. Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow
    from slurm_io.jobs.info import JobWindow

FACETS = ("read", "write", "ops")
WINDOWS = (600.0, 1800.0, 3600.0)  # seconds around the delta in which evidence is looked for
MIN_OBSERVED = 240.0  # two collector periods: less is not a rate
CAP_SLACK = 2.0  # a job is given at most twice the highest rate it showed by its own id
NEAR = 60.0  # half a collector period: rows of the reads next to an interval, servers apart
SLIVER = 120.0  # a collector period: a visible gap this short between blind stretches

Interval = tuple[float, float]


_FACET_OF: dict[str, str] = {}


def facet(counter: str) -> str:
    """The facet a counter belongs to: bytes and requests of reads, of writes, or operations."""
    f = _FACET_OF.get(counter)
    if f is None:
        f = ("read" if counter.startswith("read_bytes") else
             "write" if counter.startswith("write_bytes") else "ops")
        _FACET_OF[counter] = f
    return f


def measures(counters: dict[str, int]) -> tuple[float, float, float]:
    """(read bytes, write bytes, operations) of a delta: what its facets are weighed by."""
    ops = sum(v for k, v in counters.items() if facet(k) == "ops")
    return float(counters.get("read_bytes", 0)), float(counters.get("write_bytes", 0)), ops


def requests(counters: dict[str, int]) -> tuple[float, float]:
    """(read requests, write requests) of a delta."""
    return (float(counters.get("read_bytes_samples", 0)),
            float(counters.get("write_bytes_samples", 0)))


def target_kind(target: str) -> str:
    """MDT or OST from a target name (`scratch-MDT0000`, `scratch-OST0003`)."""
    return "MDT" if "-MDT" in target else "OST"


def effective(d: DeltaRow, created: bool = False) -> Interval:
    """The interval in which the delta's I/O can have happened.

    An entry's snapshot_time is its last update: nothing moved after it, so the interval
    ends there when it is inside the read interval (epoch times only). With `created`, its
    start_time (2.15.2+) too: nothing moved before the entry was created. split() uses that
    for a delta one job can own (the job's edges); between several candidates it weighs the
    read interval, as their own rows are read intervals (narrowing there measured worse).
    """
    start, end = d.ts_start, d.ts_end
    if d.last_update is not None and start < d.last_update < end:
        end = d.last_update
    if created and d.entry_start is not None and start < d.entry_start < end:
        start = d.entry_start
    return start, end


def run_of(c: JobWindow, now: float) -> Interval:
    return (c.start if c.start is not None else float("-inf"),
            c.end if c.end is not None else now)


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Union of intervals as sorted disjoint intervals."""
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def subtract(lo: float, hi: float, holes: Sequence[Interval]) -> list[Interval]:
    """[lo, hi] minus sorted disjoint `holes`."""
    out: list[Interval] = []
    cur = lo
    i = bisect_left(holes, (lo, lo))
    if i > 0 and holes[i - 1][1] > lo:
        i -= 1
    for a, b in holes[i:]:
        if a >= hi:
            break
        if a > cur:
            out.append((cur, a))
        cur = max(cur, b)
    if cur < hi:
        out.append((cur, hi))
    return out


def stretch(a: float, b: float, blind: Sequence[Interval]) -> Interval:
    """The blind stretch around the interval (a, b): the stretches of `blind` (sorted,
    disjoint) that meet it, chained through visible slivers no longer than SLIVER (a node
    whose ids came back for one read and went again is still in the same episode)."""
    lo, hi = a, b
    for h0, h1 in blind:
        if h1 >= a and h0 <= b:
            lo, hi = min(lo, h0), max(hi, h1)
    changed = True
    while changed:
        changed = False
        for h0, h1 in blind:
            if h1 < lo and lo - h1 <= SLIVER:
                lo, changed = h0, True
            if h0 > hi and h0 - hi <= SLIVER:
                hi, changed = h1, True
    return lo, hi


class Row(NamedTuple):
    """A delta named by a job, reduced to what evidence needs."""

    t0: float
    t1: float
    target: str
    kind: str
    m: tuple[float, float, float]  # measures()
    n: tuple[float, float]  # read and write requests (`*_bytes_samples`)


def _row(d: DeltaRow, a: float, b: float) -> Row:
    """A delta as the index keeps it, over (a, b)."""
    return Row(a, b, d.target, target_kind(d.target), measures(d.counters), requests(d.counters))


Sole = tuple[int, str, Interval, "DeltaRow"]  # job, node, when, a `:uid:host` delta it alone owns


class Evidence:
    """Directly identified activity of jobs per (node, job), sorted by time; and apart, the
    `:uid:host` deltas a job alone can have made (`sole`: no other job of the uid ran on
    the node then), over the part of the delta's interval the job ran."""

    def __init__(self, rows: Iterable[tuple[int, str, DeltaRow]] = (),
                 sole: Iterable[Sole] = ()) -> None:
        by: dict[tuple[str, int], list[Row]] = defaultdict(list)
        for job, node, d in rows:
            by[(node, job)].append(_row(d, *effective(d)))
        self._rows = {k: sorted(v) for k, v in by.items()}
        self._starts = {k: [r.t0 for r in v] for k, v in self._rows.items()}
        self._span = max((r.t1 - r.t0 for v in self._rows.values() for r in v), default=0.0)
        alone: dict[tuple[str, int], list[Row]] = defaultdict(list)
        for job, node, (a, b), d in sole:
            alone[(node, job)].append(_row(d, a, b))
        self._sole = {k: sorted(v) for k, v in alone.items()}

    def seen(self, node: str, job: int, kind: str | None, a: float, b: float) -> bool:
        """Whether the job moved anything by its own id on `node` and `kind` (any kind when
        None) during (a, b): a row with data at least half of whose interval lies in (a, b)
        (servers read at different times, so a neighbouring interval overlaps a little)."""
        rows = self._rows.get((node, job))
        if not rows:
            return False
        for r in rows[bisect_left(self._starts[(node, job)], a - self._span):]:
            if r.t0 >= b:
                break
            if (kind is None or r.kind == kind) and any(r.m) and (
                    overlap(r.t0, r.t1, a, b) > 0.5 * (r.t1 - r.t0)):
                return True
        return False

    def peak(self, node: str, job: int, kind: str, i: int, lo: float, hi: float,
             sole: bool = True) -> float | None:
        """The highest rate (per second) the job showed by its own id on `node` and targets
        of `kind` in a read interval ending in [lo, hi]: bytes (read + write) for facets 0
        and 1, operations for facet 2. None when it has no such row (never observed).
        With `sole`, its sole deltas count as its own rows: what it did alone, it did (a
        job that ran only while the ids were missing shows a rate there, or none)."""
        best: float | None = None
        rows = self._ending_in(node, job, kind, lo, hi)
        if sole and (node, job) in self._sole:
            rows = chain(rows, _sole_ending_in(self._sole[(node, job)], kind, lo, hi))
        for r in rows:
            if r.t1 - r.t0 < MIN_OBSERVED / 4:
                continue
            v = r.m[2] if i == 2 else r.m[0] + r.m[1]
            best = max(best or 0.0, v / (r.t1 - r.t0))
        return best

    def request_size(self, node: str, job: int, kind: str, i: int, lo: float, hi: float
                     ) -> float | None:
        """The job's mean request size of byte facet `i` by its own id on `node` and `kind`
        in rows ending in [lo, hi]; None where it made no such request there."""
        nbytes = nreq = 0.0
        for r in self._ending_in(node, job, kind, lo, hi):
            if r.n[i] > 0:
                nbytes += r.m[i]
                nreq += r.n[i]
        return nbytes / nreq if nreq > 0 else None

    def _ending_in(self, node: str, job: int, kind: str, lo: float, hi: float
                   ) -> Iterator[Row]:
        """The job's own rows on `node` and targets of `kind` whose interval ends in
        [lo, hi] (what peak and request_size weigh: whole reads near the delta)."""
        rows = self._rows.get((node, job))
        if not rows:
            return
        for r in rows[bisect_left(self._starts[(node, job)], lo - self._span):]:
            if r.t0 > hi:
                return
            if r.kind == kind and lo <= r.t1 <= hi:
                yield r

    def near(self, node: str, job: int, lo: float, hi: float) -> bool:
        """Whether the job has any row by its own id on `node`, of either kind and with or
        without data, meeting (lo, hi)."""
        rows = self._rows.get((node, job))
        if not rows:
            return False
        for r in rows[bisect_left(self._starts[(node, job)], lo - self._span):]:
            if r.t0 >= hi:
                return False
            if r.t1 > lo:
                return True
        return False

    def between(self, node: str, job: int, lo: float, hi: float) -> list[Row]:
        """The job's own rows on `node` meeting (lo, hi), with data or without, by start."""
        rows = self._rows.get((node, job))
        if not rows:
            return []
        out = []
        for r in rows[bisect_left(self._starts[(node, job)], lo - self._span):]:
            if r.t0 >= hi:
                break
            if r.t1 > lo:
                out.append(r)
        return out

    def phase(self, node: str, job: int, target: str, i: int, stretch: Interval
              ) -> float | None:
        """The job's rate of facet `i` by its own id on `target` of `node` in its current
        phase across a blind `stretch` (see stretch()): the highest of its rows in the
        visible slivers inside it (not the reads at its edges, within NEAR / 2 of them);
        None where it moved none there. Rows of any length count:
        a row cut short by the ids going missing again is the phase's own rate, where a
        peak over rows of 60 s or more shows an earlier, slower phase. (The reads right
        before and right after the stretch, when both moving, were measured too: they never
        changed a split, the peaks already holding those rates.)"""
        rows = self._rows.get((node, job))
        if not rows:
            return None
        h0, h1 = stretch
        best = 0.0
        for r in rows[bisect_left(self._starts[(node, job)], h0 - self._span):]:
            if r.t0 >= h1:
                break
            if r.target != target or r.t1 <= r.t0 or r.t1 <= h0 + NEAR / 2 or (
                    r.t0 >= h1 - NEAR / 2):
                continue  # the read at an edge of the stretch (servers read apart)
            if overlap(r.t0, r.t1, h0, h1) > 0.5 * (r.t1 - r.t0):
                best = max(best, r.m[i] / (r.t1 - r.t0))
        return best if best > 0 else None

    def pace(self, node: str, job: int, i: int, windows: Sequence[Interval]) -> float:
        """Facet `i` bytes the job moved on the OSTs of `node` per metadata operation it made
        on the MDT there, by its own id in `windows` (0 where it made no MDT operation or
        moved none of that facet): how much data its I/O phases carry per operation."""
        ops = self.amount(node, job, windows, None, "MDT", 2)
        if ops <= 0:
            return 0.0
        return self.amount(node, job, windows, None, "OST", i) / ops

    def amount(self, node: str, job: int, windows: Sequence[Interval], target: str | None,
               kind: str, i: int) -> float:
        """Facet `i` of the job's own rows on `node` inside `windows` (pro rata of each row's
        interval), on `target` when given, else on every target of `kind`."""
        rows = self._rows.get((node, job))
        if not rows or not windows:
            return 0.0
        starts = self._starts[(node, job)]
        lo, hi = windows[0][0], windows[-1][1]
        total = 0.0
        for r in rows[bisect_left(starts, lo - self._span):]:
            if r.t0 >= hi:
                break
            if (r.target != target) if target is not None else (r.kind != kind):
                continue
            v = r.m[i]
            if not v:
                continue
            length = r.t1 - r.t0
            if length <= 0:
                if any(a <= r.t1 <= b for a, b in windows):
                    total += v
                continue
            inside = sum(overlap(r.t0, r.t1, a, b) for a, b in windows)
            total += v * inside / length
        return total


def _sole_ending_in(rows: Sequence[Row], kind: str, lo: float, hi: float) -> Iterator[Row]:
    """Of a few rows sorted by start (a job's sole deltas), those of `kind` ending in
    [lo, hi]."""
    for r in rows:
        if r.t0 > hi:
            return
        if r.kind == kind and lo <= r.t1 <= hi:
            yield r
