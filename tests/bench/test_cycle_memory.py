"""The collector's memory budget as a test: one cycle of a 100k-entry target in ≤ 300 MB.

A resource bound, not a timing: the peak RSS of a fresh process (its VmHWM: ru_maxrss would
carry over this process's own peak, see bench_cycle.peak_rss_mib) that runs the
collector on a 100k-entry OST dump of Lustre 2.16 (the baseline read after a start, then
the measured steady-state cycle: parse with reuse, classify, deltas, spool, state, COPY into
PostgreSQL), as bench/bench_cycle.py measures it. The dumps are made before, in this
process (bench/out caches them), so their making is not in the measured process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[2]
BUDGET_MB = 300
ENTRIES = 100_000


def test_one_cycle_of_100k_entries_stays_under_300_mb(db_dsn: str) -> None:
    sys.path.insert(0, str(REPO))
    from bench.dumps import cached_dump

    for step in (0, 1):
        cached_dump(REPO / "bench" / "out", ENTRIES, "2.16", "OST", step=step)
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_cycle.py"), "--child",
                           "OST", str(ENTRIES), "2.16", db_dsn], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cycle = json.loads(proc.stdout.strip().splitlines()[-1])
    assert cycle["entries"] == ENTRIES
    assert cycle["written"] == 1 and cycle["remaining"] == 0  # the COPY happened
    with psycopg.connect(db_dsn) as conn:
        stored = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()
    assert stored is not None and stored[0] >= cycle["rows"] > 0
    assert cycle["max_rss_MB"] <= BUDGET_MB, cycle
