"""A site-density database for `bench_show.py build --density site` (issue 26).

The counts are Puhti's (CSC's study of its job_stats, the source of ../shared's
LUSTRE-JOBSTATS.md: 113 consecutive 2-minute snapshots, ~760 compute nodes): ~15 entries
with a job per compute node and ~9 without per snapshot, entries lingering ~10 minutes after
their last I/O, so a lower bound of ~6 changed rows per busy node per interval; 64 OSTs and
one MDT; ~24,000 finished jobs a day at 10,000 nodes. Per 2-minute interval and busy node
(a node running a job) this makes 4-5 job rows (4 OST rows on distinct OSTs, half the time
one MDT row more; 12 % of them `:uid:host`, recovered by attribution) and, on every node,
2 rows without a job (system uids): ~63,000 rows an interval, ~45 M a day at 10,000 nodes.

Why not through write_batch like the sparse form: 45 M rows a day made in Python and sent by
COPY is ~15 minutes a day on two shared cores; the rows are made by the server instead, one
INSERT ... SELECT per day into a table not yet attached to jobstats_delta (no index to keep
up), then ATTACH, which builds the partition's indexes in one pass each (sorted builds,
not 45 M index insertions). The intervals are the outer loop of each INSERT, so the rows lie
in ts_end order as the collectors write them: the BRIN index on ts_end (top, the exporter,
daily) depends on it (a first version that filled job by job made `jobio top` 12 s; one
INSERT per interval took 0.4 s each, a whole join per statement). The jobs
go in through the real path (jobs.store.upsert_jobs), so job and job_node are as a site's.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql

from slurm_io.model import JobRecord
from slurm_io.store import partitions

PERIOD = 120
JOBS_PER_NODE_DAY = 2.4  # ~24,000 finished jobs a day at 10,000 nodes
N_OST = 64
SIZES = (1, 1, 1, 2, 2, 4, 8, 16)  # nodes per job (mean 4.4)
# lognormal duration: mean ~7,900 s, so that ~2.4 jobs a node a day of 4.4 nodes each keep
# ~95 % of the nodes busy (some overlap: placement is random)
DUR_MU, DUR_SIGMA = 8.57, 0.9
COLLECTOR = "site-bench"


def site_t0(t: float) -> float:
    """The site database starts at the UTC midnight of `t`: its days are whole partitions
    (the fullest day is one partition, as `db prune` drops it)."""
    return t - t % 86400


def node_name(k: int) -> str:
    return f"c{k:05d}"


def make_jobs(n_nodes: int, days: int, t0: float, rng: random.Random) -> list[JobRecord]:
    """Jobs starting from a day before t0 (so the first day is as full as the others),
    kept when they run into [t0, t0 + days)."""
    users = max(50, 300 * n_nodes // 2000)
    span = (days + 1) * 86400
    n_jobs = int(JOBS_PER_NODE_DAY * n_nodes * (days + 1))
    out = []
    for i in range(n_jobs):
        uid = 1000 + rng.randrange(users)
        n = rng.choice(SIZES)
        first = rng.randrange(n_nodes - n)
        nodes = tuple(node_name(k) for k in range(first, first + n))
        dur = min(48 * 3600, max(300, rng.lognormvariate(DUR_MU, DUR_SIGMA)))
        start = t0 - 86400 + rng.random() * (span - dur)
        if start + dur <= t0:
            continue
        job = 3_000_000 + i
        out.append(JobRecord(job, str(job), None, None, uid, f"u{uid}", f"acct{uid % 40}",
                             "batch", f"job{i % 97}", nodes, start - 60, start, start + dur,
                             "COMPLETED", "0:0", f"/home/u{uid}", None, "bench"))
    return out


def dimensions(conn: psycopg.Connection, n_nodes: int) -> None:
    """The site's hosts and targets (the writer would make them on first sight)."""
    conn.execute("INSERT INTO host (name) SELECT format('c%%s', lpad(k::text, 5, '0')) "
                 "FROM generate_series(0, %s - 1) k ON CONFLICT (name) DO NOTHING", (n_nodes,))
    conn.execute("INSERT INTO fs_target (name, fs, kind, idx) SELECT format('scratch-OST%%s', "
                 "lpad(to_hex(k), 4, '0')), 'scratch', 'OST', k FROM generate_series(0, %s) k "
                 "ON CONFLICT (name) DO NOTHING", (N_OST - 1,))
    conn.execute("INSERT INTO fs_target (name, fs, kind, idx) VALUES "
                 "('scratch-MDT0000', 'scratch', 'MDT', 0) ON CONFLICT (name) DO NOTHING")


# One day's rows into an unattached table `{part}` in [lo, hi). The per-row draws are in
# OFFSET 0 subqueries that name an outer column, so the server draws them again for every row
# (a subquery without either is computed once, or pulled up and its draws repeated per use).
_FILL_JOBS = """
INSERT INTO {part} (ts_start, ts_end, last_update, target_id, id_class, job, uid, host_id,
    raw_id, read_bytes, read_bytes_samples, read_bytes_sumsq, read_bytes_min, read_bytes_max,
    write_bytes, write_bytes_samples, write_bytes_sumsq, write_bytes_min, write_bytes_max,
    op_open, op_close, op_getattr, op_punch)
SELECT t - interval '120 s', t, t - v.lag * interval '120 s',
       CASE WHEN k = 5 THEN %(mdt)s ELSE %(ost0)s + (r.o + k * 16) %% 64 END,
       CASE WHEN v.miss THEN 5 ELSE 1 END, CASE WHEN v.miss THEN NULL ELSE jn.job END,
       jn.uid, jn.host_id,
       CASE WHEN v.miss THEN '' ELSE jn.job::text END || ':' || jn.uid || ':' || jn.name,
       CASE WHEN k < 5 AND NOT v.wr THEN v.nreq * v.sz END,
       CASE WHEN k < 5 AND NOT v.wr THEN v.nreq END,
       CASE WHEN k < 5 AND NOT v.wr THEN (v.nreq * v.sz * v.sz)::float8 END,
       CASE WHEN k < 5 AND NOT v.wr THEN v.sz END, CASE WHEN k < 5 AND NOT v.wr THEN v.sz END,
       CASE WHEN k < 5 AND v.wr THEN v.nreq * v.sz END,
       CASE WHEN k < 5 AND v.wr THEN v.nreq END,
       CASE WHEN k < 5 AND v.wr THEN (v.nreq * v.sz * v.sz)::float8 END,
       CASE WHEN k < 5 AND v.wr THEN v.sz END, CASE WHEN k < 5 AND v.wr THEN v.sz END,
       CASE WHEN k = 5 THEN v.nreq %% 500 + 1 END, CASE WHEN k = 5 THEN v.nreq %% 499 + 1 END,
       CASE WHEN k = 5 THEN v.nreq %% 900 + 1 END,
       CASE WHEN k < 5 AND v.nreq %% 7 = 0 THEN 1 END
FROM generate_series(%(lo)s, %(hi)s - interval '1 us', interval '120 s') t,
LATERAL (SELECT jn.job, jn.uid, jn.host_id, h.name FROM job j JOIN job_node jn USING (job)
         JOIN host h USING (host_id)
         WHERE j.start_time < t AND j.end_time + interval '120 s' >= t OFFSET 0) jn,
LATERAL (SELECT floor(random() * 64)::int AS o, 4 + (random() < 0.5)::int AS nk, t AS tt
         OFFSET 0) r,
LATERAL generate_series(1, r.nk) k,
LATERAL (SELECT random() < 0.12 AS miss, random() < 0.5 AS wr, random() AS lag,
                1 + floor(random() * 2000)::bigint AS nreq,
                (ARRAY[4096, 65536, 1048576, 4194304])[1 + floor(random() * 4)::int]::bigint
                AS sz, k AS kk OFFSET 0) v
"""

# Two rows without a job per node and interval (system uids: 0 and a daemon's)
_FILL_SYSTEM = """
INSERT INTO {part} (ts_start, ts_end, last_update, target_id, id_class, uid, host_id, raw_id,
    read_bytes, read_bytes_samples, read_bytes_min, read_bytes_max, op_punch)
SELECT t - interval '120 s', t, NULL, %(ost0)s + (r.o + k * 32) %% 64, 7, u.uid, h.host_id,
       ':' || u.uid || ':' || h.name, 4096 * r.n, r.n, 4096, 4096, NULL
FROM generate_series(%(lo)s, %(hi)s - interval '1 us', interval '120 s') t,
LATERAL (SELECT host_id, name FROM host WHERE name LIKE 'c%%' AND t IS NOT NULL OFFSET 0) h,
LATERAL generate_series(1, 2) k,
LATERAL (SELECT CASE WHEN k = 1 THEN 0 ELSE 997 END AS uid) u,
LATERAL (SELECT floor(random() * 64)::int AS o, 1 + floor(random() * 50)::bigint AS n,
         k AS kk, t AS tt, h.host_id AS hh OFFSET 0) r
"""


def _fill_day(dsn: str, day: datetime, ids: dict[str, int], out: dict[str, float]) -> None:
    """Make day `day`'s partition: an unattached table filled by the server, then ATTACHed
    (which builds its indexes)."""
    name = partitions.partition_name(day.date())
    ident = sql.Identifier(name)
    lo, hi = day, day + timedelta(days=1)
    args = {"lo": lo, "hi": hi, "mdt": ids["mdt"], "ost0": ids["ost0"]}
    t = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(sql.SQL("CREATE TABLE {} (LIKE jobstats_delta INCLUDING DEFAULTS "
                             "INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)"
                             ).format(ident))
        conn.execute(sql.SQL(_FILL_JOBS).format(part=ident), args)
        conn.execute(sql.SQL(_FILL_SYSTEM).format(part=ident), args)
        conn.commit()
        out[f"{name} rows"] = time.perf_counter() - t
        # the bound as a constraint first: ATTACH then skips its validating scan
        conn.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT bound CHECK (ts_end >= {} AND "
                             "ts_end < {})").format(ident, sql.Literal(lo), sql.Literal(hi)))
        conn.execute(sql.SQL("ALTER TABLE jobstats_delta ATTACH PARTITION {} FOR VALUES FROM "
                             "({}) TO ({})").format(ident, sql.Literal(lo), sql.Literal(hi)))
        conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT bound").format(ident))
        conn.commit()
        out[f"{name} total"] = time.perf_counter() - t


def fill(dsn: str, n_nodes: int, days: int, t0: float) -> dict[str, float]:
    """Every day's deltas, two days at a time (the server's two cores), the collectors'
    batches of every interval, ANALYZE; returns seconds per step."""
    with psycopg.connect(dsn) as conn:
        dimensions(conn, n_nodes)
        conn.commit()
        mdt = conn.execute("SELECT target_id FROM fs_target WHERE name = 'scratch-MDT0000'"
                           ).fetchone()
        ost0 = conn.execute("SELECT target_id FROM fs_target WHERE name = 'scratch-OST0000'"
                            ).fetchone()
        assert mdt and ost0
        ids = {"mdt": mdt[0], "ost0": ost0[0]}
        n_ost = conn.execute("SELECT count(*) FROM fs_target WHERE kind = 'OST' AND "
                             "target_id BETWEEN %s AND %s", (ost0[0], ost0[0] + N_OST - 1)
                             ).fetchone()
        assert n_ost and n_ost[0] == N_OST, "the OSTs' ids must be consecutive"
    out: dict[str, float] = {}
    first = datetime.fromtimestamp(t0, UTC)
    day_list = [first + timedelta(days=d) for d in range(days)]
    for i in range(0, len(day_list), 2):
        threads = [threading.Thread(target=_fill_day, args=(dsn, d, ids, out))
                   for d in day_list[i:i + 2]]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    with psycopg.connect(dsn) as conn:
        # one collector's batch per interval: what data_complete_until and newest ingest see
        conn.execute("INSERT INTO ingest_batch (collector, seq, read_time, ingested_at, n_rows,"
                     " n_entries, n_problems, n_repaired, n_unattributable, targets) "
                     "SELECT %s, k, %s + k * interval '120 s', %s + k * interval '120 s', "
                     "60000, 240000, 0, 0, 0, '{}' FROM generate_series(1, %s) k",
                     (COLLECTOR, first, first, days * 86400 // PERIOD))
        conn.commit()
        t = time.perf_counter()
        conn.execute("ANALYZE")
        out["analyze"] = time.perf_counter() - t
    return out
