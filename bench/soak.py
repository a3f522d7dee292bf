"""A 30-day soak on a compressed clock: the daemons run against real PostgreSQL for a month of
simulated time, sampled all along; nothing may grow but what retention bounds, nothing lost.

    .venv/bin/python bench/soak.py [--dsn DSN] [--days 30] [--speed 1440] [--servers 3]
        [--entries 300] [--interval 600] [--sample 10] [--out bench/out/soak]

Runs, as new processes of the real `jobio` (the checkout's): `--servers` collectors
(`jobio collect`, each on its own state dir, reading bench/soak_lctl.py: one OST of
`--entries` job entries with jobs starting and ending all the time, generated at the clock's
time), `jobio exporter` (scraped at every sample), and once a simulated day `jobio db prune`
with `retention.raw` 7 days. Samples every `--sample` wall seconds: each daemon's RSS and
open files (/proc), the database's size, each collector's spool and kept dirs, rows stored
(ingest_batch's n_rows per collector, which retention never drops) against rows expected
(every read a collector took: each of its entries moved, so one row each; the first read of
a collector only sets its baseline), rows in jobstats_delta, ERROR and Traceback lines of the
daemons' logs. Writes OUT/soak.csv and OUT/soak.png (matplotlib, the server extra), prints
the bounds: RSS of each daemon at the end against its first simulated day, the database's
size once retention applies, spool empty, stored = expected, errors 0.

The compressed clock (slurm_io/clock.py, SLURM_IO_CLOCK): every daemon started here, and
soak_lctl.py, see simulated time SPEED times faster than the wall clock, from the same
origin: a collector waits 600 simulated seconds (0.42 s of wall time at 1440) between
reads, stamps its rows, ages its kept batches and `db prune` drops days on that clock. What
it stands for: 30 days of cycles, rows, partitions created and dropped, kept batches
written and aged, collector state churned by 30 days of jobs, each daemon's memory over
~4,300 cycles. What it does not: wall-clock effects (PostgreSQL's autovacuum, checkpoints
and now(), TCP keep-alives, log rotation, the kernel's page cache over a month), a site's
read size (`--entries`: 300 entries, not 100k), and the hook, the report daemon and `jobio
serve` (not run here: see bench/README.md).
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
SIM0 = 1_790_000_000.0 - 1_790_000_000.0 % 86400  # 2026-09-21 00:00 UTC
DAY = 86400.0


def server_dsn(args: argparse.Namespace) -> str:
    if args.dsn:
        return str(args.dsn)
    from slurm_io.store.embedded import EmbeddedPostgres

    state = Path("/var/tmp/slurm-io-soak")
    state.mkdir(parents=True, exist_ok=True)
    return EmbeddedPostgres(state).ensure()


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _proc(pid: int) -> tuple[int, int]:
    """(RSS bytes, open files) of a live process; (0, 0) once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(int(line.split()[1]) * 1024 for line in status.splitlines()
                   if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return 0, 0


def _expected(log: Path) -> int:
    """Rows the reads logged by soak_lctl.py should have stored: all but the first read's."""
    if not log.exists():
        return 0
    counts = [int(line.split()[1]) for line in log.read_text().splitlines() if line.strip()]
    return sum(counts[1:])


def _errors(logs: list[Path]) -> int:
    return sum(line.count(" ERROR ") + line.count("Traceback")
               for p in logs if p.exists() for line in p.read_text(errors="replace").splitlines())


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = server_dsn(args)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(args.db)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(args.db)))
    params = psycopg.conninfo.conninfo_to_dict(server)
    params["dbname"] = args.db
    dsn = psycopg.conninfo.make_conninfo(**params)
    port = 19800 + os.getpid() % 100
    config = out / "config.toml"
    config.write_text(f'dsn = "{dsn}"\n[retention]\nraw = "{args.retention}"\n'
                      f'[exporter]\nlisten = "127.0.0.1:{port}"\n')
    wall0 = time.time()
    env = {**os.environ, "SLURM_IO_CLOCK": f"{SIM0} {wall0} {args.speed}",
           "SLURM_IO_CONFIG": str(config), "PYTHONPATH": str(REPO)}
    jobio = [sys.executable, "-m", "slurm_io.cli"]
    up = subprocess.run([*jobio, "db", "upgrade"], env=env, capture_output=True, text=True,
                        check=False)
    if up.returncode != 0:
        raise SystemExit(f"db upgrade failed: {up.stderr}")
    daemons: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}
    names = [f"oss{i + 1:02d}" for i in range(args.servers)]
    for name in names:
        logs[name] = out / f"{name}.log"
        lctl = f"{sys.executable} {REPO / 'bench' / 'soak_lctl.py'} {name} {args.entries} " \
               f"{out / (name + '.reads')}"
        (out / f"{name}.reads").unlink(missing_ok=True)
        daemons[name] = subprocess.Popen(
            [*jobio, "--state-dir", str(out / "state" / name), "collect", "--name", name,
             "--command", lctl, "--interval", str(args.interval)],
            env=env, stdout=subprocess.DEVNULL, stderr=logs[name].open("w"))
    logs["exporter"] = out / "exporter.log"
    daemons["exporter"] = subprocess.Popen([*jobio, "exporter"], env=env,
                                           stdout=subprocess.DEVNULL,
                                           stderr=logs["exporter"].open("w"))
    logs["prune"] = out / "prune.log"
    _wait_for(f"http://127.0.0.1:{port}/metrics")  # errors count once it answered
    rows: list[dict[str, float]] = []
    end_wall = wall0 + args.days * DAY / args.speed
    pruned_day = 0
    scrape_errors = 0
    try:
        while time.time() < end_wall:
            time.sleep(max(0.0, min(args.sample, end_wall - time.time())))
            sim = SIM0 + (time.time() - wall0) * args.speed
            day = int((sim - SIM0) // DAY)
            if day > pruned_day:  # once a simulated day, as the cron job
                pruned_day = day
                with logs["prune"].open("a") as f:
                    subprocess.run([*jobio, "db", "prune"], env=env, stdout=f, stderr=f,
                                   check=False)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                    r.read()
            except OSError:
                scrape_errors += 1
            rows.append(_sample(dsn, out, names, daemons, logs, sim, wall0, scrape_errors))
            r = rows[-1]
            print(f"day {r['sim_day']:5.1f}: db {r['db_bytes'] / 1e6:7.1f} MB, rows stored "
                  f"{int(r['rows_stored']):,} / expected {int(r['rows_expected']):,}, "
                  + ", ".join(f"{n} {r[n + '_rss'] / 1e6:.0f} MB" for n in daemons),
                  flush=True)
    finally:
        for p in daemons.values():
            p.send_signal(signal.SIGTERM)
        for p in daemons.values():
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
    sim = SIM0 + (time.time() - wall0) * args.speed
    rows.append(_sample(dsn, out, names, daemons, logs, sim, wall0, scrape_errors))
    _write(out, rows)
    return _judge(rows, names, list(daemons))


def _wait_for(url: str, timeout: float = 120.0) -> None:
    """Until `url` answers (the exporter started): a loaded box takes seconds to import it."""
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                r.read()
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def _sample(dsn: str, out: Path, names: list[str], daemons: dict[str, subprocess.Popen],
            logs: dict[str, Path], sim: float, wall0: float,
            scrape_errors: int) -> dict[str, float]:
    row: dict[str, float] = {"wall_s": time.time() - wall0, "sim_day": (sim - SIM0) / DAY}
    for name, p in daemons.items():
        row[name + "_rss"], row[name + "_fds"] = _proc(p.pid)
    with psycopg.connect(dsn) as conn:
        row["db_bytes"] = conn.execute("SELECT pg_database_size(current_database())"
                                       ).fetchone()[0]  # type: ignore[index]
        stored = dict(conn.execute("SELECT collector, sum(n_rows) FROM ingest_batch "
                                   "GROUP BY collector").fetchall())
        row["rows_in_table"] = conn.execute("SELECT count(*) FROM jobstats_delta"
                                            ).fetchone()[0]  # type: ignore[index]
        row["partitions"] = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'jobstats_delta'::regclass"
        ).fetchone()[0]  # type: ignore[index]
    row["rows_stored"] = sum(int(stored.get(n, 0)) for n in names)
    row["rows_expected"] = sum(_expected(out / f"{n}.reads") for n in names)
    row["spool_bytes"] = sum(f.stat().st_size for n in names
                             for f in (out / "state" / n / "spool").glob("*.batch"))
    row["kept_bytes"] = sum(_dir_bytes(out / "state" / n / "spool" / "kept") for n in names)
    row["errors"] = _errors(list(logs.values())) + scrape_errors
    return row


def _write(out: Path, rows: list[dict[str, float]]) -> None:
    with (out / "soak.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    _plot(out, rows)


def _plot(out: Path, rows: list[dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    day = [r["sim_day"] for r in rows]
    live = rows[:-1]  # the last sample is taken after the daemons stopped
    fig, ax = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    for key in rows[0]:
        if key.endswith("_rss"):
            ax[0][0].plot(day[:-1], [r[key] / 1e6 for r in live], label=key[:-4])
        if key.endswith("_fds"):
            ax[0][1].plot(day[:-1], [r[key] for r in live], label=key[:-4])
    ax[0][0].set_title("RSS (MB)")
    ax[0][1].set_title("open files")
    ax[1][0].plot(day, [r["db_bytes"] / 1e6 for r in rows], label="database")
    ax[1][0].plot(day, [r["kept_bytes"] / 1e6 for r in rows], label="kept batches")
    ax[1][0].plot(day, [r["spool_bytes"] / 1e6 for r in rows], label="spool")
    ax[1][0].set_title("size (MB)")
    ax[1][1].plot(day, [r["rows_expected"] / 1e6 for r in rows], label="expected", lw=4,
                  alpha=0.4)
    ax[1][1].plot(day, [r["rows_stored"] / 1e6 for r in rows], label="stored (ingest_batch)")
    ax[1][1].plot(day, [r["rows_in_table"] / 1e6 for r in rows],
                  label="in jobstats_delta (retention 7 d)")
    ax[1][1].set_title("rows (millions)")
    for a in ax.flat:
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    for a in ax[1]:
        a.set_xlabel("simulated day")
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=80)


def _judge(rows: list[dict[str, float]], names: list[str], daemons: list[str]) -> int:
    """Print the bounds; 1 when one is broken."""
    last, live = rows[-1], rows[:-1] or rows  # the last sample is after the daemons stopped
    first_day = [r for r in live if r["sim_day"] <= 1.0] or live[:1]
    ok = True
    for name in daemons:
        base = max(r[name + "_rss"] for r in first_day)
        peak = max(r[name + "_rss"] for r in live)
        fds = (min(r[name + "_fds"] for r in live), max(r[name + "_fds"] for r in live))
        grew = (peak / base - 1) * 100 if base else float("nan")
        print(f"{name}: RSS first day {base / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB "
              f"({grew:+.0f} %), open files {fds[0]:.0f}-{fds[1]:.0f}")
        ok &= bool(base) and grew <= 10
    after = [r["db_bytes"] for r in live if r["sim_day"] >= 9]
    if after:
        print(f"database after retention applies (day 9 on): {min(after) / 1e6:.0f}-"
              f"{max(after) / 1e6:.0f} MB")
    print(f"rows stored {int(last['rows_stored']):,}, expected {int(last['rows_expected']):,}; "
          f"spool at the end {int(last['spool_bytes'])} bytes; kept {last['kept_bytes'] / 1e6:.1f}"
          f" MB; errors {int(last['errors'])}")
    ok &= last["rows_stored"] == last["rows_expected"] and last["spool_bytes"] == 0
    ok &= last["errors"] == 0
    return 0 if ok else 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", help="a PostgreSQL server (default: an embedded one)")
    ap.add_argument("--db", default="soak")
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--speed", type=float, default=1440.0,
                    help="simulated seconds per wall second")
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--entries", type=int, default=300)
    ap.add_argument("--interval", type=float, default=600.0, help="simulated s between reads")
    ap.add_argument("--retention", default="7d")
    ap.add_argument("--sample", type=float, default=10.0, help="wall s between samples")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "soak"))
    ap.add_argument("--replot", action="store_true",
                    help="only draw OUT/soak.png again from OUT/soak.csv and print the bounds")
    args = ap.parse_args()
    if args.replot:
        with (Path(args.out) / "soak.csv").open() as f:
            rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
        _plot(Path(args.out), rows)
        sys.exit(_judge(rows, [k[:-4] for k in rows[0] if k.startswith("oss")
                               and k.endswith("_rss")],
                        [k[:-4] for k in rows[0] if k.endswith("_rss")]))
    sys.exit(run(args))


if __name__ == "__main__":
    main()
