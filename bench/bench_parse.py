"""Parser throughput on 100k-entry OST and MDT dumps of several Lustre releases.

    .venv/bin/python bench/bench_parse.py [--entries 100000] [--releases 2.12,2.14,2.16]

Prints MB/s (best of 3) and entries/s per dump, with Python's default garbage collection
and with the collector's policy (collections paused during a cycle, collect/gc_policy.py).
Input is bytes, as the collector reads it. Dumps are generated once into bench/out/.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.dumps import cached_dump
from slurm_io.collect.gc_policy import CycleGC
from slurm_io.parse.jobstats import parse

OUT = Path(__file__).resolve().parent / "out"


def _best(text: bytes, repeat: int, pause: CycleGC | None) -> tuple[float, int, int]:
    best, n, problems = float("inf"), 0, 0
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        if pause is None:
            r = parse(text)
        else:
            with pause.cycle():
                r = parse(text)
        best = min(best, time.perf_counter() - t)
        n, problems = r.n_entries, len(r.problems)
        del r
        gc.unfreeze()
    return best, n, problems


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--releases", default="2.12,2.14,2.15.2,2.16")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'dump':<14}{'MB':>8}{'MB/s':>8}{'entries/s':>11}"
          f"{'MB/s (GC as in the collector)':>31}")
    for release in args.releases.split(","):
        for kind in ("OST", "MDT"):
            path = cached_dump(OUT, args.entries, release, kind)
            text = path.read_bytes()  # what the collector reads from lctl's pipe
            mb = len(text) / 1e6
            plain, n, problems = _best(text, args.repeat, None)
            assert n == args.entries and not problems, (n, problems)
            paused, n, problems = _best(text, args.repeat, CycleGC())
            assert n == args.entries and not problems, (n, problems)
            print(f"{kind + ' ' + release:<14}{mb:>8.1f}{mb / plain:>8.1f}"
                  f"{args.entries / plain:>11.0f}{mb / paused:>31.1f}")


if __name__ == "__main__":
    main()
