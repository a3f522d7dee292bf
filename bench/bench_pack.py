"""The packed tier (sql/0025, `jobio db pack`): bytes per delta, pack rate, longest COPY wait.

    .venv/bin/python bench/bench_pack.py [--nodes 200] [--hours 24] [--dsn DSN] [--db NAME]

Builds a site-density database (issue 26: the Puhti counts of ../shared/LUSTRE-JOBSTATS.md --
~15 entries with a job per compute node per snapshot, of which 6-15 change per 2-minute
interval, plus entries without a job id: `:uid:host` ones whose job id was lost, system uids,
login-node `%e.%u` ones; 64 OSTs + 1 MDT; jobs of lognormal length back to back on each node)
through the real ingest path (write_batch, binary COPY), one batch per interval. Then:

- the hot tier's bytes per delta (jobstats_delta's partitions: heap + TOAST + indexes);
- `tiers_pack.pack` of every hour (a day's hours in one run; timed: deltas per second),
  while a concurrent writer COPYs one interval of new deltas after another with
  `lock_timeout = 1s` (a COPY that waited longer would fail: the count of such failures is
  printed, and each COPY's wall time);
- the packed tier's bytes per delta, and the 90-day projection for a 10,000-node site at
  this density (bytes per delta x deltas per node per day x 10,000 x 90).

Without --dsn a throw-away embedded PostgreSQL is made under /tmp.

    .venv/bin/python bench/bench_pack.py --from-dsn SITE_DSN --day 2026-09-21 --sample 10
        --nodes 10000 --dsn DSN

The same on a real or prebuilt site's deltas instead of generated ones (the budget's
`--site` figures): one entry in SAMPLE of the source's DAY (hot rows, by a hash of raw_id,
so that each kept entry keeps all of its intervals: the day's arrays are as long as at the
site) is copied into the bench database, which is then packed as above. The projection
uses the source's whole day (its deltas / --nodes, the source's node count), and the
concurrent writer COPYs into the next day, as collectors do while last night's day is
packed (its rows stay out of the packed figures).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId, JobRecord

PERIOD = 120.0
T0 = 1_790_035_200.0  # 2026-09-22 00:00 UTC
N_OST = 64
SIZES = (4096, 65536, 1 << 20, 4 << 20)
SITE_NODES = 10_000


def _stats(rng: random.Random, n: int, lo: int, hi: int) -> ByteStats:
    """One interval of a byte counter: n requests between the entry's lo and hi sizes."""
    sizes = [rng.choice((lo, hi, hi, hi)) for _ in range(min(n, 8))]
    mean = sum(sizes) / len(sizes)
    total = int(n * mean)
    return ByteStats(n, lo, hi, total, int(n * mean * mean), None)


class Node:
    """One compute node's jobs, back to back, and the entries its current job touches."""

    def __init__(self, name: str, rng: random.Random, next_job: list[int]) -> None:
        self.name, self.rng, self.next_job = name, rng, next_job
        self.job = 0
        self.until = 0.0
        self.uid = 0
        self.osts: list[int] = []
        self.sizes: dict[int, tuple[int, int]] = {}

    def advance(self, t: float, jobs: list[JobRecord]) -> None:
        if t < self.until:
            return
        rng = self.rng
        self.job = self.next_job[0]
        self.next_job[0] += 1
        self.uid = 1000 + rng.randrange(400)
        dur = min(48 * 3600.0, max(600.0, rng.lognormvariate(8.3, 1.0)))
        start, self.until = t - PERIOD, t - PERIOD + dur
        self.osts = rng.sample(range(N_OST), rng.randrange(8, 20))
        self.sizes = {o: (rng.choice(SIZES[:2]), rng.choice(SIZES[2:])) for o in self.osts}
        jobs.append(JobRecord(self.job, str(self.job), None, None, self.uid, f"u{self.uid}",
                              "acct", "batch", "site", (self.name,), start - 60, start,
                              self.until, "COMPLETED", "0:0", f"/home/u{self.uid}", None,
                              "site"))

    def deltas(self, t: float) -> list[tuple[Delta, JobId]]:
        """The entries of this node that changed in (t - PERIOD, t]: 6-15 of its job's OSTs
        and the MDT, some with the job id lost, and a system uid's now and then."""
        rng, node, out = self.rng, self.name, []
        missing = rng.random() < 0.12  # this interval the job's ids lost their job
        rid = f":{self.uid}:{node}" if missing else f"{self.job}:{self.uid}:{node}"
        jid = (JobId(IdClass.JOB_MISSING, None, self.uid, node, None, False) if missing
               else JobId(IdClass.EXACT, self.job, self.uid, node, None, False))
        n = rng.randrange(6, 16)
        for o in rng.sample(self.osts, min(n, len(self.osts))):
            lo, hi = self.sizes[o]
            reqs = rng.randrange(1, 3000)
            kind = "write_bytes" if rng.random() < 0.4 else "read_bytes"
            samples = {kind: reqs}
            if rng.random() < 0.1:
                samples["punch"] = rng.randrange(1, 4)
            d = Delta(f"scratch-OST{o:04x}", rid, rid, t - PERIOD, t,
                      t - rng.random() * PERIOD, samples, {kind: _stats(rng, reqs, lo, hi)}, 0)
            out.append((d, jid))
        if rng.random() < 0.5:
            d = Delta("scratch-MDT0000", rid, rid, t - PERIOD, t, t - rng.random() * 10,
                      {"open": rng.randrange(1, 500), "close": rng.randrange(1, 500),
                       "getattr": rng.randrange(1, 900)}, {}, 0)
            out.append((d, jid))
        if rng.random() < 0.2:  # a daemon's entry (root), no job
            sid = f":0:{node}"
            d = Delta(f"scratch-OST{rng.randrange(N_OST):04x}", sid, sid, t - PERIOD, t, None,
                      {"getattr": rng.randrange(1, 50)}, {}, 0)
            out.append((d, JobId(IdClass.SYSTEM, None, 0, node, None, False)))
        return out


def intervals(n_nodes: int, hours: float, seed: int = 1, origin: float = T0
              ) -> Iterator[tuple[float, list[JobRecord], list[tuple[Delta, JobId]]]]:
    """Per 2-minute interval from `origin`: its end, the jobs that started, the deltas."""
    rng = random.Random(seed)
    next_job = [5_000_000]
    nodes = [Node(f"n{i:05d}", rng, next_job) for i in range(n_nodes)]
    t = origin + PERIOD
    while t <= origin + hours * 3600:
        jobs: list[JobRecord] = []
        out: list[tuple[Delta, JobId]] = []
        for node in nodes:
            node.advance(t, jobs)
            out += node.deltas(t)
        for i in range(max(1, n_nodes // 50)):  # login nodes: users' rsync/cp outside jobs
            uid = 1000 + rng.randrange(400)
            rid = f"rsync.{uid}"
            d = Delta(f"scratch-OST{rng.randrange(N_OST):04x}", rid, rid, t - PERIOD, t, None,
                      {"read_bytes": 10 + i}, {"read_bytes": _stats(rng, 10 + i, 4096, 1 << 20)},
                      0)
            out.append((d, JobId(IdClass.EXE, None, uid, None, "rsync", False)))
        yield t, jobs, out
        t += PERIOD


def build(dsn: str, n_nodes: int, hours: float) -> tuple[int, list[JobRecord]]:
    """Write the site's intervals through write_batch; returns (deltas, jobs)."""
    from slurm_io.jobs.store import upsert_jobs
    from slurm_io.store import migrate
    from slurm_io.store.writer import write_batch

    total, all_jobs = 0, []
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
        for seq, (t, jobs, deltas) in enumerate(intervals(n_nodes, hours), 1):
            all_jobs += jobs
            write_batch(conn, Batch("site", seq, t, (), deltas, len(deltas), 0, 0, 0))
            total += len(deltas)
        upsert_jobs(conn, all_jobs)
        conn.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return total, all_jobs


def fullest_day(source: str) -> str:
    """The source's day partition with the most rows (pg_class.reltuples: no count)."""
    from slurm_io.store import partitions

    with psycopg.connect(source) as conn:
        row = conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'jobstats_delta'::regclass AND c.relname LIKE %s "
            "ORDER BY c.reltuples DESC LIMIT 1", (partitions.PREFIX + "%",)).fetchone()
    if row is None:
        sys.exit(f"bench_pack: no day partition in {source}")
    day = row[0].removeprefix(partitions.PREFIX)
    return f"{day[:4]}-{day[4:6]}-{day[6:]}"


def copy_from(dsn: str, source: str, day: float, sample: int) -> tuple[int, int]:
    """Copy one entry in `sample` of the source's `day` (its hot rows, with the hosts and
    targets they name) into the migrated bench database; returns (copied, the source's
    deltas of the whole day)."""
    from slurm_io.store import migrate, partitions

    where = ("ts_end > to_timestamp(%s) AND ts_end <= to_timestamp(%s) "
             "AND abs(hashtext(raw_id)) %% %s = 0")
    cols = None
    with psycopg.connect(source) as src, psycopg.connect(dsn) as dst:
        migrate.upgrade(dst)
        partitions.ensure_partitions(dst, day, day + 86400, ahead_days=0)
        for table, key in (("host", "host_id"), ("fs_target", "target_id")):
            dst.execute(f"DELETE FROM {table}")
            with src.cursor().copy(f"COPY {table} TO STDOUT (FORMAT binary)") as out, \
                    dst.cursor().copy(f"COPY {table} FROM STDIN (FORMAT binary)") as into:
                for chunk in out:
                    into.write(chunk)
            # the concurrent writer adds its own targets and hosts after the copied ones
            dst.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{key}'), "
                        f"(SELECT coalesce(max({key}), 0) + 1 FROM {table}), false)")
        cols = ", ".join(r[0] for r in dst.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'jobstats_delta'::regclass "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"))
        query = f"COPY (SELECT {cols} FROM jobstats_delta WHERE {where}) TO STDOUT (FORMAT binary)"
        with src.cursor().copy(query, (day, day + 86400, sample)) as out, dst.cursor().copy(
                f"COPY jobstats_delta ({cols}) FROM STDIN (FORMAT binary)") as into:
            for chunk in out:
                into.write(chunk)
        dst.commit()
        row = dst.execute("SELECT count(*) FROM jobstats_delta").fetchone()
        whole = src.execute("SELECT count(*) FROM jobstats_delta WHERE ts_end > "
                            "to_timestamp(%s) AND ts_end <= to_timestamp(%s)",
                            (day, day + 86400)).fetchone()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return (int(row[0]) if row else 0), (int(whole[0]) if whole else 0)


def tier_bytes(conn: psycopg.Connection, parent: str) -> int:
    """Heap + TOAST + indexes of every partition of `parent`."""
    row = conn.execute(
        "SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) FROM pg_inherits i "
        "WHERE i.inhparent = %s::regclass", (parent,)).fetchone()
    return int(row[0]) if row else 0


def deltas_in(conn: psycopg.Connection) -> tuple[int, int]:
    """(hot rows, packed elements)."""
    row = conn.execute("SELECT (SELECT count(*) FROM jobstats_delta), "
                       "(SELECT coalesce(sum(n), 0) FROM jobstats_packed)").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def concurrent_writer(dsn: str, n_nodes: int, stop: threading.Event, waits: list[float],
                      failures: list[str], hours: float = 1e9, origin: float = T0) -> None:
    """COPY one interval after another into the very hours being packed (late data: the
    hardest case for the pack's locks; collectors normally write newer days) with
    lock_timeout 1 s; each write's wall time into `waits`. Past the bench's `hours` it
    starts again at their first interval with new entries (`late2...`), so that it never
    writes outside them however long the pack takes (a small run's pack outlasts them)."""
    from slurm_io.store.writer import write_batch

    with psycopg.connect(dsn) as conn:
        conn.execute("SET lock_timeout = '1s'")
        conn.commit()
        seq, cycle = 1_000_000, 0
        while not stop.is_set():
            cycle += 1
            prefix = "late" if cycle == 1 else f"late{cycle}"
            for t, _jobs, deltas in intervals(n_nodes, hours, seed=2, origin=origin):
                if stop.is_set():
                    break
                moved = [(d._replace(raw_id=prefix + d.raw_id, job_id=prefix + d.job_id), j)
                         for d, j in deltas]
                seq += 1
                started = time.perf_counter()
                try:
                    write_batch(conn, Batch("late", seq, t, (), moved, len(moved), 0, 0, 0))
                except psycopg.errors.LockNotAvailable as e:
                    failures.append(str(e))
                    conn.rollback()
                waits.append(time.perf_counter() - started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--rows-per-transaction", type=int, default=50_000)
    ap.add_argument("--dsn")
    ap.add_argument("--db", default="bench_pack")
    ap.add_argument("--from-dsn", help="copy a site's deltas from this database instead of "
                    "generating them (with --day, --sample; --nodes: the source's nodes)")
    ap.add_argument("--day", help="the source's UTC day, YYYY-MM-DD, or `fullest` (the day "
                    "partition of most rows by the planner's count)")
    ap.add_argument("--sample", type=int, default=10, help="copy one entry in SAMPLE")
    args = ap.parse_args()
    if args.from_dsn and not args.day:
        ap.error("--from-dsn needs --day")
    if args.dsn:
        run(args.dsn, args)
        return
    from slurm_io.store.embedded import EmbeddedPostgres

    # as root the server runs as `postgres`, which must enter the state dir (bench_ingest)
    tmp = Path(tempfile.mkdtemp(prefix="slurm-io-bench-pack-", dir="/tmp"))
    os.chmod(tmp, 0o755)
    pg = EmbeddedPostgres(tmp / "state")
    try:
        run(pg.ensure(), args)
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(dsn: str, args: argparse.Namespace) -> None:
    from slurm_io.store import tiers_pack

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    dsn = make_conninfo(**{**conninfo_to_dict(dsn), "dbname": args.db})
    t = time.perf_counter()
    origin, writer_nodes, pack_now = T0, args.nodes, T0 + args.hours * 3600 + 86400
    if args.from_dsn:
        from datetime import UTC, datetime

        if args.day == "fullest":
            args.day = fullest_day(args.from_dsn)
        origin = datetime.strptime(args.day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
        n, whole = copy_from(dsn, args.from_dsn, origin, args.sample)
        args.hours, writer_nodes, pack_now = 24.0, 200, origin + 86400
        per_node_day = whole / args.nodes
        print(f"copied: {n:,} deltas, one entry in {args.sample} of {args.day} "
              f"({whole:,} deltas, {args.nodes:,} nodes: {per_node_day:,.0f} deltas per node "
              f"per day) in {time.perf_counter() - t:.0f} s")
    else:
        n, jobs = build(dsn, args.nodes, args.hours)
        per_node_day = n / args.nodes / args.hours * 24
        print(f"built: {n:,} deltas, {len(jobs):,} jobs, {args.nodes} nodes, {args.hours:g} h "
              f"in {time.perf_counter() - t:.0f} s ({per_node_day:,.0f} deltas per node per "
              "day)")
    with psycopg.connect(dsn, autocommit=True) as conn:
        hot = tier_bytes(conn, "jobstats_delta")
    print(f"hot tier: {hot / n:.1f} bytes per delta ({hot / 1e6:.1f} MB)")
    stop, waits, failures = threading.Event(), [], []
    writer = threading.Thread(target=concurrent_writer,
                              args=(dsn, writer_nodes, stop, waits, failures, args.hours,
                                    pack_now if args.from_dsn else origin))
    with psycopg.connect(dsn) as conn:
        writer.start()
        time.sleep(0.5)
        t = time.perf_counter()
        done = tiers_pack.pack(conn, pack_now, min_age=0,
                               max_wait=0, rows_per_transaction=args.rows_per_transaction)
        took = time.perf_counter() - t
        stop.set()
        writer.join()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE jobstats_packed")
        packed = tier_bytes(conn, "jobstats_packed")
        rows = conn.execute("SELECT count(*) FROM jobstats_packed").fetchone()
        hot_left, elements = deltas_in(conn)
    per = packed / max(1, elements)
    print(f"packed: {done.deltas:,} deltas of {done.hours} hours in {took:.1f} s "
          f"({done.deltas / took:,.0f} deltas/s, {done.transactions} transactions); "
          f"{elements:,} deltas in {rows[0] if rows else 0:,} packed rows")
    print(f"packed tier: {per:.1f} bytes per delta ({packed / 1e6:.1f} MB; hot tier "
          f"{hot / n:.1f}: {hot / max(1, packed):.1f}x smaller)")
    print(f"90 days of a {SITE_NODES:,}-node site: {per * per_node_day * SITE_NODES * 90 / 1e9:.0f}"
          f" GB packed (hot: {hot / n * per_node_day * SITE_NODES * 90 / 1e9:.0f} GB)")
    print(f"concurrent COPY of one interval ({writer_nodes} nodes) x {len(waits)}: longest "
          f"{max(waits) * 1000:.0f} ms, median {statistics.median(waits) * 1000:.0f} ms; "
          f"{len(failures)} waited over the 1 s lock_timeout")
    print(f"hot rows left: {hot_left:,} (the concurrent writer's late ones)")


if __name__ == "__main__":
    main()
