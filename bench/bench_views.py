"""Filesystem views on the 30-day, 2,000-node, ~50k-job database of bench_show.py.

    .venv/bin/python bench/bench_show.py build      # once (kept in /var/tmp/slurm-io-bench)
    .venv/bin/python bench/bench_views.py [--dsn DSN] [--day YYYY-MM-DD] [--repeat 5]

Applies pending migrations (0007: LASSi tables and the BRIN index on ts_end), then times:
* LASSi hourly metrics of the 7 days before DAY (its baseline) and of DAY itself
  (`jobio lassi compute`, in process);
* `jobio top --once` at random moments of DAY: in process (warm) and as a new process (wall
  time, Python start-up included), with the EXPLAIN (ANALYZE, BUFFERS) of its main query;
* the daily report of DAY (`jobio daily --recompute`, a new process, wall time) and the
  in-process breakdown (metrics, queries, plots, job pages).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench.bench_show import STATE, T0, _LoggingCursor, dsn_of


def _dsn(args: argparse.Namespace) -> str:
    base = psycopg.conninfo.conninfo_to_dict(dsn_of(args))
    base["dbname"] = args.db
    return psycopg.conninfo.make_conninfo(**base)


def main() -> None:
    from slurm_io.lassi.days import compute_day, day_bounds
    from slurm_io.report import daily
    from slurm_io.report import top as top_mod
    from slurm_io.store import migrate

    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn")
    ap.add_argument("--day", help="UTC day (default: day 15 of the bench month)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--db", default="bench_show", help="database built by bench_show.py build")
    ap.add_argument("--out", type=Path, default=STATE / "views-daily",
                    help="the daily report's directory (replaced on every run)")
    args = ap.parse_args()
    dsn = _dsn(args)
    day = (date.fromisoformat(args.day) if args.day
           else datetime.fromtimestamp(T0, UTC).date() + timedelta(days=15))
    start, end = day_bounds(day)
    with psycopg.connect(dsn) as conn:
        t = time.perf_counter()
        applied = migrate.upgrade(conn)
        if applied:
            print(f"migrations {', '.join(applied)} in {time.perf_counter() - t:.1f} s")
        n_rows = conn.execute("SELECT count(*) FROM jobstats_delta WHERE ts_end > %s "
                              "AND ts_end <= %s", (datetime.fromtimestamp(start, UTC),
                                                   datetime.fromtimestamp(end, UTC))
                              ).fetchone()[0]
        n_jobs = conn.execute("SELECT count(*) FROM job").fetchone()[0]
    print(f"database: {n_jobs:,} jobs; {day}: {n_rows:,} delta rows")

    # -- LASSi: baseline days, then the day ------------------------------------------------
    times = []
    with psycopg.connect(dsn) as conn:
        for k in range(7, 0, -1):
            r = compute_day(conn, day - timedelta(days=k))
            times.append(r.seconds)
        r = compute_day(conn, day)
    print(f"LASSi hourly metrics: {day} in {r.seconds:.2f} s ({r.job_hours:,} job hours, "
          f"{r.fs_hours} filesystem hours, baseline {r.baseline_hours} h); the 7 days "
          f"before: median {statistics.median(times):.2f} s, max {max(times):.2f} s")

    # -- top ---------------------------------------------------------------------------------
    rng = random.Random(1)
    moments = [start + rng.random() * 86400 for _ in range(max(args.repeat, 3))]
    warm = []
    with psycopg.connect(dsn) as conn:
        top_mod.top(conn, at=moments[0])  # warm the cache
        conn.rollback()
        for at in moments:
            t = time.perf_counter()
            res = top_mod.top(conn, at=at)
            warm.append(time.perf_counter() - t)
            conn.rollback()
    print(f"top (in process, warm): median {statistics.median(warm) * 1000:.0f} ms, max "
          f"{max(warm) * 1000:.0f} ms over {len(warm)} moments "
          f"(last: {res.n_jobs} jobs, {len(res.total.hosts)} nodes in the interval)")
    env = {**os.environ, "SLURM_IO_DSN": dsn}
    jobio = str(Path(sys.executable).with_name("jobio"))
    wall = []
    for at in moments:
        stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        t = time.perf_counter()
        out = subprocess.run([jobio, "top", "--once", "--at", stamp], env=env, check=True,
                             capture_output=True, text=True)
        wall.append(time.perf_counter() - t)
    print(f"jobio top --once (wall, new process): median {statistics.median(wall):.2f} s, "
          f"max {max(wall):.2f} s")
    print("\n".join(out.stdout.splitlines()[:8]))
    # the EXPLAIN of each query `top` ran at the last moment (whatever its queries are now)
    from bench.bench_show import _explain_logged

    with psycopg.connect(dsn, cursor_factory=_LoggingCursor) as conn:
        conn.execute("SET jit = off")
        _LoggingCursor.log = []
        top_mod.top(conn, at=moments[-1])
        queries, _LoggingCursor.log = _LoggingCursor.log, None
        conn.rollback()
        _explain_logged(conn, queries)

    # -- daily report ------------------------------------------------------------------------
    out_dir = args.out  # replaced on every run
    shutil.rmtree(out_dir, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([jobio, "daily", "--date", day.isoformat(), "--out", str(out_dir),
                    "--recompute"], env=env, check=True, capture_output=True)
    wall_daily = time.perf_counter() - t
    with psycopg.connect(dsn) as conn:
        rep = daily.build(conn, day, out_dir, recompute=True)
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in rep.timings.items())
    print(f"\njobio daily --recompute (wall, new process): {wall_daily:.1f} s; in process: "
          f"{parts}; {len(rep.job_pages)} job pages; {out_dir}/index.html")


if __name__ == "__main__":
    main()
