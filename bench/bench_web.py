"""The web view's pages, server side (issue 22: under 1 s with 500 jobs in the period).

    .venv/bin/python bench/bench_web.py [--dsn DSN] [--jobs 500] [--running 5] [--repeat 9]

Builds a throw-away database (`--db`, default bench_web): one user's `--jobs` finished jobs
of the last 7 days with their stored figures (job_io, as `jobio attribute` leaves them: per
target, per node, a timeline at 2 minutes) and LASSi hours, `--running` running jobs with
deltas of their last 6 hours on 3 OSTs (their figures are computed on every list, as
`jobio show` does), and one finished 7-day job. Then times the WSGI app itself (no HTTP,
no cache) reading the database as the service's handler does, medians of `--repeat`:
* "My jobs" of the 7 days, whole: the read (`GET /v1/jobs`'s handler) and the rendering;
* the page of the 7-day job (5,040 timeline rows binned into the charts).
Through `jobio serve` the same handler runs in the service, plus its TLS and MUNGE
(docs/service.md: a few ms); the figures here are the part that grows with the jobs.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench.bench_show import dsn_of

USER, UID = "webuser", 4242
OSTS = ("bench-OST0000", "bench-OST0001", "bench-OST0002")


def _figures(rng: random.Random, hours: float) -> dict[str, Any]:
    rb, wb = rng.randrange(1, 1 << 34), rng.randrange(1, 1 << 33)
    rs, ws = max(1, rb >> rng.randrange(12, 21)), max(1, wb >> rng.randrange(12, 21))
    meta = rng.randrange(0, 2_000_000)
    steps = max(1, int(hours * 30))
    timeline = [[0.0, rb / steps, wb / steps, meta / steps] for _ in range(steps)]
    return {"totals": {"read_bytes": rb, "read_bytes_samples": rs, "write_bytes": wb,
                       "write_bytes_samples": ws, "open": meta // 2, "getattr": meta // 2},
            "quality": {"read_mean_size": rb // rs, "write_mean_size": wb // ws,
                        "read_kb_ops": rs * 1024 / (rb / 1024), "metadata_ops": meta,
                        "write_kb_ops": ws * 1024 / (wb / 1024)},
            "by_target": {t: {"read_bytes": rb // 3, "write_bytes": wb // 3} for t in OSTS},
            "timeline": timeline}


def build(dsn: str, n_jobs: int, n_running: int, now: float) -> None:
    from slurm_io.model import IdClass
    from slurm_io.store import migrate, partitions
    from slurm_io.store.sqlutil import ts

    rng = random.Random(22)
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
        partitions.ensure_partitions(conn, now - 8 * 86400, now + 86400, ahead_days=0)
        conn.execute("INSERT INTO host (name) VALUES ('c0001')")
        for k, name in enumerate(OSTS):
            conn.execute("INSERT INTO fs_target (name, fs, kind, idx) VALUES "
                         "(%s, 'bench', 'OST', %s)", (name, k))
        jobs, job_io, hours = [], [], []
        for i in range(n_jobs + 1):
            long = i == n_jobs  # the 7-day job
            dur = 7 * 86400 - 600 if long else rng.uniform(300, 48 * 3600)
            start = now - 7 * 86400 + 300 if long else now - rng.uniform(dur, 7 * 86400)
            key = 3_000_000 + i
            jobs.append((key, str(key), UID, USER, rng.choice(("proj", "chem", "bio")),
                         f"run-{i % 37}", ["c0001"], ts(start), ts(start + dur)))
            f = _figures(rng, dur / 3600)
            f["timeline"] = [[start + 120 * (k + 1), *row[1:]]
                             for k, row in enumerate(f["timeline"])]
            job_io.append((key, UID, json.dumps(f["totals"]), json.dumps(f["by_target"]),
                           json.dumps(f["timeline"]), json.dumps(f["quality"])))
            hours.append((ts(start + 3600 - start % 3600), key, UID, rng.uniform(-1, 3),
                          rng.uniform(-1, 3)))
        for i in range(n_running):
            key = 3_900_000 + i
            start = now - 6 * 3600
            jobs.append((key, str(key), UID, USER, "proj", f"live-{i}", ["c0001"], ts(start),
                         None))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO job (job, jobid, uid, user_name, account, name, nodes, "
                "start_time, end_time, state, source) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, "
                "%s, CASE WHEN %s::timestamptz IS NULL THEN 'RUNNING' ELSE 'COMPLETED' END, "
                "'bench')", [(*j, j[-1]) for j in jobs])
            cur.executemany("INSERT INTO job_node (host_id, job, uid, start_time, end_time) "
                            "VALUES (1, %s, %s, %s, %s)",
                            [(j[0], UID, j[7], j[8]) for j in jobs])
            cur.executemany(
                "INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                "by_target, by_node, timeline, quality) VALUES (%s, %s, true, %s, '{}', '{}', "
                "%s, '{}', %s, %s)", job_io)
            cur.executemany(
                "INSERT INTO lassi_job_hour (hour, fs, job, uid, risk_oss, risk_mds, risks) "
                "VALUES (%s, 'bench', %s, %s, %s, %s, '{}')", hours)
            rows = []
            for i in range(n_running):
                key, start = 3_900_000 + i, now - 6 * 3600
                for k in range(180):
                    t = start + 120 * (k + 1)
                    for target in (1, 2, 3):
                        rows.append((ts(t - 120), ts(t), target, int(IdClass.EXACT), key, UID,
                                     f"{key}:{UID}:c0001", 1 << 24, 16, 1 << 22, 64))
            cur.executemany(
                "INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, uid, "
                "host_id, raw_id, read_bytes, read_bytes_samples, write_bytes, "
                "write_bytes_samples) VALUES (%s, %s, %s, %s, %s, %s, 1, %s, %s, %s, %s, %s)",
                rows)
        conn.commit()


def call(app: Any, path: str, query: str = "") -> tuple[int, int]:
    out: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        out["status"] = int(status.split()[0])

    body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query,
                         "SCRIPT_NAME": "", "wsgi.input": io.BytesIO()}, start_response))
    return out["status"], len(body)


def main() -> None:
    from slurm_io.config import Config
    from slurm_io.web import pages
    from slurm_io.web.app import WebApp
    from slurm_io.web.listing import parse_query

    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn")
    ap.add_argument("--db", default="bench_web")
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--running", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    base = psycopg.conninfo.conninfo_to_dict(dsn_of(args))
    with psycopg.connect(psycopg.conninfo.make_conninfo(**base), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    base["dbname"] = args.db
    dsn = psycopg.conninfo.make_conninfo(**base)
    now = time.time()
    t = time.perf_counter()
    build(dsn, args.jobs, args.running, now)
    print(f"built: {args.jobs + 1} finished and {args.running} running jobs of {USER} in "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    app = WebApp(Config(dsn=dsn), user=USER, cache_seconds=0)
    q = parse_query({}, now=now)
    status, size = call(app, "/")  # warm: connection, imports
    assert status == 200, status
    whole, read, render = [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        doc = app.source.jobs(q.start, q.end)
        t1 = time.perf_counter()
        pages.myjobs_page(doc, q, "", USER)
        t2 = time.perf_counter()
        call(app, "/", "sort=meta")
        t3 = time.perf_counter()
        read.append(t1 - t0)
        render.append(t2 - t1)
        whole.append(t3 - t2)
    n = len(doc["jobs"])
    print(f"my jobs page, {n} jobs ({args.running} running), {size // 1024} KiB: "
          f"median {1000 * statistics.median(whole):.0f} ms (read "
          f"{1000 * statistics.median(read):.0f} ms, render "
          f"{1000 * statistics.median(render):.0f} ms), max {1000 * max(whole):.0f} ms")
    long_job = str(3_000_000 + args.jobs)
    call(app, f"/job/{long_job}")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        status, size = call(app, f"/job/{long_job}")
        times.append(time.perf_counter() - t0)
    assert status == 200, status
    print(f"job page, 7-day job (5,040 timeline rows), {size // 1024} KiB: median "
          f"{1000 * statistics.median(times):.0f} ms, max {1000 * max(times):.0f} ms")


if __name__ == "__main__":
    main()
