"""Attribution of stored deltas to a Slurm job (pure functions over plain data).

A job's I/O is
* every delta whose id names the job (exact, FQDN, job-only, job+uid ids): wholly the job's,
  whatever the interval, because the id says so;
* plus a share of every job-missing `:uid:host` delta on one of the job's nodes whose interval
  overlaps the job's run, when the uid is the job's. The share is pro rata by overlap:
  over the delta's effective interval (previous read, min(this read, last update)], the part
  covered by the job's run, divided among all jobs of that uid running on that node then.
  A delta that overlaps the job only in part is "split"; one shared by two or more jobs of the
  same uid on the node is "ambiguous". What no job covers stays unattributed load of the user
  on that host.

The SQL side (attribute.sql) only fetches rows; every decision is made here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from slurm_io.model import METADATA_OPS

SMALL_IO = 64 * 1024
BYTE_KINDS = ("read", "write")


class DeltaRow(NamedTuple):
    """One stored delta, as fetched for attribution."""

    ts_start: float
    ts_end: float
    last_update: float | None
    target: str
    node: str | None
    id_class: int
    job: int | None
    uid: int | None
    counters: dict[str, int]  # Lustre counter name -> delta (bytes for *_bytes)
    sizes: dict[str, tuple[int, int | None, int | None, tuple[tuple[str, int], ...] | None]]
    # sizes: "read"/"write" -> (requests, min, max, hist) of the byte counter in the interval


class JobWindow(NamedTuple):
    job: int
    uid: int | None
    nodes: tuple[str, ...]
    start: float | None
    end: float | None  # None: still running


class Share(NamedTuple):
    fraction: float  # of the delta that goes to the job
    split: bool  # the job covers only part of the interval
    ambiguous: bool  # other jobs of the same uid on that node compete for it


def _effective(d: DeltaRow) -> tuple[float, float]:
    """The interval in which the delta's I/O can have happened.

    An entry's snapshot_time is its last update: nothing moved after it, so the interval
    ends there when it is inside the read interval (epoch times only).
    """
    end = d.ts_end
    if d.last_update is not None and d.ts_start < d.last_update < d.ts_end:
        end = d.last_update
    return d.ts_start, end


def _overlap(a0: float, a1: float, b0: float | None, b1: float | None, now: float) -> float:
    lo = max(a0, b0 if b0 is not None else a0)
    hi = min(a1, b1 if b1 is not None else now)
    return max(0.0, hi - lo)


def share(d: DeltaRow, job: JobWindow, candidates: Sequence[JobWindow], now: float) -> Share:
    """The part of a `:uid:host` delta that belongs to `job` (candidates include `job`)."""
    a, b = _effective(d)
    length = b - a
    if length <= 0:
        # a zero-length interval cannot be split: give it to the job(s) running at that time
        inside = [c for c in candidates if (c.start is None or c.start <= b)
                  and (c.end is None or c.end >= a)]
        if job not in inside or not inside:
            return Share(0.0, False, False)
        return Share(1.0 / len(inside), False, len(inside) > 1)
    mine = _overlap(a, b, job.start, job.end, now)
    if mine <= 0:
        return Share(0.0, False, False)
    others = [c for c in candidates if c.job != job.job
              and _overlap(a, b, c.start, c.end, now) > 0]
    # the time covered by any candidate, so that concurrent jobs never get more than the delta
    spans = sorted((max(a, c.start if c.start is not None else a),
                    min(b, c.end if c.end is not None else now))
                   for c in [job, *others])
    covered, cur0, cur1 = 0.0, None, None
    for s0, s1 in spans:
        if s1 <= s0:
            continue
        if cur1 is None or s0 > cur1:
            if cur1 is not None:
                covered += cur1 - cur0  # type: ignore[operator]
            cur0, cur1 = s0, s1
        else:
            cur1 = max(cur1, s1)
    if cur1 is not None:
        covered += cur1 - cur0  # type: ignore[operator]
    total_overlap = mine + sum(_overlap(a, b, c.start, c.end, now) for c in others)
    fraction = (covered / length) * (mine / total_overlap)
    return Share(min(1.0, fraction), mine < length - 1e-9, bool(others))


def _add(dst: dict[str, float], src: dict[str, int], f: float = 1.0) -> None:
    for k, v in src.items():
        dst[k] = dst.get(k, 0.0) + v * f


class SizeProfile:
    """Accumulates what the byte counters say about request sizes."""

    def __init__(self) -> None:
        self.requests = 0.0
        self.small_known = 0.0  # requests known to be < 64 KiB
        self.classified = 0.0  # requests whose side of 64 KiB is known
        self.hist: dict[str, float] = {}

    def add(self, requests: int, mn: int | None, mx: int | None,
            hist: tuple[tuple[str, int], ...] | None, f: float) -> None:
        n = requests * f
        self.requests += n
        if hist:
            for label, count in hist:
                self.hist[label] = self.hist.get(label, 0.0) + count * f
                self.classified += count * f
                if _label_bytes(label) < SMALL_IO:
                    self.small_known += count * f
        elif mx is not None and 0 < mx < SMALL_IO:
            self.small_known += n
            self.classified += n
        elif mn is not None and mn >= SMALL_IO:
            self.classified += n


def _label_bytes(label: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = label.strip().upper()
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(s) if s.isdigit() else 0


def quality(totals: dict[str, float], profiles: dict[str, SizeProfile]) -> dict[str, Any]:
    """Mean request sizes, small-I/O share and LASSi's ops metrics of one job."""
    out: dict[str, Any] = {}
    for kind in BYTE_KINDS:
        nbytes = totals.get(f"{kind}_bytes", 0.0)
        ops = totals.get(f"{kind}_bytes_samples", 0.0)
        p = profiles.get(kind)
        out[f"{kind}_mean_size"] = round(nbytes / ops) if ops else None
        # LASSi: x_kb_ops = x_ops * 1024 / x_kb; 1 = 1 MiB requests (ideal), >> 1 many small
        out[f"{kind}_kb_ops"] = round(ops * 1024 / (nbytes / 1024), 3) if nbytes else None
        if p is not None and p.classified > 0 and p.requests > 0:
            out[f"{kind}_small_share"] = round(p.small_known / p.classified, 4)
            out[f"{kind}_small_share_basis"] = round(min(1.0, p.classified / p.requests), 4)
        else:
            out[f"{kind}_small_share"] = None
            out[f"{kind}_small_share_basis"] = 0.0
        if p is not None and p.hist:
            out[f"{kind}_hist"] = {k: round(v) for k, v in sorted(
                p.hist.items(), key=lambda kv: _label_bytes(kv[0]))}
    out["metadata_ops"] = round(sum(v for k, v in totals.items() if k in METADATA_OPS))
    return out


class JobIO(NamedTuple):
    job: int
    totals: dict[str, int]
    recovered: dict[str, int]
    ambiguous: dict[str, int]
    split: dict[str, int]
    by_target: dict[str, dict[str, int]]
    by_node: dict[str, dict[str, int]]
    timeline: list[list[float]]  # [ts, read_bytes, write_bytes, metadata ops]
    quality: dict[str, Any]
    n_direct: int
    n_recovered: int

    def as_json(self) -> dict[str, Any]:
        return {
            "totals": self.totals, "recovered": self.recovered, "ambiguous": self.ambiguous,
            "split": self.split, "by_target": self.by_target, "by_node": self.by_node,
            "timeline": self.timeline, "quality": self.quality,
        }


def _ints(d: dict[str, float]) -> dict[str, int]:
    return {k: round(v) for k, v in sorted(d.items()) if round(v)}


def attribute(job: JobWindow, direct: Iterable[DeltaRow], recovered: Iterable[DeltaRow],
              competitors: Sequence[JobWindow], *, now: float,
              resolution: float = 120.0) -> JobIO:
    """The job's I/O from its direct deltas and the `:uid:host` deltas on its nodes.

    `competitors` are the jobs of the same uid with a node in common (the job itself may be
    among them); only those sharing a delta's node count for that delta.
    """
    totals: dict[str, float] = {}
    rec: dict[str, float] = {}
    amb: dict[str, float] = {}
    split: dict[str, float] = {}
    by_target: dict[str, dict[str, float]] = defaultdict(dict)
    by_node: dict[str, dict[str, float]] = defaultdict(dict)
    timeline: dict[float, list[float]] = {}
    profiles = {k: SizeProfile() for k in BYTE_KINDS}
    n_direct = n_rec = 0

    def take(d: DeltaRow, f: float) -> None:
        _add(totals, d.counters, f)
        _add(by_target[d.target], d.counters, f)
        if d.node:
            _add(by_node[d.node], d.counters, f)
        bucket = (d.ts_end // resolution) * resolution
        row = timeline.setdefault(bucket, [0.0, 0.0, 0.0])
        row[0] += d.counters.get("read_bytes", 0) * f
        row[1] += d.counters.get("write_bytes", 0) * f
        row[2] += sum(v for k, v in d.counters.items() if k in METADATA_OPS) * f
        for kind in BYTE_KINDS:
            s = d.sizes.get(kind)
            if s is not None:
                profiles[kind].add(s[0], s[1], s[2], s[3], f)

    for d in direct:
        n_direct += 1
        take(d, 1.0)
    by_node_jobs: dict[str, list[JobWindow]] = defaultdict(list)
    for c in competitors:
        for n in c.nodes:
            by_node_jobs[n].append(c)
    for d in recovered:
        if d.node is None or d.node not in job.nodes:
            continue
        cands = by_node_jobs.get(d.node, [])
        if job not in cands:
            cands = [*cands, job]
        s = share(d, job, cands, now)
        if s.fraction <= 0:
            continue
        n_rec += 1
        take(d, s.fraction)
        _add(rec, d.counters, s.fraction)
        if s.ambiguous:
            _add(amb, d.counters, s.fraction)
        if s.split:
            _add(split, d.counters, s.fraction)
    tot = _ints(totals)
    return JobIO(
        job=job.job,
        totals=tot,
        recovered=_ints(rec),
        ambiguous=_ints(amb),
        split=_ints(split),
        by_target={t: _ints(v) for t, v in sorted(by_target.items())},
        by_node={n: _ints(v) for n, v in sorted(by_node.items())},
        timeline=[[t, round(r), round(w), round(m)] for t, (r, w, m) in sorted(timeline.items())],
        quality=quality(totals, profiles),
        n_direct=n_direct,
        n_recovered=n_rec,
    )
