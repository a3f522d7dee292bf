"""`jobio show` and batch attribution on a 30-day, 2,000-node, ~50k-job database.

    .venv/bin/python bench/bench_show.py build [--jobs 50000] [--days 30] [--dsn DSN]
    .venv/bin/python bench/bench_show.py run   [--dsn DSN]

`build` generates the cluster's job records and its deltas (exact ids, ~12 % job-missing
`:uid:host` entries recovered by attribution, login/system load) and writes them through the
real ingest path (write_batch, binary COPY into the partitioned table). Without --dsn it uses a
persistent embedded PostgreSQL in /var/tmp/slurm-io-bench (kept between build and run).
`run` times `jobio show --json` of random jobs (server time of its queries, and wall time of
the whole command including Python start-up), attribution of 1,000 finished jobs in one
batch, and prints the EXPLAIN (ANALYZE, BUFFERS) plans of the main queries.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench import site_density
from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId, JobRecord

STATE = Path("/var/tmp/slurm-io-bench")
N_NODES = 2000
PERIOD = 120.0
T0 = 1_790_000_000.0  # 2026-09-21


# The server settings of the site-density database (issue 26 measured with 4 GB of
# shared_buffers; half of that here: the 2-core, 23 GB box is shared with other sessions)
SITE_SETTINGS = {"shared_buffers": "2GB", "max_wal_size": "8GB", "work_mem": "64MB"}


def dsn_of(args: argparse.Namespace) -> str:
    if args.dsn:
        return args.dsn
    from slurm_io.store.embedded import EmbeddedPostgres

    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o755)
    server = EmbeddedPostgres(state)
    dsn = server.ensure()
    if args.density == "site":  # a larger server for the large database, set once
        with psycopg.connect(dsn, autocommit=True) as conn:
            have = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in SITE_SETTINGS}
            if have != SITE_SETTINGS:
                for k, v in SITE_SETTINGS.items():
                    conn.execute(f"ALTER SYSTEM SET {k} = '{v}'")
                restart = True
            else:
                restart = False
        if restart:
            server.stop()
            dsn = server.ensure()
    return dsn


def make_jobs(n_jobs: int, days: int, rng: random.Random, n_nodes: int = N_NODES
              ) -> list[JobRecord]:
    jobs = []
    span = days * 86400
    for i in range(n_jobs):
        uid = 1000 + rng.randrange(300)
        n = rng.choice((1, 1, 1, 2, 2, 4, 8, 16))
        first = rng.randrange(n_nodes - n)
        nodes = tuple(f"c{k:04d}" for k in range(first, first + n))
        dur = min(48 * 3600, max(300, rng.lognormvariate(8.3, 1.0)))
        start = T0 + rng.random() * (span - dur)
        jobs.append(JobRecord(2_000_000 + i, str(2_000_000 + i), None, None, uid, f"u{uid}",
                              "acct", "batch", f"job{i % 97}", nodes, start - 60, start,
                              start + dur, "COMPLETED", "0:0", f"/home/u{uid}", None, "bench"))
    return jobs


def make_deltas(jobs: list[JobRecord], rng: random.Random) -> list[tuple[Delta, JobId]]:
    out = []
    for j in jobs:
        assert j.start is not None and j.end is not None
        t = (j.start // PERIOD + 1) * PERIOD
        while t <= j.end + PERIOD:
            for node in j.nodes:
                if rng.random() < 0.55:
                    ost = f"scratch-OST{rng.randrange(16):04x}"
                    missing = rng.random() < 0.12
                    rid = f":{j.uid}:{node}" if missing else f"{j.job}:{j.uid}:{node}"
                    nreq = rng.randrange(1, 2000)
                    size = rng.choice((4096, 65536, 1 << 20, 4 << 20))
                    st = ByteStats(nreq, size, size, nreq * size, nreq * size * size, None)
                    kind = "write_bytes" if rng.random() < 0.5 else "read_bytes"
                    d = Delta(ost, rid, rid, t - PERIOD, t, t - rng.random() * PERIOD,
                              {kind: nreq, "punch": rng.randrange(2)}, {kind: st}, 0)
                    jid = (JobId(IdClass.JOB_MISSING, None, j.uid, node, None, False) if missing
                           else JobId(IdClass.EXACT, j.job, j.uid, node, None, False))
                    out.append((d, jid))
                if rng.random() < 0.15:
                    rid = f"{j.job}:{j.uid}:{node}"
                    d = Delta("scratch-MDT0000", rid, rid, t - PERIOD, t, t - 5,
                              {"open": rng.randrange(1, 500), "close": rng.randrange(1, 500),
                               "getattr": rng.randrange(1, 900)}, {}, 0)
                    out.append((d, JobId(IdClass.EXACT, j.job, j.uid, node, None, False)))
            t += PERIOD
    # login-node traffic of users, outside jobs
    for _ in range(len(out) // 10):
        uid = 1000 + rng.randrange(300)
        t = T0 + rng.randrange(int(30 * 86400 / PERIOD)) * PERIOD
        rid = f"rsync.{uid}"
        d = Delta("scratch-OST0000", rid, rid, t - PERIOD, t, None,
                  {"read_bytes": 10}, {"read_bytes": ByteStats(10, 4096, 1 << 20, 1 << 22,
                                                               None, None)}, 0)
        out.append((d, JobId(IdClass.EXE, None, uid, None, "rsync", False)))
    out.sort(key=lambda x: x[0].t1)
    return out


def build(args: argparse.Namespace) -> None:
    from slurm_io.jobs.store import upsert_jobs
    from slurm_io.store import migrate
    from slurm_io.store.writer import write_batch

    dsn = dsn_of(args)
    base = psycopg.conninfo.conninfo_to_dict(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    base["dbname"] = args.db
    dsn = psycopg.conninfo.make_conninfo(**base)
    rng = random.Random(1)
    t = time.time()
    if args.density == "site":
        jobs = site_density.make_jobs(args.nodes or 10_000, args.days,
                                           site_density.site_t0(T0), rng)
    else:
        jobs = make_jobs(args.jobs, args.days, rng, args.nodes or N_NODES)
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
        for i in range(0, len(jobs), 10_000):
            upsert_jobs(conn, jobs[i:i + 10_000])
        conn.commit()
    print(f"{len(jobs)} jobs stored in {time.time() - t:.1f} s", flush=True)
    if args.density == "site":
        t = time.time()
        steps = site_density.fill(dsn, args.nodes or 10_000, args.days,
                                   site_density.site_t0(T0))
        with psycopg.connect(dsn) as conn:
            total = conn.execute("SELECT sum(reltuples)::bigint FROM pg_class WHERE relname "
                                 "LIKE 'jobstats_delta_p%' AND relkind = 'r'").fetchone()[0]
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        print("; ".join(f"{k} {v:.0f} s" for k, v in sorted(steps.items())))
        print(f"{total:,} delta rows in {time.time() - t:.0f} s; database {size / 1e9:.2f} GB")
        print(f"dsn: {dsn}")
        return
    total = 0
    t = time.time()
    with psycopg.connect(dsn) as conn:
        seq = 0
        for chunk_start in range(0, len(jobs), 2000):
            deltas = make_deltas(jobs[chunk_start:chunk_start + 2000], rng)
            for i in range(0, len(deltas), 20_000):
                part = deltas[i:i + 20_000]
                seq += 1
                write_batch(conn, Batch("bench", seq, part[-1][0].t1, (), part, 0, 0, 0, 0))
                total += len(part)
            print(f"  {total:,} rows, {total / (time.time() - t):,.0f} rows/s", flush=True)
        conn.execute("ANALYZE")
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    print(f"{total:,} delta rows in {time.time() - t:.0f} s; database {size / 1e9:.2f} GB")
    print(f"dsn: {dsn}")


def run(args: argparse.Namespace) -> None:
    from slurm_io.attribute.batch import attribute_jobs
    from slurm_io.attribute.stored import pending_jobs
    from slurm_io.jobs.store import find_jobs
    from slurm_io.store import migrate

    base = psycopg.conninfo.conninfo_to_dict(dsn_of(args))
    base["dbname"] = args.db
    dsn = psycopg.conninfo.make_conninfo(**base)
    with psycopg.connect(dsn) as conn:
        n_jobs = conn.execute("SELECT count(*) FROM job").fetchone()[0]
        n_rows = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()[0]
        # Slurm ids (what a person types) and the row keys job_io holds, of the same jobs
        rows = conn.execute("SELECT job_raw, job FROM job WHERE end_time IS NOT NULL "
                            "ORDER BY random() LIMIT %s", (args.sample,)).fetchall()
    sample = [r[0] for r in rows]
    keys = [r[1] for r in rows]
    print(f"database: {n_jobs:,} jobs, {n_rows:,} delta rows")
    with psycopg.connect(dsn) as conn:  # finished jobs are shown from the stored results
        migrate.upgrade(conn)
        attribute_jobs(conn, [i for job in sample for i in find_jobs(conn, str(job))])
    # the show of a finished job from its stored figures, in process, warm: the whole call
    # (client and server), and the server's part: each query it ran, again under EXPLAIN
    # ANALYZE (planning + execution; what the server spends on the call, less the sending)
    from slurm_io.report.figures import figures as job_report

    inproc, server, n_queries = [], [], 0
    with psycopg.connect(dsn, cursor_factory=_LoggingCursor) as conn:
        for job in sample:
            _LoggingCursor.log = []
            t = time.perf_counter()
            (info,) = find_jobs(conn, str(job))
            job_report(conn, info)
            inproc.append(time.perf_counter() - t)
            queries, _LoggingCursor.log = _LoggingCursor.log, None
            server.append(sum(_explained_ms(conn, q, p) for q, p in queries) / 1000)
            n_queries = len(queries)
    print(f"show of a finished job (in process, warm): median "
          f"{statistics.median(inproc) * 1000:.1f} ms, max {max(inproc) * 1000:.1f} ms over "
          f"{len(inproc)} jobs; server time ({n_queries} queries): median "
          f"{statistics.median(server) * 1000:.2f} ms, max {max(server) * 1000:.2f} ms "
          f"(load {os.getloadavg()[0]:.2f})")
    wall = []
    env = {**os.environ, "SLURM_IO_DSN": dsn}
    jobio = str(Path(sys.executable).with_name("jobio"))
    for job in sample[:args.processes]:
        t = time.perf_counter()
        subprocess.run([jobio, "show", "--json", str(job)], env=env, check=True,
                       capture_output=True)
        wall.append(time.perf_counter() - t)
    print(f"jobio show --json (wall, new process): median {statistics.median(wall) * 1000:.0f}"
          f" ms, max {max(wall) * 1000:.0f} ms")
    with psycopg.connect(dsn) as conn:
        conn.execute("DELETE FROM job_io WHERE job <> ALL(%s)", (keys,))
        conn.commit()
        jobs = pending_jobs(conn, 0, args.batch)
        t = time.perf_counter()
        n, _ = attribute_jobs(conn, jobs)
        print(f"attribution of {n} finished jobs in one batch: {time.perf_counter() - t:.2f} s")
        (info,) = find_jobs(conn, str(sample[0]))
        j = info.window
        for label, q, params in (
            ("direct", "SELECT * FROM jobstats_delta d WHERE d.job = %s AND d.ts_end >= %s "
             "AND d.ts_end <= %s", (j.job, datetime.fromtimestamp(j.start - 86400, UTC),
                                    datetime.fromtimestamp(j.end + 86400, UTC))),
            ("recovered", "SELECT * FROM jobstats_delta d WHERE d.host_id = ANY(SELECT host_id "
             "FROM host WHERE name = ANY(%s)) AND d.uid = %s AND d.id_class = 5 AND "
             "d.ts_end > %s AND d.ts_start < %s AND d.ts_end < %s",
             (list(j.nodes), j.uid, datetime.fromtimestamp(j.start, UTC),
              datetime.fromtimestamp(j.end, UTC), datetime.fromtimestamp(j.end + 86400, UTC))),
        ):
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + q, params).fetchall()
            print(f"\nEXPLAIN {label}:")
            print("\n".join(r[0] for r in plan))


def batch(args: argparse.Namespace) -> None:
    """Attribution of the first `--batch` finished jobs in one batch (`jobio attribute`'s
    path), timed `--repeat` times (their stored figures deleted before each run), with the
    server's share (pg_stat_statements is not needed: the backend's CPU from /proc)."""
    from slurm_io.attribute.batch import attribute_jobs
    from slurm_io.attribute.stored import pending_jobs

    base = psycopg.conninfo.conninfo_to_dict(dsn_of(args))
    base["dbname"] = args.db
    dsn = psycopg.conninfo.make_conninfo(**base)
    with psycopg.connect(dsn) as conn:
        conn.execute("DELETE FROM job_io")
        conn.commit()
        jobs = pending_jobs(conn, 0, args.batch)
        ids = [j.job for j in jobs]
        for _ in range(args.repeat):
            conn.execute("DELETE FROM job_io WHERE job = ANY(%s)", (ids,))
            conn.execute("DELETE FROM job_io_hour WHERE job = ANY(%s)", (ids,))
            conn.commit()
            pid = conn.info.backend_pid
            cpu0 = _proc_cpu(pid)
            t, c = time.perf_counter(), time.process_time()
            if args.profile:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                n, _ = prof.runcall(attribute_jobs, conn, jobs)
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            else:
                n, _ = attribute_jobs(conn, jobs)
            wall, client = time.perf_counter() - t, time.process_time() - c
            server = _proc_cpu(pid) - cpu0 if cpu0 is not None else float("nan")
            load = os.getloadavg()[0]
            print(f"attribution of {n} finished jobs in one batch: {wall:.2f} s wall, "
                  f"client CPU {client:.2f} s, server CPU {server:.2f} s (load {load:.2f})",
                  flush=True)


class _LoggingCursor(psycopg.Cursor):
    """Records the queries it runs while `log` is a list (the show's server time)."""

    log: list[tuple[Any, Any]] | None = None

    def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
        if _LoggingCursor.log is not None:
            _LoggingCursor.log.append((query, params))
        return super().execute(query, params, **kw)


def _explain_logged(conn: psycopg.Connection, queries: list[tuple[Any, Any]]) -> None:
    """Print EXPLAIN (ANALYZE, BUFFERS) of each logged query (the plans a command used)."""
    for k, (query, params) in enumerate(queries, 1):
        text = query if isinstance(query, str) else query.as_string(conn)
        if not text.lstrip().upper().startswith(("SELECT", "WITH")):
            conn.execute(text, params)  # a setting the queries after it run under
            continue
        plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + text, params).fetchall()
        print(f"\nEXPLAIN query {k} of {len(queries)}: {' '.join(text.split())[:100]}")
        print("\n".join(r[0] for r in plan))


def _explained_ms(conn: psycopg.Connection, query: Any, params: Any) -> float:
    """Planning + execution time of `query` by EXPLAIN ANALYZE, in ms."""
    total = 0.0
    text = query if isinstance(query, str) else query.as_string(conn)
    for (line,) in conn.execute("EXPLAIN (ANALYZE) " + text, params):
        if line.startswith(("Planning Time:", "Execution Time:")):
            total += float(line.split(":")[1].split()[0])
    return total


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds of a local process (the PostgreSQL backend), or None (remote server)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("build", "run", "batch"))
    ap.add_argument("--jobs", type=int, default=50_000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--dsn")
    ap.add_argument("--nodes", type=int, help="build: compute nodes (default 2,000; "
                    "10,000 with --density site)")
    ap.add_argument("--density", choices=("sparse", "site"), default="sparse",
                    help="build: sparse (one target per busy node and interval, quick) or "
                    "site (Puhti's counts, bench/site_density.py; --jobs is then derived)")
    ap.add_argument("--state", default=str(STATE),
                    help="the embedded server's directory when no --dsn (kept between runs)")
    ap.add_argument("--db", default="bench_show",
                    help="database name on that server (a copy: CREATE DATABASE x TEMPLATE "
                    "bench_show, to leave a shared build untouched)")
    ap.add_argument("--batch", type=int, default=1000, help="batch: jobs per batch")
    ap.add_argument("--repeat", type=int, default=1, help="batch: runs")
    ap.add_argument("--profile", action="store_true", help="batch: cProfile the run")
    ap.add_argument("--sample", type=int, default=30, help="run: jobs shown in process")
    ap.add_argument("--processes", type=int, default=15,
                    help="run: `jobio show` runs as new processes")
    args = ap.parse_args()
    {"build": build, "run": run, "batch": batch}[args.what](args)


if __name__ == "__main__":
    main()
