"""A long fuzz run of the job_stats parser: byte-level damage of real-format samples.

    .venv/bin/python bench/fuzz_jobstats.py [--cases 20000] [--seed 1]

Each case applies 1-5 mutations (tests/parse/mutate.py: flipped, inserted, deleted,
duplicated bytes, truncation, swapped lines; inserted bytes include NUL, a CESU surrogate,
bytes that are not UTF-8, huge numbers) to one of the samples and parses the result whole
and in random pieces. Prints the cases, entries parsed, problems counted, exceptions that
escaped (must be 0) and broken promises (entries that could not be stored, entry starts
neither parsed nor counted; must be 0), with the first failing cases to reproduce.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slurm_io.parse.jobstats import parse, parse_stream
from tests.parse.mutate import SAMPLES, check, mutate, random_ops


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    entries = problems = escaped = broken = 0
    failures: list[str] = []
    t0 = time.perf_counter()
    for case in range(args.cases):
        sample = rng.randrange(len(SAMPLES))
        ops = random_ops(rng)
        data = mutate(SAMPLES[sample], ops)
        try:
            r = parse(data)
            cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randint(0, 4)))
            pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
            streamed = parse_stream(pieces)
        except Exception:
            escaped += 1
            if len(failures) < 5:
                failures.append(f"case {case} sample {sample} ops {ops}:\n"
                                + traceback.format_exc(limit=3))
            continue
        entries += r.n_entries
        problems += len(r.problems)
        wrong = check(data, r)
        if streamed.targets != r.targets:
            wrong.append("parsing in pieces gave other entries")
        if wrong:
            broken += 1
            if len(failures) < 5:
                failures.append(f"case {case} sample {sample} ops {ops}: {wrong[:3]}")
    elapsed = time.perf_counter() - t0
    print(f"cases={args.cases} entries_parsed={entries} problems_counted={problems} "
          f"exceptions_escaped={escaped} broken_promises={broken} seconds={elapsed:.1f}")
    for f in failures:
        print(f)
    return 0 if escaped == 0 and broken == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
