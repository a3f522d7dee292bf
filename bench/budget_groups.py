"""The figures of bench/budget.py, one function per group: each runs its bench as its own
process (or times a piece of work directly) on inputs budget.py made, and returns the group's
figures by name. Apart from budget.py, which makes the inputs, runs the groups, judges and
writes, so that neither grows past what one reads at once."""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

BENCH = Path(__file__).resolve().parent
PY = sys.executable
JOBIO = str(Path(sys.executable).with_name("jobio"))


class Sizes(NamedTuple):
    entries: int  # per dump
    jobs: int  # of the bench_show database
    days: int
    ingest_rows: int
    batch: int  # jobs attributed in one batch
    repeat: int  # timings per in-process / new-process figure
    clients: int
    seconds: float
    pairs: int  # start-up alternations
    best: int  # runs of a CPU figure of one fixed piece of work, the least kept


FULL = Sizes(100_000, 3000, 3, 300_000, 1000, 5, 50, 10, 11, 3)
SMALL = Sizes(400, 200, 2, 2000, 50, 2, 5, 1, 2, 1)


def run(*argv: str, env: dict[str, str] | None = None, timeout: float = 1200) -> str:
    """stdout of a bench (or `jobio`) run as a new process; its failure ends the run."""
    proc = subprocess.run([*argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=BENCH.parent, check=False)
    if proc.returncode:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return proc.stdout


def grab(pattern: str, text: str, group: int = 1) -> float:
    """The number `pattern`'s `group` finds in a bench's output (commas allowed)."""
    m = re.search(pattern, text)
    if m is None:
        sys.exit(f"no figure {pattern!r} in:\n{text[-2000:]}")
    return float(m.group(group).replace(",", ""))


def fresh_db(base: str, name: str) -> str:
    """conninfo of an empty database `name` on the server of `base` (dropped if there)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(base, dbname=name)


# -- the figures -----------------------------------------------------------------------------

def parse_figures(s: Sizes, dumps: dict[str, Path]) -> dict[str, float]:
    """MB/s of bytes in, best of 3, with the collector's GC policy (in process)."""
    from bench.bench_parse import _best
    from slurm_io.collect.gc_policy import CycleGC

    out = {}
    for kind in ("OST", "MDT"):
        text = dumps[kind].read_bytes()
        sec, n, problems = _best(text, 3, CycleGC())
        assert n == s.entries and not problems, (n, problems)
        out[f"parse_{kind.lower()}"] = len(text) / 1e6 / sec
    out["parse_shared"] = parse_shared(20 if s is SMALL else 200)
    return out


def parse_shared(times: int) -> float:
    """MB/s over the real and synthetic captures of ../shared (tests/parse's samples when it
    is absent), each parsed `times` times: small texts of many formats, fast path or not."""
    from slurm_io.parse.jobstats import parse
    from tests.shared import SHARED  # ../shared, or where $SLURM_IO_SHARED says

    shared = SHARED / "fixtures" / "jobstats"
    files = sorted(shared.glob("*")) if shared.is_dir() else []
    texts = [p.read_bytes() for p in files if p.suffix in (".job_stats", ".txt")]
    if not texts:  # a clone without ../shared: the project's own samples of each format
        from tests.parse.mutate import SAMPLES

        print("../shared is absent: parse_shared is of tests/parse's samples instead",
              file=sys.stderr)
        texts = list(SAMPLES)
    assert texts, "no job_stats text to parse"
    gc.collect()
    t = time.perf_counter()
    for _ in range(times):
        for text in texts:
            parse(text)
    return sum(map(len, texts)) * times / 1e6 / (time.perf_counter() - t)


def cycle_figures(s: Sizes, new_db: Callable[[], str]) -> dict[str, float]:
    """bench_cycle.py's measured cycle, each kind in a fresh process (its own peak RSS) on a
    fresh database, `s.best` times, the kinds alternated. The CPU figure is the least of
    the runs: the cycle is the same work each time and other processes on the cores only
    ever add to its CPU time (cache misses, frequency), which moved single runs by ±15 %
    (issue 25). The peak RSS is the largest: memory is a bound, its worst run is the one
    a site must have room for."""
    cpu: dict[str, list[float]] = {"ost": [], "mdt": []}
    rss: dict[str, list[float]] = {"ost": [], "mdt": []}
    for _ in range(s.best):
        for kind in ("OST", "MDT"):
            r = json.loads(run(PY, str(BENCH / "bench_cycle.py"), "--child", kind,
                               str(s.entries), "2.16", new_db()).strip().splitlines()[-1])
            assert r["entries"] == s.entries and r["rows"] > 0, r
            cpu[kind.lower()].append(r["cpu_s"])
            rss[kind.lower()].append(r["max_rss_MB"])
    out = {}
    for kind in ("ost", "mdt"):
        out[f"cycle_{kind}_cpu"] = min(cpu[kind])
        out[f"cycle_{kind}_rss"] = max(rss[kind])
    return out


def ingest_figures(s: Sizes, new_db: Callable[[], str]) -> dict[str, float]:
    """write_batch's rate, the best of `s.best` runs on a fresh database each (the same
    rows each time: a busy neighbour only ever slows it), and the bytes a row takes."""
    texts = [run(PY, str(BENCH / "bench_ingest.py"), "--rows", str(s.ingest_rows), "--dsn",
                 new_db()) for _ in range(s.best)]
    return {"ingest_rate": max(grab(r"write_batch\s+([\d,]+) rows/s", t) for t in texts),
            "ingest_bytes": grab(r"table\+indexes\s+([\d,]+) bytes/row", texts[0])}


def pack_figures(s: Sizes, base: str) -> dict[str, float]:
    nodes, hours = ("6", "2") if s is SMALL else ("200", "24")
    text = run(PY, str(BENCH / "bench_pack.py"), "--nodes", nodes, "--hours", hours,
               "--dsn", base, "--db", "budget_pack")
    return {"pack_bytes": grab(r"packed tier: ([\d.]+) bytes per delta", text),
            "pack_90d": grab(r"10,000-node site: ([\d,]+) GB packed", text),
            "pack_rate": grab(r"\(([\d,]+) deltas/s", text),
            "pack_copy_wait": grab(r"longest ([\d,]+) ms", text)}


def show_figures(s: Sizes, base: str, db: str) -> dict[str, float]:
    text = run(PY, str(BENCH / "bench_show.py"), "run", "--dsn", base, "--db", db,
               "--sample", str(3 * s.repeat), "--processes", str(s.repeat),
               "--batch", str(s.batch))
    return {"show_server": grab(r"server time \(\d+ queries\): median ([\d.]+) ms", text),
            "show_process": grab(r"new process\): median ([\d.]+) ms", text)}


def attribution_figures(s: Sizes, base: str, db: str) -> dict[str, float]:
    text = run(PY, str(BENCH / "bench_show.py"), "batch", "--dsn", base, "--db", db,
               "--batch", str(s.batch))
    n = grab(r"attribution of (\d+) finished jobs", text)
    assert n == s.batch, text
    return {"attribution": grab(r"in one batch: ([\d.]+) s wall", text) * 1000 / n}


def top_figures(s: Sizes, dsn: str, days: int) -> dict[str, float]:
    """`jobio top --once` as a person runs it, at moments of the database's middle day."""
    from bench.bench_show import T0

    walls = []
    for k in range(s.repeat):
        at = T0 + (days // 2) * 86400 + 3600 * (1 + 5 * k % 22)
        stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        # each moment is one fixed piece of work: the least of `best` runs (other processes
        # only add to a new process's wall: 0.18-0.23 s between runs on a quiet box)
        least = float("inf")
        for _ in range(s.best):
            t = time.perf_counter()
            out = run(JOBIO, "top", "--once", "--at", stamp, env={"SLURM_IO_DSN": dsn})
            least = min(least, time.perf_counter() - t)
            assert "JOBID" in out, out
        walls.append(least)
    return {"top": statistics.median(walls)}


def scrape_figures(s: Sizes, dsn: str, days: int) -> dict[str, float]:
    text = run(PY, str(BENCH / "bench_exporter.py"), "scrape", "--dsn", dsn, "--repeat",
               str(3 * s.repeat), "--day", str(days // 2))
    assert grab(r"series: (\d+)", text) > 0, text
    return {"scrape": grab(r"then median ([\d.]+) s", text)}


def hook_figures(s: Sizes, dsn: str) -> dict[str, float]:
    text = run(PY, str(BENCH / "bench_hook.py"), "--runs", str(4 * s.repeat), "--isolated",
               "1", "--burst", "2", "--dsn", dsn)
    return {"hook": grab(r"down: no server\s+n=\d+\s+min\s+[\d.]+\s+median\s+([\d.]+)", text)}


def web_figures(s: Sizes, dsn: str) -> dict[str, float]:
    """The web view's pages, server side: 500 jobs in the period (issue 22: under 1 s)."""
    text = run(PY, str(BENCH / "bench_web.py"), "--dsn", dsn, "--jobs",
               str(500 if s is FULL else 30), "--running", "5" if s is FULL else "1",
               "--repeat", str(2 * s.repeat))
    return {"web_myjobs": grab(r"my jobs page, \d+ jobs .*: median ([\d.]+) ms", text),
            "web_job": grab(r"job page, 7-day job .*: median ([\d.]+) ms", text)}


def munge_args(socket: str | None) -> list[str]:
    """bench_service/bench_startup's --munge-socket (their default: the Slurm testbed's)."""
    return ["--munge-socket", socket] if socket else []


def service_figures(s: Sizes, dsn: str, venv: Path, munge: str | None) -> dict[str, float]:
    """The median of each figure over 3 runs (1 with --small): a p99 of 50 clients sharing
    2 cores with the service moved by 25 % from one run to the next (bench/README.md)."""
    runs = []
    for _ in range(1 if s is SMALL else 3):
        text = run(PY, str(BENCH / "bench_service.py"), "--dsn", dsn, "--clients",
                   str(s.clients), "--seconds", str(s.seconds), "--n", str(s.repeat),
                   "--venv", str(venv), "--no-netns", "--spread", "alice,bob,carol",
                   *munge_args(munge))
        runs.append({
            "service_p99": grab(r"concurrent clients of \d+ users.*service time p50 [\d.]+ "
                                r"ms, p99 ([\d.]+) ms", text),
            "service_p99_one_user": grab(r"concurrent clients,.*service time p50 [\d.]+ ms, "
                                         r"p99 ([\d.]+) ms", text),
            "service_wait_p99": grab(r"parts:.*wait p50 [\d.]+ ms, p99 ([\d.]+) ms", text),
            "service_run_p99": grab(r"parts:.*run p50 [\d.]+ ms, p99 ([\d.]+) ms", text),
            "service_rate": grab(r"concurrent clients.* ([\d.]+) req/s", text)})
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def startup_figures(s: Sizes, dsn: str, venv: Path, munge: str | None) -> dict[str, float]:
    r = json.loads(run(PY, str(BENCH / "bench_startup.py"), "--dsn", dsn, "--venv", str(venv),
                       "--pairs", str(s.pairs), "--json", *munge_args(munge)
                       ).strip().splitlines()[-1])
    out = {}
    for kind in ("local", "client", "hook"):
        out[f"startup_{kind}"] = r[kind]["ratio"]
        out[f"startup_{kind}_ms"] = r[kind]["ms"]
        out[f"startup_{kind}_cpu"] = r[kind]["cpu_ms"] / r[kind]["floor_cpu_ms"]
    return out


def site_dsn(args: argparse.Namespace, base: str, s: Sizes) -> str:
    """The site-density database: `--site`, or with --small a tiny one built here."""
    from psycopg.conninfo import make_conninfo

    if args.site:
        return str(args.site)
    assert s is SMALL, "the full site figures need the prebuilt database (--site)"
    run(PY, str(BENCH / "bench_show.py"), "build", "--density", "site", "--nodes", "40",
        "--days", "2", "--dsn", base, "--db", "budget_site_small")
    return make_conninfo(base, dbname="budget_site_small")


def _drop(dsn: str, name: str) -> None:
    """Drop a scratch database of the site's server (its disk is the site's)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def site_figures(s: Sizes, dsn: str) -> dict[str, float]:
    """A day at a site (bench_site.py) on a prebuilt site-density database (`--site`; see
    bench/README.md): the `--small` form runs each part on whatever `--site` names (the
    suite builds a tiny one), with fewer repeats."""
    site = [PY, str(BENCH / "bench_site.py")]
    small = s is SMALL
    nodes = grab(r"(\d+) nodes", run(*site, "nodes", "--dsn", dsn))
    copy = run(*site, "copy", "--dsn", dsn, "--nodes", str(int(nodes)),
               "--repeat", str(s.repeat))
    every = "1" if small else "20"
    # two days of backlog, stopped (its memory), then the last day's whole backlog
    attr2 = run(*site, "attribute", "--dsn", dsn, "--day", "all", "--reset",
                "--stop-after", "5" if small else "240")
    attr1 = run(*site, "attribute", "--dsn", dsn, "--day", "last", "--reset",
                "--nodes", str(int(nodes)), "--copy-every", every)
    # the stopped run's rest (the first day): done by the next run, as on a site, and the
    # day `daily` reads is then attributed, as `jobio attribute` leaves it before `daily`
    rest = run(*site, "attribute", "--dsn", dsn, "--day", "all")
    show = run(*site, "show", "--dsn", dsn, "--sample", str(2 if small else 20))
    top = run(*site, "top", "--dsn", dsn, "--repeat", str(s.repeat))
    scrape = run(PY, str(BENCH / "bench_exporter.py"), "scrape", "--dsn", dsn, "--repeat",
                 str(3 * s.repeat), "--day", "0")
    daily = run(*site, "daily", "--dsn", dsn, "--nodes", str(int(nodes)), "--copy-every",
                every)
    # the packed tier at the site's density: one entry in 10 of the fullest day, packed
    from psycopg.conninfo import make_conninfo

    pack = run(PY, str(BENCH / "bench_pack.py"), "--from-dsn", dsn, "--day", "fullest",
               "--sample", "2" if small else "10", "--nodes", str(int(nodes)),
               "--dsn", make_conninfo(dsn, dbname="postgres"), "--db", "budget_site_pack")
    _drop(dsn, "budget_site_pack")
    prune = run(*site, "prune", "--dsn", dsn)
    copied = r"copy of one interval \(([\d,]+) rows.*median ([\d.]+) s, max ([\d.]+) s"
    return {
        "site_copy_rows": grab(copied, copy),
        "site_copy": grab(copied, copy, 2),
        "site_show_stored": grab(r"show server time, stored: median ([\d.]+) ms", show),
        "site_show_live": grab(r"show server time, not attributed: median ([\d.]+) ms", show),
        "site_top_job": grab(r"top --once -g job \(new process\): median ([\d.]+) s", top),
        "site_top_user": grab(r"top --once -g user \(new process\): median ([\d.]+) s", top),
        "site_scrape": grab(r"then median ([\d.]+) s", scrape),
        "site_scrape_series": grab(r"series: (\d+)", scrape),
        "site_attribute_day": grab(r"jobio attribute --since \S+: ([\d.]+) s wall",
                                   attr1),
        "site_attribute_jobs": grab(r"attributed (\d+) job", attr1),
        "site_attribute_rss_1day": grab(r"VmHWM (\d+) MB", attr1),
        "site_attribute_rss_2days": grab(r"VmHWM (\d+) MB", attr2),
        "site_attribute_rest": grab(r"jobio attribute --since \S+: ([\d.]+) s wall", rest),
        "site_copy_attribute": grab(copied, attr1, 3),
        "site_daily": grab(r"jobio daily --recompute --date \S+: ([\d.]+) s wall", daily),
        "site_copy_daily": grab(copied, daily, 3),
        "site_prune": grab(r"jobio db prune of a day: ([\d.]+) s", prune),
        "site_pack_bytes": grab(r"packed tier: ([\d.]+) bytes per delta", pack),
        "site_pack_90d": grab(r"10,000-node site: ([\d,]+) GB packed", pack),
        "site_pack_rate": grab(r"\(([\d,]+) deltas/s", pack),
    }
