"""The parser beside a pure-Python peer and beside the floors of any Python parser.

    .venv/bin/python bench/bench_parse_peer.py [--peer PATH/jobHarvest.py] [--entries 100000]

The peer is jobHarvest (conradtchan/jobHarvest), the one public pure-Python job_stats
reader: its `parseOss` splits each line and converts the fields it keeps. It is loaded from
a path the caller gives (a checkout of it); none of its code is part of this project. It
reads the 2.12 layout only (2.14 added commas after `samples`, 2.16 fractional
snapshot_time), so the ratio is taken on 2.12 dumps; the other releases print ours alone.

The floors say what no Python parser can beat on the same bytes: splitting into lines,
finding every digit run with one compiled regular expression, and converting those runs to
int -- the work any parser that keeps the counters must do at the least.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.dumps import cached_dump
from slurm_io.parse.jobstats import parse

OUT = Path(__file__).resolve().parent / "out"
_DIGITS = re.compile(rb"\d+")


def best_seconds(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of `repeat` calls, each after a full collection (results dropped)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
        del result
    return best


def load_peer(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("peer_jobharvest", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"bench_parse_peer: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    argv, sys.argv = sys.argv, [str(path)]  # it reads sys.argv at import
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def peer_parse(peer: ModuleType, text: str) -> int:
    """The peer's own entry point on one target's text; returns the entries it kept."""
    tree = {"oss": {"data": {"fs": {"T": {"type": "oss", "data": text}}}}}
    peer.parseOss(tree)
    return len(tree["oss"]["data"]["fs"]["T"]["parsed"])


def floors(data: bytes) -> dict[str, float]:
    """MB/s of the work every parser keeping the counters must do at the least."""
    mb = len(data) / 1e6
    return {
        "split lines": mb / best_seconds(lambda: data.split(b"\n"), 3),
        "find digit runs": mb / best_seconds(lambda: _DIGITS.findall(data), 3),
        "find + int()": mb / best_seconds(lambda: [int(x) for x in _DIGITS.findall(data)], 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", type=Path, help="path of jobHarvest.py (optional)")
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--releases", default="2.12,2.14,2.16")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    peer = load_peer(args.peer) if args.peer else None
    print(f"{'dump':<10}{'MB':>7}{'ours MB/s':>11}{'peer MB/s':>11}{'ratio':>7}"
          f"{'lines':>8}{'digits':>8}{'int()':>8}")
    for release in args.releases.split(","):
        for kind in ("OST", "MDT"):
            data = cached_dump(OUT, args.entries, release, kind).read_bytes()
            mb = len(data) / 1e6
            n = parse(data).n_entries
            if n != args.entries:
                raise SystemExit(f"bench_parse_peer: parsed {n} of {args.entries} entries")
            ours = mb / best_seconds(lambda d=data: parse(d), args.repeat)
            peer_mbs, ratio = "-", "-"
            if peer is not None:
                text = data.decode()
                try:
                    kept = peer_parse(peer, text)
                except ValueError as e:  # a layout the peer does not read
                    peer_mbs = f"fails ({str(e)[:20]})" if release == "2.12" else "n/a"
                else:
                    if kept != args.entries:
                        raise SystemExit(f"bench_parse_peer: peer kept {kept} entries")
                    p = mb / best_seconds(lambda t=text: peer_parse(peer, t), args.repeat)
                    peer_mbs, ratio = f"{p:.1f}", f"{ours / p:.2f}"
            f = floors(data)
            print(f"{kind + ' ' + release:<10}{mb:>7.0f}{ours:>11.1f}{peer_mbs:>11}{ratio:>7}"
                  f"{f['split lines']:>8.0f}{f['find digit runs']:>8.0f}{f['find + int()']:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
