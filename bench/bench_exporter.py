"""`jobio exporter` scrape time and series count, and `jobio alerts` latency.

    .venv/bin/python bench/bench_show.py build          # once: the 30-day, 2,000-node database
    .venv/bin/python bench/bench_exporter.py scrape [--dsn DSN] [--repeat 20] [--top-jobs 20]
    .venv/bin/python bench/bench_exporter.py latency [--runs 5]

`scrape` serves the exporter over HTTP on loopback (the real prometheus_client server) against
the benchmark database, with its clock set to T0 + `--day` (15) days + 12 h (mid-month; the data is
from the past; live, the newest read is at most one interval old), and times GET /metrics as
Prometheus does it: first (cold) and then `--repeat` times; it counts the series (sample
lines) of a scrape and how many each family has.

`latency` measures what a user waits for a warning: a storming job's collector interval is
written through the real ingest path (write_batch) into a fresh database of the bench
server, then `jobio alerts` runs as a new process (as its systemd timer starts it), and the
time from the batch's COMMIT to the SMTP server's acceptance of the mail (an aiosmtpd server
on loopback) is the processing latency. With the timer every collector interval, the wait is
at most that plus the timer period.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import make_conninfo

from bench.bench_show import T0, dsn_of
from slurm_io.model import Batch, Delta, IdClass, JobId, JobRecord

JOBIO = str(Path(sys.executable).with_name("jobio"))


def scrape(args: argparse.Namespace) -> None:
    from slurm_io.exporter import metrics
    from slurm_io.exporter.server import DatabaseCollector, serve

    dsn = args.dsn or make_conninfo(dsn_of(args), dbname="bench_show")
    at = T0 + args.day * 86400 + 12 * 3600 + 30  # mid-month: a busy read
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT max(ts_end) FROM jobstats_delta WHERE ts_end <= %s "
                           "AND ts_end > %s", (datetime.fromtimestamp(at, UTC),
                                                datetime.fromtimestamp(at - 600, UTC))
                           ).fetchone()
        assert row and row[0] is not None, "no data: run bench_show.py build first"
        newest = row[0].timestamp()
        n_rows = conn.execute("SELECT count(*) FROM jobstats_delta WHERE ts_end > %s "
                              "AND ts_end <= %s", (row[0] - timedelta(seconds=108), row[0])
                              ).fetchone()
    settings = metrics.Settings(top_jobs=args.top_jobs)
    collector = DatabaseCollector(lambda: psycopg.connect(dsn), interval=120.0,
                                  settings=settings, clock=lambda: newest + 60)
    server, _thread = serve(collector, "127.0.0.1", 0)
    port = server.server_port
    url = f"http://127.0.0.1:{port}/metrics"

    def get() -> tuple[float, str]:
        t = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as r:
            body = r.read().decode()
        return time.perf_counter() - t, body

    cold, body = get()
    times = [get()[0] for _ in range(args.repeat)]
    server.shutdown()
    samples = [ln for ln in body.splitlines() if ln and not ln.startswith("#")]
    fams = Counter(ln.split("{", 1)[0].split(" ", 1)[0] for ln in samples)
    print(f"newest interval: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(newest))}, "
          f"{n_rows[0] if n_rows else '?'} delta rows in it")
    print(f"scrape (HTTP GET /metrics, top_jobs={args.top_jobs}): cold {cold:.3f} s, "
          f"then median {statistics.median(times):.3f} s, max {max(times):.3f} s "
          f"over {len(times)}; {len(body):,} bytes")
    print(f"series: {len(samples)}")
    for name, n in fams.most_common():
        print(f"  {n:6d}  {name}")


def _storm_batch(job: int, uid: int, t: float, seq: int) -> Batch:
    rid = f"{job}:{uid}:b001"
    d = Delta("bench-MDT0000", rid, rid, t - 120, t, t - 1,
              {"open": 400_000, "close": 400_000, "mkdir": 50_000, "getattr": 600_000}, {}, 0)
    return Batch("bench-mds", seq, t, ("bench-MDT0000",),
                 [(d, JobId(IdClass.EXACT, job, uid, "b001", None, False))], 1, 0, 0, 0)


def latency(args: argparse.Namespace) -> None:
    from aiosmtpd.controller import Controller

    from slurm_io.jobs.store import upsert_jobs
    from slurm_io.store import migrate
    from slurm_io.store.writer import write_batch

    accepted: list[float] = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # aiosmtpd's hook
            accepted.append(time.time())
            return "250 OK"

    base = dsn_of(args)
    name = f"alert_bench_{os.getpid()}"
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    dsn = make_conninfo(base, dbname=name)
    with socket.socket() as s:  # a free port (aiosmtpd checks its own with a connection)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctl = Controller(Handler(), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        with psycopg.connect(dsn) as conn:
            migrate.upgrade(conn)
        with tempfile.TemporaryDirectory() as tmp:
            cfg = Path(tmp) / "c.toml"
            cfg.write_text(f'[mail]\nhost = "127.0.0.1"\nport = {port}\ndomain = '
                           '"example.org"\nslurm_lookup = false\n[alerts]\n'
                           'admin = "admin@example.org"\ndaily_cap = 1000\n')
            waits, check_times = [], []
            for i in range(args.runs):
                job, uid, now = 9_000_000 + i, 5000 + i, time.time()
                with psycopg.connect(dsn) as conn:
                    upsert_jobs(conn, [JobRecord(job, str(job), None, None, uid, f"b{uid}",
                                                 "bench", "batch", "storm", ("b001",), now - 900,
                                                 now - 600, None, "RUNNING", None, "/tmp",
                                                 None, "bench")])
                    conn.commit()
                    write_batch(conn, _storm_batch(job, uid, now, i + 1))  # commits
                    landed = time.time()
                n = len(accepted)
                t0 = time.time()
                r = subprocess.run([JOBIO, "--config", str(cfg), "--dsn", dsn, "alerts"],
                                   capture_output=True, text=True, timeout=120)
                check_times.append(time.time() - t0)
                assert r.returncode == 0 and len(accepted) == n + 1, (r.stdout, r.stderr)
                waits.append(accepted[-1] - landed)
                print(f"run {i + 1}: data landed -> mail accepted {waits[-1]:.3f} s "
                      f"({r.stdout.strip()})")
            print(f"alert latency (data COMMIT -> SMTP 250, `jobio alerts` started right "
                  f"after): median {statistics.median(waits):.3f} s, max {max(waits):.3f} s; "
                  f"the command's wall time median {statistics.median(check_times):.3f} s")
            print("with the systemd timer every 120 s: at most ~120 s + that")
    finally:
        ctl.stop()
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scrape")
    s.add_argument("--dsn")
    s.add_argument("--repeat", type=int, default=20)
    s.add_argument("--top-jobs", type=int, default=20)
    s.add_argument("--day", type=int, default=15, help="Day of the 30 whose noon is read.")
    lt = sub.add_parser("latency")
    lt.add_argument("--dsn")
    lt.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    {"scrape": scrape, "latency": latency}[args.cmd](args)


if __name__ == "__main__":
    main()
