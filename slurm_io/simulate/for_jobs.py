"""job_stats reads for given (real) jobs: what an MDS and an OSS would print while they ran.

End-to-end tests submit real Slurm jobs, then need Lustre counters for exactly those jobs'
nodes and times. This writes captured reads (`DIR/<server>/<epoch>.txt`, the `--from`
layout) and returns the I/O each job should be attributed, split into the part under ids
naming the job and the part under job-missing `:uid:host` ids (generated only where that uid
ran exactly one job on the node for the whole read interval, so recovery is exact).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from slurm_io.model import ByteStats, Entry, JobRecord
from slurm_io.parse.render import counter_names, param_name, render_read, render_target


class Expected(NamedTuple):
    read_bytes: int
    write_bytes: int
    open: int
    recovered_bytes: int  # part of read+write under `:uid:host` ids


class _Counters:
    """Cumulative counters of one entry on one target."""

    def __init__(self) -> None:
        self.samples: dict[str, int] = defaultdict(int)
        self.sums: dict[str, int] = defaultdict(int)
        self.sumsq: dict[str, int] = defaultdict(int)
        self.last = 0.0

    def add_bytes(self, name: str, n: int, size: int, t: float) -> None:
        self.samples[name] += n
        self.sums[name] += n * size
        self.sumsq[name] += n * size * size
        self.last = t

    def add_op(self, name: str, n: int, t: float) -> None:
        self.samples[name] += n
        self.last = t

    def entry(self, target: str, job_id: str, names: tuple[str, ...], created: float) -> Entry:
        stats = {b: ByteStats(self.samples[b], 4096 if self.samples[b] else 0,
                              1 << 20 if self.samples[b] else 0, self.sums[b], self.sumsq[b],
                              None)
                 for b in ("read_bytes", "write_bytes") if b in names}
        return Entry(target, job_id, job_id, self.last, created, names,
                     tuple(self.samples[n] for n in names), stats)


def reads_for_jobs(jobs: Sequence[JobRecord], out: Path, *, seed: int = 1, step: float = 1.0,
                   fs: str = "lab", release: str = "2.16",
                   hidden_share: float = 0.3,
                   key: Callable[[JobRecord], Hashable] | None = None) -> dict[Any, Expected]:
    """Write reads of one MDS (`mds1`, fs-MDT0000) and one OSS (`oss1`, fs-OST0000/1).

    `hidden_share`: the chance that a node's interval goes under a job-missing id. Those are
    recovered by time, so reads served by a live collector after the jobs ended (its clock,
    not the reads', stamps the deltas) need 0. `key`: what the expectations are keyed by
    (default the raw id; the runs of a requeued job share one)."""
    key_of = key or (lambda j: j.job)
    rng = random.Random(seed)
    ran = [j for j in jobs if j.start is not None and j.end is not None and j.nodes
           and j.uid is not None]
    if not ran:
        raise ValueError("no finished job with nodes, uid, start and end")
    t_first = math.floor(min(j.start for j in ran)) - 2 * step  # type: ignore[type-var]
    t_last = math.ceil(max(j.end for j in ran)) + 2 * step  # type: ignore[type-var]
    mdt, osts = f"{fs}-MDT0000", (f"{fs}-OST0000", f"{fs}-OST0001")
    entries: dict[tuple[str, str], _Counters] = {}
    created: dict[tuple[str, str], float] = {}
    expected: dict[Any, list[int]] = {key_of(j): [0, 0, 0, 0] for j in ran}

    def counters(target: str, jid: str, t: float) -> _Counters:
        key = (target, jid)
        if key not in entries:
            entries[key] = _Counters()
            created[key] = t
        return entries[key]

    times = [t_first + k * step for k in range(int((t_last - t_first) / step) + 1)]
    for i, t in enumerate(times):
        if i > 0:
            t0 = times[i - 1]
            for j in ran:
                if not (j.start <= t0 and t <= j.end):  # type: ignore[operator]
                    continue  # only whole read intervals inside the job: exact expectations
                for node in j.nodes:
                    alone = not any(o is not j and o.uid == j.uid and node in o.nodes
                                    and o.start < t and o.end > t0  # type: ignore[operator]
                                    for o in ran)
                    hidden = alone and rng.random() < hidden_share
                    jid = f":{j.uid}:{node}" if hidden else f"{j.job}:{j.uid}:{node}"
                    ost = osts[rng.randrange(2)]
                    w = rng.randrange(1, 50)
                    r = rng.randrange(0, 20)
                    c = counters(ost, jid, t)
                    c.add_bytes("write_bytes", w, 1 << 20, t)
                    if r:
                        c.add_bytes("read_bytes", r, 4096, t)
                    opens = rng.randrange(1, 30)
                    counters(mdt, jid, t).add_op("open", opens, t)
                    counters(mdt, jid, t).add_op("close", opens, t)
                    e = expected[key_of(j)]
                    e[0] += r * 4096
                    e[1] += w << 20
                    e[2] += opens
                    if hidden:
                        e[3] += r * 4096 + (w << 20)
        _write(out, t, entries, created, mdt, osts, release)
    return {k: Expected(*v) for k, v in expected.items()}


def _write(out: Path, t: float, entries: dict[tuple[str, str], _Counters],
           created: dict[tuple[str, str], float], mdt: str, osts: tuple[str, ...],
           release: str) -> None:
    for server, kind, targets in (("mds1", "MDT", (mdt,)), ("oss1", "OST", osts)):
        names = counter_names(release, kind)
        blocks = []
        for target in targets:
            es = [c.entry(target, jid, names, created[(tg, jid)])
                  for (tg, jid), c in sorted(entries.items()) if tg == target]
            blocks.append(render_target(param_name(target, kind), es, release, kind))
        d = out / server
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{t:.0f}.txt").write_text(render_read(blocks))
