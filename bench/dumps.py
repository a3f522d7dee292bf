"""Generated 100k-entry job_stats dumps for the benchmarks (rendered by parse.render)."""

from __future__ import annotations

import random
from pathlib import Path

from slurm_io.model import ByteStats, Entry
from slurm_io.parse.render import counter_names, param_name, render_target


def make_entries(n: int, release: str, kind: str, *, seed: int = 1, step: int = 0,
                 active: float = 0.3) -> list[Entry]:
    """n entries of a busy target; `step` advances time: `active` of them grew since step-1."""
    rng = random.Random(seed)
    names = counter_names(release, kind)
    target = "scratch-OST0007" if kind == "OST" else "scratch-MDT0000"
    out = []
    for i in range(n):
        r = random.Random(seed * 1_000_003 + i)
        grow = sum(1 for s in range(1, step + 1)
                   if random.Random(seed * 7 + i * 31 + s).random() < active)
        base = [r.randrange(0, 5000) * (1 + grow) if r.random() < 0.4 else 0 for _ in names]
        samples = tuple(base)
        stats = {}
        for b in ("read_bytes", "write_bytes"):
            if b in names:
                k = samples[names.index(b)]
                size = r.choice((4096, 65536, 1048576, 4194304))
                stats[b] = ByteStats(k, size if k else 0, size if k else 0, k * size,
                                     k * size * size if release not in ("2.10", "2.12") else None,
                                     ((("4K" if size == 4096 else "1M"), k),)
                                     if release in ("2.16", "2.17") and k else
                                     (() if release in ("2.16", "2.17") else None))
        uid = 1000 + i % 400
        node = f"c{i % 2000:04d}"
        jid = (f"{5_000_000 + i // 2000 * 2000 + i % 2000}:{uid}:{node}" if i % 10 < 7 else
               f":{1000 + i // 2000}:{node}" if i % 10 < 8 else f"rsync{i}.{uid}")
        last_growth = max((s for s in range(1, step + 1)
                           if random.Random(seed * 7 + i * 31 + s).random() < active), default=0)
        t = 1_795_000_000 + 120 * last_growth
        out.append(Entry(target, "", jid, float(t - rng.randrange(0, 120)), 1_794_900_000.0,
                         names, samples, stats))
    return out


def dump(n: int, release: str, kind: str, *, step: int = 0) -> str:
    es = make_entries(n, release, kind, step=step)
    return render_target(param_name(es[0].target, kind), es, release, kind,
                         boot_time=1_790_000_000.0)


def cached_dump(directory: Path, n: int, release: str, kind: str, *, step: int = 0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    p = directory / f"{kind.lower()}-{release}-{n}-{step}.txt"
    if not p.exists():
        p.write_text(dump(n, release, kind, step=step))
    return p
