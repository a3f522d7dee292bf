"""Jobs whose processes print no id: each one's leak ratio, estimated from the node's data.

A job some of whose processes were started outside srun (an MPI launcher's own daemons,
`ssh` into the node, a wrapper that clears the environment) prints a `:uid:host` entry next
to its own all its life: in a read in which it moves bytes by its id on an OST, its
id-less processes move some more there, in proportion. A job whose ids are intact moves
nothing blind outside a node-wide stretch of missing ids. So the uid's `:uid:host` bytes
on an OST in a read are, outside such a stretch, the sum over its jobs of a job's own
bytes there times its ratio (id-less over own; 1 for a job half of whose I/O prints no
id, 0 for most), and the node's reads around a delta show each ratio again and again: a
least-squares fit, with ratios >= 0, over the reads of an OST in which some candidate
moved bytes by its id, blind bytes beside them or none (a read with own bytes and nothing
blind clears a job; a read with no own bytes tells nothing), fitted again without the
fifth it explains worst (a stretch of missing ids starting or ending inside a read adds
bytes no leak shows). An outage's long read (over WINDOWS[0]) does not count in the fit:
the ids lost inside it put own and blind bytes side by side. A ratio learnt from the short
reads around it holds in it as well, so the leaks come first there too.

In such a long read, a stretch of missing ids inside it takes the same share of every
job's I/O on the node at once: what each candidate printed by its id on the delta's OST in
that read is then its share of the blind bytes beside it (`in_long_read`). A delta more than
LONG_BESIDE times those bytes is not their share: a phase no row shows wrote it.

Where the fit says some candidate leaks, the delta's bytes are first its jobs' ratio x own
bytes on the delta's target in its read, and only what exceeds that (an episode, a phase
begun while blind) is divided by the other rules. Pure: attribute.evidence applies it.
Measured, and why it gains little on the simulator: docs/attribution.md, fifth round.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.observed import WINDOWS, Evidence, measures, target_kind

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow

AROUND = 1800.0  # seconds of the node's read intervals, each side, that the ratios come from
BUCKET = 600.0  # deltas within the same 10 minutes share one fit
MIN_LEAK = 0.05  # a ratio below this is no leak (noise of a fit)
MIN_POINTS = 4  # read intervals with own bytes a fit needs
DROP = 0.2  # share of the worst-explained intervals the refit leaves out
SWEEPS = 50  # coordinate descent passes (a handful of unknowns)
LONG_BESIDE = 4.0  # in a long read, blind bytes up to this many times the own bytes beside them


class NodeBlind:
    """The uid's `:uid:host` OST bytes on `node` per (target, start of the read) and per
    target read after read, with a memo of the fits (one per candidate set and 10
    minutes)."""

    def __init__(self, node: str, deltas: Iterable[DeltaRow]) -> None:
        self.node = node
        self.bytes: dict[tuple[str, float], float] = defaultdict(float)
        # target -> its reads with blind bytes, (start, end, read, written), by start
        # (attribute.joint reads an OST's course)
        self.reads: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
        for d in deltas:
            if target_kind(d.target) == "OST":
                m = measures(d.counters)
                if m[0] + m[1] > 0:
                    self.bytes[(d.target, d.ts_start)] += m[0] + m[1]
                    self.reads[d.target].append((d.ts_start, d.ts_end, m[0], m[1]))
        for reads in self.reads.values():
            reads.sort()
        self._memo: dict[tuple[tuple[int, ...], float], dict[int, float]] = {}

    def ratios(self, jobs: Sequence[int], t: float, evidence: Evidence) -> dict[int, float]:
        """Each job's id-less bytes per own byte on the node around time `t`; {} where the
        reads there do not say (too few with own bytes)."""
        bucket = t // BUCKET
        key = (tuple(sorted(jobs)), bucket)
        found = self._memo.get(key)
        if found is None:
            lo, hi = bucket * BUCKET - AROUND, (bucket + 1) * BUCKET + AROUND
            found = fit(self, lo, hi, key[0], evidence)
            self._memo[key] = found
        return found


def fit(blind: NodeBlind, lo: float, hi: float, jobs: Sequence[int], evidence: Evidence
        ) -> dict[int, float]:
    """The ratios (>= 0) that best explain the blind bytes by the jobs' own bytes, over the
    reads of an OST starting in [lo, hi) in which some job moved bytes by its id (the same
    server reads both entries at once: the same start), blind or not; fit again without
    the DROP share of them it explains worst. {} with fewer than MIN_POINTS such reads."""
    xs: list[dict[tuple[str, float], float]] = []
    for j in jobs:
        x: dict[tuple[str, float], float] = defaultdict(float)
        for r in evidence.between(blind.node, j, lo, hi):
            if (r.kind == "OST" and r.m[0] + r.m[1] > 0 and lo <= r.t0 < hi
                    and r.t1 - r.t0 <= WINDOWS[0]):
                x[(r.target, r.t0)] += r.m[0] + r.m[1]
        xs.append(x)
    points = sorted({k for x in xs for k in x})
    if len(points) < MIN_POINTS:
        return {}
    table = [[x.get(k, 0.0) for k in points] for x in xs]
    y = [blind.bytes.get(k, 0.0) for k in points]
    keep = range(len(points))
    ratios = nnls(table, y, keep)
    residual = sorted(keep, key=lambda k: abs(
        y[k] - sum(r * x[k] for r, x in zip(ratios, table, strict=True))))
    keep = residual[:max(MIN_POINTS, round(len(points) * (1 - DROP)))]
    ratios = nnls(table, y, keep)
    return {j: r for j, r in zip(jobs, ratios, strict=True)}


def nnls(xs: Sequence[Sequence[float]], y: Sequence[float], points: Sequence[int]
          ) -> list[float]:
    """Least squares with every ratio >= 0, by coordinate descent (a handful of unknowns)."""
    n = len(xs)
    gram = [[sum(xs[p][k] * xs[q][k] for k in points) for q in range(n)] for p in range(n)]
    rhs = [sum(xs[p][k] * y[k] for k in points) for p in range(n)]
    r = [0.0] * n
    for _ in range(SWEEPS):
        moved = 0.0
        for p in range(n):
            if gram[p][p] <= 0:
                continue
            rest = rhs[p] - sum(gram[p][q] * r[q] for q in range(n) if q != p)
            new = max(0.0, rest / gram[p][p])
            moved = max(moved, abs(new - r[p]))
            r[p] = new
        if moved < 1e-6:
            break
    return r


def leaked(d: DeltaRow, i: int, jobs: Sequence[int], ratios: dict[int, float],
           evidence: Evidence) -> dict[int, float]:
    """Each job's expected id-less bytes of facet `i` in the OST delta `d`: its ratio times
    what it moved by its own id on d's target in d's read interval. {} where no job leaks.
    (Its own bytes on all its OSTs then, spread over them, measured worse: a job's id-less
    processes write where its others do at that moment.)"""
    if d.node is None or not any(ratios.get(j, 0.0) >= MIN_LEAK for j in jobs):
        return {}
    out = {}
    for j in jobs:
        r = ratios.get(j, 0.0)
        if r >= MIN_LEAK:
            own = evidence.amount(d.node, j, [(d.ts_start, d.ts_end)], d.target, "OST", i)
            if own > 0:
                out[j] = r * own
    return out


def with_leaks(fractions: dict[int, float], leak: dict[int, float], amount: float
               ) -> dict[int, float]:
    """The delta's split with the leaks first: the expected id-less bytes by `leak` (all of
    the delta at most), what exceeds them by the other rules' `fractions`."""
    expected = sum(leak.values())
    if expected <= 0 or amount <= 0:
        return fractions
    placed = min(expected, amount)
    rest = amount - placed
    out = {j: rest * f / amount for j, f in fractions.items()}
    for j, v in leak.items():
        out[j] = out.get(j, 0.0) + placed * v / expected / amount
    return out


def leaks_first(d: DeltaRow, i: int, jobs: Sequence[int], leaks: NodeBlind | None,
                evidence: Evidence, fractions: dict[int, float]) -> dict[int, float] | None:
    """The split of facet `i` of `d` among `jobs` with the leaks first (with_leaks), from
    the other rules' `fractions`; None where it is no OST delta's bytes or no job leaks."""
    if leaks is None or i > 1 or d.node is None or target_kind(d.target) != "OST":
        return None
    leak = leaked(d, i, jobs, leaks.ratios(jobs, d.ts_end, evidence), evidence)
    if not leak:
        return None
    return with_leaks(fractions, leak, measures(d.counters)[i])


def in_long_read(d: DeltaRow, i: int, jobs: Sequence[int], evidence: Evidence
                 ) -> dict[int, float] | None:
    """The weights of `jobs` in facet `i` of an OST delta read over more than WINDOWS[0]
    (an outage): what each moved by its own id on d's target in that read; None where the
    read is short, nobody printed there, or the delta exceeds LONG_BESIDE times what they
    printed. The rates around a 20-minute read say
    little of who did what inside it; the ids lost inside it went missing for every job at
    once, on the targets each was writing to."""
    if (i > 1 or d.node is None or target_kind(d.target) != "OST"
            or d.ts_end - d.ts_start <= WINDOWS[0]):
        return None
    own = {j: evidence.amount(d.node, j, [(d.ts_start, d.ts_end)], d.target, "OST", i)
           for j in jobs}
    total = sum(own.values())
    if total <= 0 or measures(d.counters)[i] > LONG_BESIDE * total:
        return None
    return own
