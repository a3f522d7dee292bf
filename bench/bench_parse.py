"""Parser throughput on 100k-entry OST and MDT dumps of several Lustre releases.

    .venv/bin/python bench/bench_parse.py [--entries 100000] [--releases 2.12,2.14,2.16]

Prints MB/s (best of 3) and entries/s per dump. Dumps are generated once into bench/out/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.dumps import cached_dump
from slurm_io.parse.jobstats import parse

OUT = Path(__file__).resolve().parent / "out"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--releases", default="2.12,2.14,2.15.2,2.16")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'dump':<28}{'MB':>8}{'best s':>9}{'MB/s':>8}{'entries/s':>12}")
    for release in args.releases.split(","):
        for kind in ("OST", "MDT"):
            path = cached_dump(OUT, args.entries, release, kind)
            text = path.read_bytes()  # what the collector reads from lctl's pipe
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                r = parse(text)
                best = min(best, time.perf_counter() - t)
            assert r.n_entries == args.entries and not r.problems, (r.n_entries, r.problems[:3])
            mb = len(text) / 1e6
            print(f"{kind + ' ' + release:<28}{mb:>8.1f}{best:>9.2f}{mb / best:>8.1f}"
                  f"{args.entries / best:>12.0f}")


if __name__ == "__main__":
    main()
