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

The SQL side (attribute.sql, through attribute.batch) only fetches rows; every decision is
made here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from slurm_io.attribute.evidence import (
    EVIDENCE,
    FACETS,
    SINGLE,
    TIME,
    WINDOWS,
    Evidence,
    Interval,
    Split,
    effective,
    facet,
    merge,
    overlap,
    run_of,
    split,
    target_kind,
)
from slurm_io.attribute.leaks import NodeBlind
from slurm_io.attribute.observed import Sole
from slurm_io.attribute.ranges import Bounds, touches
from slurm_io.attribute.result import JobIO  # re-exported: the rules' result type
from slurm_io.attribute.rows import DeltaRow
from slurm_io.attribute.sole_owner import owned_split
from slurm_io.counter_names import METADATA_OPS  # not model (issue 25: start-up)
from slurm_io.jobs.info import JobWindow
from slurm_io.timebuckets import spread_buckets

SMALL_IO = 64 * 1024
HOUR = 3600.0
BYTE_KINDS = ("read", "write")


class Share(NamedTuple):
    fraction: float  # of the delta that goes to the job
    split: bool  # the job covers only part of the interval
    ambiguous: bool  # other jobs of the same uid on that node compete for it


def share(d: DeltaRow, job: JobWindow, candidates: Sequence[JobWindow], now: float) -> Share:
    """The time-overlap part of a `:uid:host` delta that belongs to `job` (candidates include
    `job`): the rule without evidence, as views over many deltas use it."""
    s = split(d, 0, candidates, Evidence(), (), now)
    a, b = effective(d)
    mine = overlap(a, b, *run_of(job, now))
    return Share(min(1.0, s.fractions.get(job.job, 0.0)), 0 < mine < (b - a) - 1e-9,
                 len(s.fractions) > 1)


_FACET_INDEX = {"read": 0, "write": 1, "ops": 2}


_WHOLE = (1.0, 1.0, 1.0)
_NO_EVIDENCE = Evidence()


def _add3(dst: dict[str, float], src: dict[str, int], f: tuple[float, ...]) -> None:
    """Add counters, each times the fraction of its facet (read, write, ops)."""
    if f == _WHOLE:  # a delta naming the job: the common case, no facets to look up
        for k, v in src.items():
            dst[k] = dst.get(k, 0.0) + v
        return
    for k, v in src.items():
        x = f[_FACET_INDEX[facet(k)]]
        if x:
            dst[k] = dst.get(k, 0.0) + v * x


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


def _ints(d: dict[str, float]) -> dict[str, int]:
    return {k: round(v) for k, v in sorted(d.items()) if round(v)}


def _node_of(d: DeltaRow, nodes: tuple[str, ...]) -> str | None:
    """The node of a delta naming a job: its host, or the job's only node (`%j`, `%j:%u`)."""
    if d.node is not None:
        return d.node
    return nodes[0] if len(nodes) == 1 else None


def evidence_index(job: JobWindow, direct: Sequence[DeltaRow], competitors: Sequence[JobWindow],
                   others: Iterable[DeltaRow], sole: Iterable[Sole] = ()) -> Evidence:
    """What each candidate did by its own id: the job's direct deltas and `others` (deltas
    naming the competitors), by node; and the `:uid:host` deltas one of them alone can own
    (`sole`, from sole_deltas)."""
    by_raw = {c.raw_id: c for c in competitors if c.job != job.job}  # deltas name raw ids
    rows = []
    for d in direct:
        n = _node_of(d, job.nodes)
        if n is not None:
            rows.append((job.job, n, d))
    for d in others:
        c = None if d.job is None or d.job == job.raw_id else by_raw.get(d.job)
        if c is None:
            continue
        n = _node_of(d, c.nodes)
        if n is not None:
            rows.append((c.job, n, d))
    return Evidence(rows, sole)


def sole_deltas(recovered: Iterable[DeltaRow], jobs: dict[str, list[JobWindow]], now: float,
                within: Interval) -> list[Sole]:
    """The `:uid:host` deltas of `recovered` that one job alone can have made: the only job
    of `jobs` (every job of the uid on each node during `within`) whose run meets the
    delta's effective interval, its creation included, which lies in `within`; each over
    the part of that interval the job ran. A user's processes on a compute node run inside
    their jobs (pam_slurm_adopt), so what one job alone can own is its own, as good as a row
    by its id: its rates there are its rates (the caps of rule 3, evidence.capped)."""
    out: list[Sole] = []
    for d in recovered:
        if d.node is None:
            continue
        a, b = effective(d, created=True)
        if b <= a or a < within[0] or b > within[1]:
            continue
        owner = None
        for c in jobs.get(d.node, ()):
            if overlap(a, b, *run_of(c, now)) > 0:
                if owner is not None:
                    break
                owner = c
        else:
            if owner is not None:
                r0, r1 = run_of(owner, now)
                out.append((owner.job, d.node, (max(a, r0), min(b, r1)), d))
    return out


def _touches(d: DeltaRow, run: Interval) -> bool:
    """Whether the delta's read interval meets the run (an instant counts at its edges)."""
    return d.ts_start <= run[1] and d.ts_end >= run[0]


def blind_stretches(recovered: Iterable[DeltaRow]) -> dict[tuple[str, str], list[Interval]]:
    """(node, kind) -> when the uid's activity there went to `:uid:host` entries."""
    spans: dict[tuple[str, str], list[Interval]] = defaultdict(list)
    for d in recovered:
        if d.node is not None:
            spans[(d.node, target_kind(d.target))].append(effective(d))
    return {k: merge(v) for k, v in spans.items()}


def leak_index(recovered: Iterable[DeltaRow]) -> dict[str, NodeBlind]:
    """node -> the uid's `:uid:host` OST deltas there (attribute.leaks)."""
    by: dict[str, list[DeltaRow]] = defaultdict(list)
    for d in recovered:
        if d.node is not None:
            by[d.node].append(d)
    return {n: NodeBlind(n, v) for n, v in by.items()}


def attribute(job: JobWindow, direct: Iterable[DeltaRow], recovered: Iterable[DeltaRow],
              competitors: Sequence[JobWindow], *, now: float,
              resolution: float = 120.0, evidence: Iterable[DeltaRow] = (),
              splits: dict[tuple[Any, ...], Split] | None = None) -> JobIO:
    """The job's I/O from its direct deltas and the `:uid:host` deltas on its nodes.

    `competitors` are the jobs of the same uid with a node in common (the job itself may be
    among them); only those sharing a delta's node count for that delta. `evidence` are the
    deltas naming those competitors around the `:uid:host` deltas: what splits an ambiguous
    delta (attribute.evidence); without them the split is by time overlap. `splits` caches
    the splits of a batch: a delta two jobs share is weighed once, the same for both.
    """
    return _attribute(job, direct, recovered, competitors, now=now, resolution=resolution,
                      splits=splits,
                      index=lambda own, sole: evidence_index(job, own, competitors, evidence,
                                                             sole))


def attribute_by_time(job: JobWindow, direct: Iterable[DeltaRow], recovered: Iterable[DeltaRow],
                      competitors: Sequence[JobWindow], *, now: float,
                      resolution: float = 120.0) -> JobIO:
    """`attribute` with every ambiguous delta split by time overlap alone, whatever the
    evidence: what the evidence rule is measured against (bench/accuracy.py), never what a
    reader is shown."""
    return _attribute(job, direct, recovered, competitors, now=now, resolution=resolution,
                      splits=None, index=lambda own, sole: Evidence())


def _attribute(job: JobWindow, direct: Iterable[DeltaRow], recovered: Iterable[DeltaRow],
               competitors: Sequence[JobWindow], *, now: float, resolution: float,
               splits: dict[tuple[Any, ...], Split] | None,
               index: Callable[[Sequence[DeltaRow], Sequence[Sole]], Evidence]) -> JobIO:
    """The rules of `attribute`; `index` builds the evidence index from the direct deltas
    and the sole deltas (once, when a delta has two candidates or more)."""
    direct = list(direct)
    recovered = list(recovered)
    totals: dict[str, float] = {}
    rec: dict[str, float] = {}
    amb: dict[str, float] = {}
    by_ev: dict[str, float] = {}
    by_time: dict[str, float] = {}
    split_part: dict[str, float] = {}
    by_target: dict[str, dict[str, float]] = defaultdict(dict)
    by_node: dict[str, dict[str, float]] = defaultdict(dict)
    timeline: dict[float, list[float]] = {}
    profiles = {k: SizeProfile() for k in BYTE_KINDS}
    hours: dict[tuple[float, str, str], tuple[dict[str, float], dict[str, float]]] = {}
    n_direct = n_rec = 0
    bounds = Bounds()  # least and most the job can have done (attribute.ranges)

    def take(d: DeltaRow, f: tuple[float, float, float], recovered: bool = False) -> None:
        _add3(totals, d.counters, f)
        buckets = spread_buckets(d.ts_start, d.ts_end, HOUR)
        part = f if len(buckets) == 1 else tuple(x / len(buckets) for x in f)
        key_fs, key_kind = d.target.rsplit("-", 1)[0], target_kind(d.target)
        for h in buckets:
            slot = hours.setdefault((h, key_fs, key_kind), ({}, {}))
            _add3(slot[0], d.counters, part)
            if recovered:
                _add3(slot[1], d.counters, part)
        _add3(by_target[d.target], d.counters, f)
        if d.node:
            _add3(by_node[d.node], d.counters, f)
        bucket = (d.ts_end // resolution) * resolution
        row = timeline.setdefault(bucket, [0.0, 0.0, 0.0])
        row[0] += d.counters.get("read_bytes", 0) * f[0]
        row[1] += d.counters.get("write_bytes", 0) * f[1]
        row[2] += sum(v for k, v in d.counters.items() if k in METADATA_OPS) * f[2]
        for i, kind in enumerate(BYTE_KINDS):
            s = d.sizes.get(kind)
            if s is not None:
                profiles[kind].add(s[0], s[1], s[2], s[3], f[i])

    for d in direct:
        n_direct += 1
        take(d, _WHOLE)
        bounds.own(d.counters)
    by_node_jobs: dict[str, list[JobWindow]] = defaultdict(list)
    for c in competitors:
        for n in c.nodes:
            by_node_jobs[n].append(c)
    ev: Evidence | None = None  # built when a delta has two candidates or more
    blind = blind_stretches(recovered)
    leaks: dict[str, NodeBlind] | None = None  # built with ev: only a split weighs leaks
    run = run_of(job, now)
    for d in recovered:
        if d.node is None or d.node not in job.nodes or not _touches(d, run):
            continue  # (deltas around the run are fetched as evidence of blind stretches)
        # the candidates are the jobs that ran during the delta's read interval: every job
        # attributing it sees the same set, so the batch weighs it once (splits' key)
        cands = [c for c in by_node_jobs.get(d.node, []) if _touches(d, run_of(c, now))]
        if job not in cands:
            cands = [*cands, job]
        holes = blind.get((d.node, target_kind(d.target)), [])
        present = {facet(k) for k, v in d.counters.items() if v}
        f = [0.0, 0.0, 0.0]
        rules = ["", "", ""]
        among = [False, False, False]  # the job was one of the split's candidates
        # for the range (attribute.ranges): the jobs whose run meets the delta's interval,
        # its edges included (the split weighs overlaps: an edge gets nothing)
        eff = effective(d)
        edge = touches(eff, run)
        alone = sum(touches(eff, run_of(c, now)) for c in cands) <= 1
        ids = tuple(sorted(c.job for c in cands))
        if ev is None and len(ids) > 1:
            # the competitors are every job of the uid on the job's nodes within
            # WINDOWS[-1] of its run (attribute.batch): who was alone is known there
            ev = index(direct, sole_deltas(recovered, by_node_jobs, now,
                                           (run[0] - WINDOWS[-1], run[1] + WINDOWS[-1])))
            leaks = leak_index(recovered)
        for i, name in enumerate(FACETS):
            if name in present:
                key = (d.node, d.target, d.ts_start, d.ts_end, d.uid, i, ids)
                s = splits.get(key) if splits is not None else None
                if s is None:
                    s = owned_split(d, i, cands, ev or _NO_EVIDENCE, holes, now,
                                    leaks.get(d.node) if leaks is not None else None,
                                    [run_of(c, now) for c in by_node_jobs.get(d.node, [])
                                     if c not in cands])
                    if splits is not None and len(ids) > 1:
                        splits[key] = s
                f[i], rules[i] = s.fractions.get(job.job, 0.0), s.rule
                among[i] = edge or job.job in s.fractions
        bounds.shared(d.counters, f, rules, among, alone)
        if not any(f):
            continue
        n_rec += 1
        f3 = (f[0], f[1], f[2])
        take(d, f3, recovered=True)
        _add3(rec, d.counters, f3)
        amb_f = tuple(x if r != SINGLE else 0.0 for x, r in zip(f3, rules, strict=True))
        _add3(amb, d.counters, amb_f)
        _add3(by_ev, d.counters, tuple(x if r == EVIDENCE else 0.0
                                       for x, r in zip(f3, rules, strict=True)))
        _add3(by_time, d.counters, tuple(x if r == TIME else 0.0
                                         for x, r in zip(f3, rules, strict=True)))
        a, b = effective(d, created=True)
        if overlap(a, b, *run) < (b - a) - 1e-9:
            _add3(split_part, d.counters, f3)
    tot = _ints(totals)
    return JobIO(
        job=job.job,
        totals=tot,
        recovered=_ints(rec),
        ambiguous=_ints(amb),
        split=_ints(split_part),
        by_target={t: _ints(v) for t, v in sorted(by_target.items())},
        by_node={n: _ints(v) for n, v in sorted(by_node.items())},
        timeline=[[t, round(r), round(w), round(m)] for t, (r, w, m) in sorted(timeline.items())],
        quality=quality(totals, profiles),
        n_direct=n_direct,
        n_recovered=n_rec,
        by_evidence=_ints(by_ev),
        by_time=_ints(by_time),
        hours={k: (_ints(t), _ints(r)) for k, (t, r) in sorted(hours.items())},
        ranges=bounds.ranges((tot.get("read_bytes", 0), tot.get("write_bytes", 0),
                              round(sum(v for k, v in totals.items() if k in METADATA_OPS)))),
    )
