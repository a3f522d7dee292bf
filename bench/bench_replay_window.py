"""Disk cost of the collector's replay window (`[collect] replay_window`, docs/collector.md).

    .venv/bin/python bench/bench_replay_window.py [--entries 100000] [--release 2.16]

One steady-state cycle of a busy target (bench.dumps: 30 % of the entries grew between two
reads, as bench_cycle.py) makes one batch; the window keeps each committed batch, so a day
costs one batch per read (86400 / interval). Reported: the batch file as spooled, the same
zlib-compressed as it is kept (level 1, what store.kept writes), the CPU of compressing and
of decompressing it, and the cost per server per day at the default 120 s interval. No
database is needed: the batch is the spooled file of `Collector.process`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OUT = Path(__file__).resolve().parent / "out"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(kind: str, entries: int, release: str, interval: float) -> dict:
    from bench.dumps import cached_dump
    from slurm_io.collect.collector import Collector
    from slurm_io.collect.source import parse_file
    from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
    from slurm_io.store import kept
    from slurm_io.store.spool import Spool

    reads = [cached_dump(OUT, entries, release, kind, step=s) for s in (0, 1)]
    state = Path(tempfile.mkdtemp(prefix="bench-window-"))
    try:
        spool = Spool(state / "spool")
        c = Collector(f"bench-{kind.lower()}-{os.getpid()}", state, spool,
                      ClassifyCache(JobIdGrammar()), interval)
        t0 = 1_795_000_000.0
        c.process(t0, parse_file(reads[0], c.previous))
        res = c.process(t0 + interval, parse_file(reads[1], c.previous))
        path = spool.pending(c.name)[-1]
        raw = path.read_bytes()
        cpu = _cpu()
        packed = zlib.compress(raw, kept.LEVEL)
        cpu_pack = _cpu() - cpu
        cpu = _cpu()
        packed6 = zlib.compress(raw, 6)
        cpu_pack6 = _cpu() - cpu
        cpu = _cpu()
        zlib.decompress(packed)
        cpu_unpack = _cpu() - cpu
        per_day = 86400 / interval
        return {"kind": kind, "release": release, "entries": res.batch.n_entries,
                "rows": len(res.batch.deltas), "batch_MB": round(len(raw) / 1e6, 2),
                "kept_MB": round(len(packed) / 1e6, 2),
                "ratio": round(len(raw) / len(packed), 1),
                "compress_cpu_s": round(cpu_pack, 3),
                "level6_MB": round(len(packed6) / 1e6, 2), "level6_cpu_s": round(cpu_pack6, 3),
                "decompress_cpu_s": round(cpu_unpack, 3),
                "interval_s": interval,
                "raw_GB_per_day": round(len(raw) * per_day / 1e9, 2),
                "kept_GB_per_day": round(len(packed) * per_day / 1e9, 2)}
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--release", default="2.16")
    ap.add_argument("--interval", type=float, default=120.0)
    a = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    t = time.time()
    for kind in ("OST", "MDT"):
        print(json.dumps(measure(kind, a.entries, a.release, a.interval)), flush=True)
    print(f"# {time.time() - t:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
