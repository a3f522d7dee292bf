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
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.budget_groups import (
    BENCH,
    FULL,
    PY,
    SMALL,
    Sizes,
    attribution_figures,
    cycle_figures,
    fresh_db,
    hook_figures,
    ingest_figures,
    pack_figures,
    parse_figures,
    run,
    scrape_figures,
    service_figures,
    show_figures,
    site_dsn,
    site_figures,
    startup_figures,
    top_figures,
    web_figures,
)
from bench.budget_rules import README, better, fmt, merged, suspects, table, write_readme

COMMITTED = BENCH / "budget.json"


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
