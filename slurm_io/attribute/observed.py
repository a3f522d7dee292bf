"""What the data shows about each job by its own id: intervals, facets and the Evidence index.

The building blocks of the evidence rule (attribute.evidence): a delta's effective interval,
interval arithmetic (overlap, union, difference), the facets a delta is weighed by, and the
index of each job's directly identified rows per node, sorted by time, with the questions
the rule asks of it (was the job seen then, its amount in a window, its peak rate, its bytes
per metadata operation, its rate in the slivers of a blind stretch, any row near an
interval, its rows in an interval: what attribute.phases rebuilds its phases from), the
two readings of a blind delta's own interval (`beside`, `paced_amounts`), and what rule 3
reads besides the peaks (`phases`, `unseen`). Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
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


class Evidence:
    """Directly identified activity of jobs per (node, job), sorted by time."""

    def __init__(self, rows: Iterable[tuple[int, str, DeltaRow]] = ()) -> None:
        by: dict[tuple[str, int], list[Row]] = defaultdict(list)
        for job, node, d in rows:
            a, b = effective(d)
            by[(node, job)].append(Row(a, b, d.target, target_kind(d.target),
                                       measures(d.counters), requests(d.counters)))
        self._rows = {k: sorted(v) for k, v in by.items()}
        self._starts = {k: [r.t0 for r in v] for k, v in self._rows.items()}
        self._span = max((r.t1 - r.t0 for v in self._rows.values() for r in v), default=0.0)

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

    def peak(self, node: str, job: int, kind: str, i: int, lo: float, hi: float
             ) -> float | None:
        """The highest rate (per second) the job showed by its own id on `node` and targets
        of `kind` in a read interval ending in [lo, hi]: bytes (read + write) for facets 0
        and 1, operations for facet 2. None when it has no such row (never observed)."""
        best: float | None = None
        for r in self._ending_in(node, job, kind, lo, hi):
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


def beside(d: DeltaRow, i: int, active: Sequence[JobWindow], runs: dict[int, Interval],
           over: dict[int, float], evidence: Evidence) -> dict[int, float]:
    """Each candidate's rate of facet `i` by its own id on the delta's own target during
    the delta's read interval (over the part of it the job ran), times its overlap: a job
    whose ids went missing in the middle of the interval (a node-wide stretch that begins
    or ends there, an outage that made the interval 20 minutes long) or whose other
    processes print no id kept printing its own next to the blind bytes, on the target
    they went to. At least as much is its expected part."""
    if i > 1 or d.node is None:
        return {}
    a, b = d.ts_start, d.ts_end
    kind = target_kind(d.target)
    return {c.job: evidence.amount(d.node, c.job, [(a, b)], d.target, kind, i)
            * over[c.job] / max(overlap(a, b, *runs[c.job]), 1.0) for c in active}


def paced_amounts(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
                  blind: Sequence[Interval]) -> dict[int, float]:
    """Each candidate's expected amount of byte facet `i` of an OST delta from its pace on
    the MDT: the metadata operations it made by its own id during the delta times the
    bytes its I/O carried per operation nearby (Evidence.pace), for the candidates whose
    OSTs were blind then (no OST row by their id in the interval) and whose MDT was not.
    An I/O phase that falls wholly in a stretch where the OSTs are blind still opens files
    on an MDT that is not, while the rates around it show only the compute next to it."""
    if i > 1 or d.node is None or target_kind(d.target) != "OST":
        return {}
    a, b = d.ts_start, d.ts_end
    out: dict[int, float] = {}
    for c in active:
        ops = evidence.amount(d.node, c.job, [(a, b)], None, "MDT", 2)
        if ops <= 0:
            continue
        if evidence.seen(d.node, c.job, "OST", a, b):
            continue  # its OSTs were not blind then: its rates say more than its pace
        lo, hi = a - WINDOWS[-1], b + WINDOWS[-1]
        ratio = evidence.pace(d.node, c.job, i, subtract(lo, hi, merge([*blind, (a, b)])))
        if ratio > 0:
            out[c.job] = ops * ratio
    return out


def phases(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
           blind: Sequence[Interval]) -> dict[int, float]:
    """Each candidate's rate in its current phase on the delta's own target, where its rows
    there in the slivers inside the blind stretch around the delta show one
    (Evidence.phase): a rate rule 3 may not hold it below."""
    if d.node is None:
        return {}
    where = stretch(d.ts_start, d.ts_end, blind)
    rates = {c.job: evidence.phase(d.node, c.job, d.target, i, where) for c in active}
    return {j: r for j, r in rates.items() if r is not None}


def continuing(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
               current: dict[int, float]) -> dict[int, float]:
    """The candidates' rates in their current phase (`current`, from `phases`) whose own id
    moved facet `i` on the delta's own target in the read right after the delta (within
    SLIVER of its end): a phase still going when the ids came back was going during it. Rule 1
    expects at least that rate of them. (Only after: a phase shown right before the delta
    may have ended in it, and a task's start-up read, the commonest phase to begin inside
    a blind stretch, shows only after it; reading both edges cost dense seed 3 0.07.)"""
    if i > 1 or d.node is None:
        return {}
    after = [(d.ts_end, d.ts_end + SLIVER)]
    kind = target_kind(d.target)
    return {c.job: current[c.job] for c in active if c.job in current
            and evidence.amount(d.node, c.job, after, d.target, kind, i) > 0}


def unseen(d: DeltaRow, active: Sequence[JobWindow], evidence: Evidence,
           seen: frozenset[int]) -> frozenset[int]:
    """The candidates rule 0 rules out (others, `seen`, did I/O by their id in the interval; they
    did none) that have no row at all by their id on the node, of either kind, within NEAR
    of the read interval, where a busy candidate moved data by its id on the delta's own
    kind then: a job in an I/O phase on those targets next to one that nothing recorded puts
    near the delta, so rule 3 must not give the silent one what it takes off the busy. A
    row, even without data or just outside the interval, shows a job whose ids were not all
    lost: it stays a possible owner. Where the busy showed only metadata operations, a job
    silent for its whole phase (computing, then writing while blind) is as likely the owner
    (default seed 1: two writes of 80 GiB, the busy paced to 0.1 GiB). Nor in a read
    interval longer than WINDOWS[0] (the 22-minute outage of every server): a job that
    computed all that time and wrote in a burst prints no row either (default seed 6: one 92
    GiB write)."""
    if d.node is None:
        return frozenset()
    a, b = d.ts_start, d.ts_end
    if b - a > WINDOWS[0]:
        return frozenset()  # an outage's interval: silent that long says nothing of a job
    seen = seen & {c.job for c in active}
    if not seen or len(seen) == len(active):
        return frozenset()
    if not any(evidence.seen(d.node, j, target_kind(d.target), a, b) for j in seen):
        return frozenset()  # the busy only opened files: the bytes may be a silent job's
    return frozenset(c.job for c in active if c.job not in seen
                     and not evidence.near(d.node, c.job, a - NEAR, b + NEAR))
