"""The performance budget: the key figures in one run, beside their budgets and the last ones.

    .venv/bin/python bench/budget.py [--update] [--markdown] [--small] [--dsn DSN]
        [--only NAME,...] [--venv DIR] [--json PATH] [--munge-socket PATH]

Runs the benches of this folder (each as its own process, its output read back) and a few
direct timings, on inputs made before anything is measured: the 100k-entry dumps, a
3-day, 3,000-job database built by `bench_show.py build`, the site-like venv of
/usr/bin/python3. Prints each figure beside its budget and beside the figure committed in
bench/budget.json, and exits 1 where a figure is over its budget or more than 15 % worse
than the committed one. `--update` writes the figures of this run to budget.json (and the
table to bench/README.md); `--markdown` only writes bench/README.md's table from
budget.json, between its markers, so the README's figures are never typed.

`--small`: tiny inputs, seconds per figure; checks that every figure is produced (the suite
runs it so that no bench rots), not their values: budgets and the committed figures are
not compared. Without `--dsn` a throw-away embedded PostgreSQL is made under /tmp. Needs
root for the service and start-up figures (accounts, MUNGE), as bench_service.py does.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.budget_rules import README, better, fmt, merged, suspects, table, write_readme

BENCH = Path(__file__).resolve().parent
PY = sys.executable
JOBIO = str(Path(sys.executable).with_name("jobio"))
COMMITTED = BENCH / "budget.json"


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


def machine(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return (f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]} (start-up: "
            f"/usr/bin/python3 {_system_python()}), PostgreSQL {row[0] if row else '?'}")


def _system_python() -> str:
    out = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip()


# -- the run ---------------------------------------------------------------------------------

def measure(args: argparse.Namespace, base: str, s: Sizes, only: set[str] | None,
            committed: dict[str, float]) -> dict[str, float]:
    """Inputs first (dumps, database, venv), then every figure; then the groups of figures
    more than 15 % worse than `committed` once more, each figure the better of its two."""
    from psycopg.conninfo import make_conninfo

    from bench.bench_service import public_venv
    from bench.dumps import cached_dump

    want: Callable[[str], bool] = lambda group: only is None or group in only  # noqa: E731
    out = BENCH / "out"
    dumps: dict[str, Path] = {}
    if want("parse") or want("cycle"):  # (the dumps take a minute to make the first time)
        dumps = {kind: cached_dump(out, s.entries, "2.16", kind, step=0)
                 for kind in ("OST", "MDT")}
        for kind in ("OST", "MDT"):
            cached_dump(out, s.entries, "2.16", kind, step=1)
    db = "budget_show_small" if s is SMALL else "budget_show"
    dbs = {"show", "attribution", "top", "scrape", "service", "startup"}
    if only is None or only & dbs:
        run(PY, str(BENCH / "bench_show.py"), "build", "--jobs", str(s.jobs), "--days",
            str(s.days), "--dsn", base, "--db", db)
    show_dsn = make_conninfo(base, dbname=db)
    if os.geteuid() == 0 and (want("service") or want("startup")):
        public_venv(args.venv)
    print(f"inputs made; load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    figures: dict[str, float] = {}
    steps: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("parse", lambda: parse_figures(s, dumps)),
        ("cycle", lambda: cycle_figures(s, lambda: fresh_db(base, "budget_cycle"))),
        ("ingest", lambda: ingest_figures(s, lambda: fresh_db(base, "budget_ingest"))),
        ("show", lambda: show_figures(s, base, db)),
        ("attribution", lambda: attribution_figures(s, base, db)),
        ("top", lambda: top_figures(s, show_dsn, s.days)),
        ("scrape", lambda: scrape_figures(s, show_dsn, s.days)),
        ("hook", lambda: hook_figures(s, fresh_db(base, "budget_hook"))),
        ("web", lambda: web_figures(s, base)),
        ("pack", lambda: pack_figures(s, base)),
        ("service", lambda: service_figures(s, show_dsn, args.venv, args.munge_socket)),
        ("startup", lambda: startup_figures(s, show_dsn, args.venv, args.munge_socket)),
        ("site", lambda: site_figures(s, site_dsn(args, base, s))),
    ]
    group_of: dict[str, str] = {}
    for group, step in steps:
        if not want(group):
            continue
        if group in ("service", "startup") and os.geteuid() != 0:
            print(f"{group}: needs root, not measured", file=sys.stderr)
            continue
        if group == "site" and s is FULL and not args.site:
            print("site: no --site database, not measured", file=sys.stderr)
            continue
        t = time.perf_counter()
        got = step()
        figures.update(got)
        group_of.update(dict.fromkeys(got, group))
        print(f"{group}: {', '.join(f'{k} {fmt(v)}' for k, v in got.items())} "
              f"({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)
    if s is FULL:  # a figure worse than committed is measured once more (not the site's)
        again = {group_of[n] for n in suspects(figures, committed)} - {"site"}
        for group, step in steps:
            if group in again:
                got = step()
                print(f"{group} again: {', '.join(f'{k} {fmt(v)}' for k, v in got.items())}",
                      file=sys.stderr, flush=True)
                figures.update({k: better(k, figures[k], v) for k, v in got.items()})
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="write this run to budget.json")
    ap.add_argument("--markdown", action="store_true",
                    help="only write bench/README.md's table from budget.json")
    ap.add_argument("--small", action="store_true", help="tiny inputs; values not judged")
    ap.add_argument("--dsn", help="a superuser conninfo (default: a throw-away server)")
    ap.add_argument("--only", help="comma-separated groups: parse,cycle,ingest,show,"
                    "attribution,top,scrape,hook,web,pack,service,startup,site (--update "
                    "keeps the committed figures of the others)")
    ap.add_argument("--venv", type=Path, default=Path("/tmp/slurm-io-bench-venv"),
                    help="the site-like venv of /usr/bin/python3 (made when missing)")
    ap.add_argument("--json", type=Path, help="also write this run's figures here")
    ap.add_argument("--munge-socket", help="munged's socket for the service and start-up "
                    "figures (default: the Slurm testbed's, as bench_service.py)")
    ap.add_argument("--site", help="conninfo of the prebuilt site-density database (the "
                    "`site` figures, ~30 minutes: bench/README.md); without it they are "
                    "measured with --small only, on a tiny one")
    args = ap.parse_args()
    committed = json.loads(COMMITTED.read_text()) if COMMITTED.exists() else {"figures": {}}
    if args.markdown:
        write_readme(committed)
        return 0
    s = SMALL if args.small else FULL
    only = set(args.only.split(",")) if args.only else None
    load = os.getloadavg()[0]
    server, work = None, None
    base = args.dsn
    if base is None:
        from slurm_io.store.embedded import EmbeddedPostgres

        work = Path(tempfile.mkdtemp(prefix="slurm-io-budget-", dir="/tmp"))
        work.chmod(0o755)
        server = EmbeddedPostgres(work / "pg")
        base = server.ensure()
    t0 = time.perf_counter()
    try:
        where = machine(base)
        figures = measure(args, base, s, only, committed["figures"])
    finally:
        if server is not None:
            server.stop()
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    doc = {"measured": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "machine": where,
           "load": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
           "small": args.small,
           "figures": {k: round(v, 4) for k, v in figures.items()}}
    lines, failed = table(figures, committed["figures"], judge=not args.small)
    print("\n".join(lines))
    print(f"({time.perf_counter() - t0:.0f} s; load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after)")
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    if args.update and not args.small:
        if only is not None:  # some groups: their figures replace the committed ones
            doc = merged(committed, doc, only)
        elif not args.site:  # the site group needs --site: its committed figures stay
            kept = {k: v for k, v in committed["figures"].items() if k not in doc["figures"]}
            doc["figures"] = {**kept, **doc["figures"]}
            # and when they were measured (the README's table says so)
            doc["updates"] = [u for u in committed.get("updates", []) if u["groups"] == "site"]
        COMMITTED.write_text(json.dumps(doc, indent=1) + "\n")
        write_readme(doc)
        print(f"written: {COMMITTED}, {README}")
    if failed:
        print(f"{failed} figure(s) over budget or worse than committed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
