"""A day at a site (issue 26 item 3), on a site-density database (`bench_show.py build
--density site`, 10,000 nodes, 2 days: bench/README.md says where the prebuilt one is).

    .venv/bin/python bench/bench_site.py attribute --dsn DSN --since 2026-09-22 \
        [--stop-after S] [--copy-every S]
    .venv/bin/python bench/bench_site.py show   --dsn DSN [--sample 20]
    .venv/bin/python bench/bench_site.py top    --dsn DSN [--repeat 5]
    .venv/bin/python bench/bench_site.py daily  --dsn DSN --date 2026-09-21 [--copy-every S] \
        [--heat-from-scratch]
    .venv/bin/python bench/bench_site.py copy   --dsn DSN [--repeat 5]
    .venv/bin/python bench/bench_site.py prune  --dsn DSN

Where a person waits (`top`) the whole command is timed as a new process; where nobody waits
(`attribute`, `daily`) the wall time of the command as a new process, with its peak RSS
(VmHWM, read from /proc while it runs); `show` is server time (each query of the show
again under EXPLAIN ANALYZE, as bench_show.py run). `--copy-every S`: while the command
runs, one 2-minute interval of the whole site (~60,000 rows) is written through write_batch
every S seconds and each write is timed (the collectors' COPY while the daily work runs);
those rows are removed afterwards (their day partitions and their ingest_batch rows), so
the database stays as built. `--stop-after S`: SIGTERM after S seconds (a stopped run:
what it committed stays).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench.site_density import N_OST, node_name
from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId

JOBIO = str(Path(sys.executable).with_name("jobio"))
COPY_COLLECTOR = "site-copy-bench"


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def data_end(dsn: str) -> float:
    """The newest read of the site database (its collector's newest batch)."""
    with psycopg.connect(dsn) as conn:
        r = conn.execute("SELECT extract(epoch FROM max(read_time))::float8 FROM ingest_batch "
                         "WHERE collector <> %s", (COPY_COLLECTOR,)).fetchone()
    assert r and r[0], "no ingest_batch rows: not a site database"
    return float(r[0])


def interval_batch(seq: int, t1: float, n_nodes: int, rng: random.Random) -> Batch:
    """One 2-minute interval of the whole site: 6 rows per node (4 of a job on distinct
    OSTs, 2 of system uids), as site_density makes them."""
    items = []
    for k in range(n_nodes):
        node = node_name(k)
        job, uid = 9_000_000 + k, 1000 + k % 1500
        first = rng.randrange(N_OST)
        for i in range(4):
            rid = f"{job}:{uid}:{node}"
            n = rng.randrange(1, 2000)
            st = ByteStats(n, 4096, 1 << 20, n * 65536, None, None)
            d = Delta(f"scratch-OST{(first + 16 * i) % N_OST:04x}", rid, rid, t1 - 120, t1,
                      t1 - 5, {"write_bytes": n}, {"write_bytes": st}, 0)
            items.append((d, JobId(IdClass.EXACT, job, uid, node, None, False)))
        for uid0 in (0, 997):
            rid = f":{uid0}:{node}"
            st = ByteStats(3, 4096, 4096, 3 * 4096, None, None)
            d = Delta(f"scratch-OST{(first + 32 + uid0 % 7) % N_OST:04x}", rid, rid, t1 - 120,
                      t1, None, {"read_bytes": 3}, {"read_bytes": st}, 0)
            items.append((d, JobId(IdClass.SYSTEM, None, uid0, node, None, False)))
    return Batch(COPY_COLLECTOR, seq, t1, (), items, 0, 0, 0, 0)


class Copier(threading.Thread):
    """Writes one interval of the site every `every` seconds until stopped; times each
    write_batch (the rows are made before the clock starts)."""

    def __init__(self, dsn: str, every: float, n_nodes: int) -> None:
        super().__init__(daemon=True)
        self.dsn, self.every, self.n_nodes = dsn, every, n_nodes
        self.times: list[float] = []
        self.rows = 0
        self.stop = threading.Event()

    def run(self) -> None:
        from slurm_io.store.writer import write_batch

        rng = random.Random(7)
        t1 = data_end(self.dsn)
        with psycopg.connect(self.dsn) as conn:
            seq = 0
            while not self.stop.is_set():
                seq += 1
                b = interval_batch(seq, t1 + 120 * seq, self.n_nodes, rng)
                t = time.perf_counter()
                write_batch(conn, b)
                self.times.append(time.perf_counter() - t)
                self.rows = len(b.deltas)
                self.stop.wait(self.every)

    def report(self) -> str:
        if not self.times:
            return "copy: none written"
        return (f"copy of one interval ({self.rows:,} rows, write_batch) while it ran: "
                f"median {statistics.median(self.times):.3f} s, max {max(self.times):.3f} s "
                f"over {len(self.times)}")


def remove_copies(dsn: str) -> None:
    """Leave the database as built: the copier's days and batches go."""
    end = data_end(dsn)
    day_end = datetime.fromtimestamp(end, UTC).strftime("%Y%m%d")
    with psycopg.connect(dsn) as conn:
        for (name,) in conn.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = 'jobstats_delta'::regclass").fetchall():
            if name[len("jobstats_delta_p"):] >= day_end:
                conn.execute(f'DROP TABLE "{name}"')
        conn.execute("DELETE FROM ingest_batch WHERE collector = %s", (COPY_COLLECTOR,))
        conn.commit()


def timed_process(argv: list[str], env: dict[str, str], stop_after: float | None
                  ) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, VmHWM MB, result) of a command run as a new process; its peak RSS polled
    from /proc while it runs (ru_maxrss would carry a big parent's peak over fork)."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    hwm = 0.0
    stopped = False
    while proc.poll() is None:
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = max(hwm, int(line.split()[1]) / 1024)
        except OSError:
            pass
        if stop_after is not None and not stopped and time.perf_counter() - t > stop_after:
            proc.send_signal(signal.SIGTERM)
            stopped = True
        time.sleep(0.2)
    out, err = proc.communicate()
    return time.perf_counter() - t, hwm, subprocess.CompletedProcess(argv, proc.returncode,
                                                                     out, err)


def _with_copier(args: argparse.Namespace, work: callable) -> None:  # type: ignore[valid-type]
    copier = Copier(args.dsn, args.copy_every, args.nodes) if args.copy_every else None
    if copier:
        copier.start()
    try:
        work()
    finally:
        if copier:
            copier.stop.set()
            copier.join()
            print(copier.report(), flush=True)
            remove_copies(args.dsn)


def first_day(dsn: str) -> float:
    """The start of the site database's first day (its oldest partition with rows)."""
    with psycopg.connect(dsn) as conn:
        r = conn.execute("SELECT extract(epoch FROM min(read_time))::float8 FROM ingest_batch "
                         "WHERE collector <> %s", (COPY_COLLECTOR,)).fetchone()
    assert r and r[0]
    return float(r[0]) // 86400 * 86400


def nodes(args: argparse.Namespace) -> None:
    with psycopg.connect(args.dsn) as conn:
        (n,) = conn.execute("SELECT count(*) FROM host WHERE name ~ '^c[0-9]+$'").fetchone() \
            or (0,)
    print(f"{n} nodes")


def attribute(args: argparse.Namespace) -> None:
    if args.day:  # the backlog of the last day, or of every day
        t = data_end(args.dsn) - 86400 if args.day == "last" else first_day(args.dsn)
        args.since = _stamp(t // 86400 * 86400)
    if args.reset:  # their stored figures go: the whole backlog is pending
        with psycopg.connect(args.dsn) as conn:
            since = datetime.fromisoformat(args.since).replace(tzinfo=UTC)
            for table in ("job_io_hour", "job_io"):
                conn.execute(f"DELETE FROM {table} WHERE job IN (SELECT job FROM job WHERE "
                             "end_time >= %s)", (since,))
            conn.commit()

    def work() -> None:
        with psycopg.connect(args.dsn) as conn:
            (before,) = conn.execute("SELECT count(*) FROM job_io").fetchone() or (0,)
        wall, hwm, r = timed_process([JOBIO, "attribute", "--since", args.since],
                                     {"SLURM_IO_DSN": args.dsn}, args.stop_after)
        with psycopg.connect(args.dsn) as conn:
            (after,) = conn.execute("SELECT count(*) FROM job_io").fetchone() or (0,)
        print(r.stdout.strip(), r.stderr.strip()[-500:])
        print(f"jobio attribute --since {args.since}: {wall:.1f} s wall, VmHWM {hwm:.0f} MB, "
              f"exit {r.returncode}; job_io rows {before:,} -> {after:,} "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)
    _with_copier(args, work)


def daily(args: argparse.Namespace) -> None:
    """`jobio daily --recompute` as a new process. The day's heat-map hours (sql/0024) are
    made by the first run and read by the next ones (what a site sees: `jobio db pack` makes
    them hour by hour); `--heat-from-scratch` deletes them first, to time their making."""
    if args.heat_from_scratch:
        with psycopg.connect(args.dsn) as conn:
            if conn.execute("SELECT to_regclass('heat_hour')").fetchone() != (None,):
                d0 = datetime.strptime(args.date, "%Y-%m-%d").replace(tzinfo=UTC)
                n = conn.execute("DELETE FROM heat_hour WHERE hour >= %s AND hour < "
                                 "%s + interval '1 day'", (d0, d0)).rowcount
                print(f"{n} heat-map hour(s) of {args.date} deleted", flush=True)

    def work() -> None:
        with tempfile.TemporaryDirectory() as out:
            wall, hwm, r = timed_process([JOBIO, "daily", "--date", args.date, "--recompute",
                                          "--out", out], {"SLURM_IO_DSN": args.dsn}, None)
        print(r.stdout.strip(), r.stderr.strip()[-1500:])
        print(f"jobio daily --recompute --date {args.date}: {wall:.1f} s wall, VmHWM "
              f"{hwm:.0f} MB, exit {r.returncode} (load {os.getloadavg()[0]:.2f})", flush=True)
    _with_copier(args, work)


def prune(args: argparse.Namespace) -> None:
    """`jobio db prune` of one day as big as the first: a copy of the first day's rows a
    day earlier is made (a table filled by the server, then ATTACHed), and the retention
    set so that only that day goes."""
    first = first_day(args.dsn)
    day0 = datetime.fromtimestamp(first - 86400, UTC)
    name = f"jobstats_delta_p{day0:%Y%m%d}"
    src = f"jobstats_delta_p{datetime.fromtimestamp(first, UTC):%Y%m%d}"
    t = time.perf_counter()
    with psycopg.connect(args.dsn) as conn:
        cols = [r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'jobstats_delta'::regclass "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum")]
        shifted = {"ts_start", "ts_end", "last_update", "entry_start"}
        sel = ", ".join(f"{c} - interval '1 day'" if c in shifted else c for c in cols)
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        conn.execute(f'CREATE TABLE "{name}" (LIKE jobstats_delta INCLUDING DEFAULTS '
                     "INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)")
        conn.execute(f'INSERT INTO "{name}" ({", ".join(cols)}) SELECT {sel} FROM "{src}"')
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(f"ALTER TABLE jobstats_delta ATTACH PARTITION \"{name}\" FOR VALUES "
                     "FROM (%s) TO (%s)" % (f"'{day0:%Y-%m-%d} 00:00+00'",
                                            f"'{datetime.fromtimestamp(first, UTC):%Y-%m-%d}"
                                            " 00:00+00'"))
        conn.commit()
        (rows,) = conn.execute(f'SELECT count(*) FROM "{name}"').fetchone() or (0,)
    print(f"a day to prune made: {rows:,} rows in {time.perf_counter() - t:.0f} s", flush=True)
    days = int((time.time() - first) // 86400)  # older than this: only day0 ends before
    wall, _hwm, r = timed_process([JOBIO, "db", "prune", "--older-than", f"{days}d",
                                   "--results-older-than", "36500d"],
                                  {"SLURM_IO_DSN": args.dsn}, None)
    print(r.stdout.strip(), r.stderr.strip()[-500:])
    assert r.returncode == 0 and f"dropped {name}" in r.stdout, r
    print(f"jobio db prune of a day: {wall:.2f} s wall ({rows:,} rows; load "
          f"{os.getloadavg()[0]:.2f})")


def copy(args: argparse.Namespace) -> None:
    copier = Copier(args.dsn, 0.0, args.nodes)
    copier.start()
    while len(copier.times) < args.repeat and copier.is_alive():
        time.sleep(0.2)
    copier.stop.set()
    copier.join()
    print(copier.report())
    remove_copies(args.dsn)


def show(args: argparse.Namespace) -> None:
    """Server time of the show of jobs of both days, stored figures or not yet attributed."""
    from bench.bench_show import _explained_ms, _LoggingCursor
    from slurm_io.jobs.store import find_jobs
    from slurm_io.report.figures import figures as job_report

    with psycopg.connect(args.dsn) as conn:
        stored = conn.execute("SELECT j.job_raw, false FROM job j JOIN job_io USING (job) "
                              "ORDER BY random() LIMIT %s", (args.sample,)).fetchall()
        any_age = conn.execute("SELECT job_raw, true FROM job WHERE end_time IS NOT NULL "
                               "ORDER BY random() LIMIT %s", (args.sample,)).fetchall()
    for kind, rows in (("stored", stored), ("not attributed", any_age)):
        server = []
        with psycopg.connect(args.dsn, cursor_factory=_LoggingCursor) as conn:
            for job, live in rows:
                (info,) = find_jobs(conn, str(job))
                if live:  # as if never attributed: its stored figures out of sight
                    conn.execute("DELETE FROM job_io WHERE job = %s", (info.job,))
                _LoggingCursor.log = []
                job_report(conn, info)
                queries, _LoggingCursor.log = _LoggingCursor.log, None
                server.append(sum(_explained_ms(conn, q, p) for q, p in queries))
                conn.rollback()  # nothing kept: the database stays as it was
        if server:
            print(f"show server time, {kind}: median {statistics.median(server):.2f} ms, max "
                  f"{max(server):.2f} ms over {len(server)} jobs (load "
                  f"{os.getloadavg()[0]:.2f})", flush=True)


def top(args: argparse.Namespace) -> None:
    end = data_end(args.dsn)
    for by in ("job", "user"):
        walls = []
        for k in range(args.repeat):
            at = end - 86400 + 3600 * (1 + 5 * k % 22)
            t = time.perf_counter()
            r = subprocess.run([JOBIO, "top", "--once", "-g", by, "--at", _stamp(at)],
                               env={**os.environ, "SLURM_IO_DSN": args.dsn},
                               capture_output=True, text=True, check=True)
            walls.append(time.perf_counter() - t)
            assert r.stdout.strip(), r
        print(f"jobio top --once -g {by} (new process): median {statistics.median(walls):.2f}"
              f" s, max {max(walls):.2f} s over {len(walls)} (load {os.getloadavg()[0]:.2f})",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("attribute", "show", "top", "daily", "copy", "prune",
                                     "nodes"))
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--nodes", type=int, default=10_000, help="copy: nodes of the site")
    ap.add_argument("--since", default="2026-09-22", help="attribute: --since")
    ap.add_argument("--date", default="2026-09-21", help="daily: the day")
    ap.add_argument("--day", choices=("last", "all"), help="attribute: the backlog of the "
                    "last day or of all days (instead of --since)")
    ap.add_argument("--reset", action="store_true", help="attribute: delete the stored "
                    "figures of the jobs it will attribute first")
    ap.add_argument("--stop-after", type=float, help="attribute: SIGTERM after this many s")
    ap.add_argument("--copy-every", type=float, help="attribute, daily: write an interval "
                    "every this many seconds while the command runs")
    ap.add_argument("--heat-from-scratch", action="store_true", help="daily: delete the "
                    "day's heat-map hours first (the run makes them all)")
    ap.add_argument("--sample", type=int, default=20, help="show: jobs of each kind")
    ap.add_argument("--repeat", type=int, default=5, help="top, copy: runs")
    args = ap.parse_args()
    {"attribute": attribute, "show": show, "top": top, "daily": daily, "copy": copy,
     "prune": prune, "nodes": nodes}[args.what](args)


if __name__ == "__main__":
    main()
