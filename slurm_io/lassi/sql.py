"""LASSi metrics from PostgreSQL: set-based hourly aggregation, storage, and reading back.

`compute_day` does, for one UTC day:
1. one scan of the day's deltas, grouped by (filesystem, target kind, hour) and by
   (filesystem, target kind, hour, job) at once (GROUPING SETS): the filesystem totals and the
   direct part of every job (ids that name the job);
2. one query for the day's job-missing `:uid:host` deltas (grouped per host, uid and
   interval) and one for the jobs that ran on those hosts; the jobs' shares of them are the
   stored results of attribution (job_io_hour; jobs not attributed yet are attributed then);
3. the baseline averages from the stored hours of the previous days (metrics.fill_baseline
   falls back to the day itself where there is no history), the scores (metrics.score), and
   one COPY per table (through a temporary table where row-level security applies).

Hours are (h, h + 1 h] of ts_end, h in UTC, like the days of the partitions.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg

from slurm_io.attribute import stored
from slurm_io.attribute.figures import figures
from slurm_io.jobs.info import JobWindow
from slurm_io.jobs.store import raw_ids_of
from slurm_io.lassi import metrics as M
from slurm_io.lassi.summary import LassiSummary
from slurm_io.model import OP_COUNTERS, IdClass
from slurm_io.store.bulk import copy_rows
from slurm_io.store.sqlutil import has_tables, no_jit
from slurm_io.store.sqlutil import ts as _ts

HOUR = 3600.0
_OTHER_OPS = [op for op in OP_COUNTERS if op not in M.OST_DATA_OPS]
_OTHER_SQL = " + ".join(f"coalesce(d.op_{op}, 0)" for op in _OTHER_OPS)
# (name in metrics.metric_values' input, SQL expression summed)
_SUMS: list[tuple[str, str]] = [
    ("read_bytes", "d.read_bytes"),
    ("read_bytes_samples", "d.read_bytes_samples"),
    ("write_bytes", "d.write_bytes"),
    ("write_bytes_samples", "d.write_bytes_samples"),
    ("other", _OTHER_SQL),
    *[(m, f"d.op_{m}") for m in M.MDS_METRICS],
]
_SUM_SQL = ", ".join(f"coalesce(sum({expr}), 0)::float8" for _, expr in _SUMS)
_SUM_NAMES = [n for n, _ in _SUMS]


def spread_sql(width: str, first: str) -> str:
    """A LATERAL join giving each delta its bucket(s) `x.b` (bucket index: bucket
    (b * width, (b + 1) * width]) and weight `x.f` (metrics.spread_buckets in SQL): a normal
    read goes whole to the bucket of ts_end, a longer interval (missed reads) is spread
    evenly over its buckets, none before bucket index `first`. `width` and `first` are SQL
    expressions (parameters)."""
    e = f"extract(epoch FROM d.ts_end) / {width}"
    s = f"extract(epoch FROM d.ts_start) / {width}"
    return (
        "CROSS JOIN LATERAL (SELECT gs AS b, 1.0 / (r.hi - r.lo + 1) AS f FROM (SELECT "
        f"CASE WHEN extract(epoch FROM d.ts_end - d.ts_start) > 1.5 * {width} "
        f"THEN least(greatest(floor({s})::bigint, {first}), ceil({e})::bigint - 1) "
        f"ELSE ceil({e})::bigint - 1 END AS lo, ceil({e})::bigint - 1 AS hi) r, "
        "generate_series(r.lo, r.hi) gs) x "
    )


_SUM_SQL_F = ", ".join(f"coalesce(sum(x.f * ({expr})), 0)::float8" for _, expr in _SUMS)
DAY_SQL = (
    "SELECT t.fs, t.kind, x.b * 3600 AS h, d.job, GROUPING(d.job) AS g, min(d.uid), "
    f"{_SUM_SQL_F} FROM jobstats_delta d JOIN fs_target t USING (target_id) "
    + spread_sql("3600", "%(first)s")
    + "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s "
    "GROUP BY GROUPING SETS ((t.fs, t.kind, x.b, d.job), (t.fs, t.kind, x.b))"
)
MISSING_SQL = (
    "SELECT t.fs, t.kind, d.host_id, d.uid, extract(epoch FROM d.ts_start)::float8, "
    "extract(epoch FROM d.ts_end)::float8, extract(epoch FROM d.last_update)::float8, "
    f"{_SUM_SQL} FROM jobstats_delta d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %s AND d.ts_end <= %s AND d.id_class = %s AND d.job IS NULL "
    "AND d.host_id IS NOT NULL AND d.uid IS NOT NULL "
    "GROUP BY 1, 2, 3, 4, 5, 6, 7"
)
CANDIDATES_SQL = (
    "SELECT jn.host_id, j.job, j.uid, j.nodes, extract(epoch FROM j.start_time)::float8, "
    "extract(epoch FROM j.end_time)::float8, j.job_raw FROM job_node jn JOIN job j USING (job) "
    "WHERE jn.host_id = ANY(%s) AND jn.start_time < %s "
    "AND coalesce(jn.end_time, 'infinity') > %s"
)
_COLS = [M.column(m) for m in M.METRICS]
_SCORE_COLS = ["risk_oss", "risk_mds", "read_kb_ops", "write_kb_ops", "risks"]


def day_bounds(day: date) -> tuple[float, float]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
    return start, start + 86400.0


@dataclass
class DayResult:
    day: date
    fs: list[str] = field(default_factory=list)
    job_hours: int = 0
    fs_hours: int = 0
    baseline_hours: dict[str, int] = field(default_factory=dict)
    own_metrics: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0


# -- aggregation -------------------------------------------------------------------------------
def aggregate_day(conn: psycopg.Connection, start: float, end: float, *, now: float
                  ) -> tuple[dict[tuple[str, float], dict[str, float]],
                             dict[tuple[str, float, int], dict[str, float]],
                             dict[int, int | None]]:
    """(fs, hour) -> values, (fs, hour, job) -> values, job -> uid for deltas in (start, end]."""
    fs_vals: dict[tuple[str, float], dict[str, float]] = defaultdict(dict)
    job_vals: dict[tuple[str, float, int], dict[str, float]] = defaultdict(dict)
    uids: dict[int, int | None] = {}
    s, e = _ts(start), _ts(end)
    no_jit(conn)
    with conn.cursor() as cur:
        cur.execute(DAY_SQL, {"lo": s, "hi": e, "first": int(start // HOUR)})
        for fs, kind, h, job, g, uid, *sums in cur:
            vals = M.metric_values(kind, dict(zip(_SUM_NAMES, sums, strict=True)))
            if g:  # the (fs, kind, hour) set: every delta
                M.add_into(fs_vals[(fs, float(h))], vals)
            elif job is not None:
                if vals:
                    M.add_into(job_vals[(fs, float(h), job)], vals)
                uids.setdefault(job, uid)
    _recover(conn, s, e, job_vals, uids, now=now, first=start)
    return fs_vals, job_vals, uids


def _recover(conn: psycopg.Connection, s: datetime, e: datetime,
             job_vals: dict[tuple[str, float, int], dict[str, float]],
             uids: dict[int, int | None], *, now: float, first: float) -> None:
    """Add the jobs' recovered shares of the day's `:uid:host` deltas: the stored results of
    attribution (job_io_hour); jobs with a share but no stored result yet get theirs from
    attribute.figures (computed then, not stored: that is `jobio attribute`'s)."""
    start, end = s.timestamp(), e.timestamp()
    hours = [(x.job, x.hour, x.fs, x.kind, x.uid, x.recovered)
             for x in stored.stored_hours(conn, start, end) if x.recovered]
    with conn.cursor() as cur:
        cur.execute(MISSING_SQL, (s, e, int(IdClass.JOB_MISSING)))
        rows = cur.fetchall()
    if rows:
        hosts = sorted({r[2] for r in rows})
        lo = min(r[4] for r in rows)
        done = stored.attributed_on_hosts(conn, hosts, lo, end)
        pairs = {(r[2], r[3]) for r in rows}
        for host_id, job, uid, nodes, st, en, raw in conn.execute(CANDIDATES_SQL,
                                                                  (hosts, e, _ts(lo))):
            if job in done or (host_id, uid) not in pairs:
                continue
            done.add(job)
            io = figures(conn, JobWindow(job, uid, tuple(nodes or ()), st, en, raw),
                         now=now).io
            hours += [(job, h, fs, kind, uid, rec) for (h, fs, kind), (_t, rec)
                      in io.hours.items() if rec and start <= h < end]
    # LASSi's job hours are by raw id, as the deltas naming jobs are (DAY_SQL); results are
    # stored by row key (sql/0020)
    raw_of = raw_ids_of(conn, sorted({x[0] for x in hours})) if hours else {}
    for key, h, fs, kind, uid, rec in hours:
        job = raw_of.get(key, key)
        if h < first:
            continue
        vals = M.metric_values(kind, _sums(rec))
        if vals:
            M.add_into(job_vals[(fs, h, job)], vals)
            uids.setdefault(job, uid)


def _sums(counters: dict[str, int]) -> dict[str, float]:
    """metric_values' input from counters by Lustre name (as _SUMS sums the columns)."""
    out = {n: float(counters.get(n, 0)) for n in _SUM_NAMES if n != "other"}
    out["other"] = float(sum(counters.get(op, 0) for op in _OTHER_OPS))
    return out


# -- baseline and scores -------------------------------------------------------------------------
def _avg_sql(table: str) -> str:
    cols = ", ".join(f"avg(nullif({c}, 0))" for c in _COLS)
    return (f"SELECT fs, count(*), {cols} FROM {table} WHERE hour >= %s AND hour < %s "
            "GROUP BY fs")


def baseline(conn: psycopg.Connection, start: float, end: float
             ) -> dict[str, tuple[int, dict[str, float | None], dict[str, float | None]]]:
    """fs -> (filesystem hours, job averages, filesystem averages) of stored hours in
    [start, end)."""
    out: dict[str, Any] = {}
    for fs, n, *avgs in conn.execute(_avg_sql("lassi_fs_hour"), (_ts(start), _ts(end))):
        out[fs] = [n, {}, dict(zip(M.METRICS, avgs, strict=True))]
    for fs, _n, *avgs in conn.execute(_avg_sql("lassi_job_hour"), (_ts(start), _ts(end))):
        out.setdefault(fs, [0, {}, {}])[1] = dict(zip(M.METRICS, avgs, strict=True))
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def compute_day(conn: psycopg.Connection, day: date, *, a: float = M.DEFAULT_A,
                baseline_days: int = M.DEFAULT_BASELINE_DAYS, now: float | None = None
                ) -> DayResult:
    """Compute and store (replacing) the LASSi hours of one UTC day; commits."""
    t_start = time.perf_counter()
    now = time.time() if now is None else now
    start, end = day_bounds(day)
    fs_vals, job_vals, uids = aggregate_day(conn, start, end, now=now)
    b_from, b_to = start - baseline_days * 86400.0, start
    base = baseline(conn, b_from, b_to)
    result = DayResult(day)
    fs_names = sorted({fs for fs, _ in fs_vals} | {fs for fs, _, _ in job_vals})
    job_rows: list[tuple[Any, ...]] = []
    fs_rows: list[tuple[Any, ...]] = []
    day_rows: list[tuple[Any, ...]] = []
    n_jobs: dict[tuple[str, float], int] = defaultdict(int)
    for fs, h, _job in job_vals:
        n_jobs[(fs, h)] += 1
    for fs in fs_names:
        n_base, job_base, fs_base = base.get(fs, (0, {}, {}))
        own_job = M.averages(v for (f, _, _), v in job_vals.items() if f == fs)
        own_fs = M.averages(v for (f, _), v in fs_vals.items() if f == fs)
        job_avg, own_j = M.fill_baseline(job_base, own_job)
        fs_avg, own_f = M.fill_baseline(fs_base, own_fs)
        own = sorted(set(own_j) | set(own_f))
        result.baseline_hours[fs] = n_base
        result.own_metrics[fs] = own
        for (f, h, job), v in sorted(job_vals.items()):
            if f == fs:
                job_rows.append((_ts(h), fs, job, uids.get(job), *_row(M.score(v, job_avg, a))))
        for (f, h), v in sorted(fs_vals.items()):
            if f == fs:
                fs_rows.append((_ts(h), fs, *_row(M.score(v, fs_avg, a)), n_jobs[(fs, h)]))
        day_rows.append((fs, day, a, _ts(b_from), _ts(b_to), n_base,
                         json.dumps(_clean(job_avg)), json.dumps(_clean(fs_avg)), own))
    with conn.transaction():
        conn.execute("DELETE FROM lassi_job_hour WHERE hour >= %s AND hour < %s",
                     (_ts(start), _ts(end)))
        conn.execute("DELETE FROM lassi_fs_hour WHERE hour >= %s AND hour < %s",
                     (_ts(start), _ts(end)))
        conn.execute("DELETE FROM lassi_day WHERE day = %s", (day,))
        with conn.cursor() as cur:
            _copy(cur, "lassi_job_hour", ["hour", "fs", "job", "uid", *_COLS, *_SCORE_COLS],
                  job_rows)
            _copy(cur, "lassi_fs_hour", ["hour", "fs", *_COLS, *_SCORE_COLS, "n_jobs"],
                  fs_rows)
            cur.executemany(
                "INSERT INTO lassi_day (fs, day, a, baseline_from, baseline_to, baseline_hours,"
                " job_avg, fs_avg, own_metrics) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                day_rows)
    conn.commit()
    result.fs = fs_names
    result.job_hours = len(job_rows)
    result.fs_hours = len(fs_rows)
    result.seconds = time.perf_counter() - t_start
    return result


def _clean(d: dict[str, float | None]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in d.items() if v}


def _row(s: M.Scored) -> tuple[Any, ...]:
    return (*(s.values[m] for m in M.METRICS), s.risk_oss, s.risk_mds, s.read_kb_ops,
            s.write_kb_ops, json.dumps({k: round(v, 4) for k, v in s.risks.items()}))


def _copy(cur: psycopg.Cursor, table: str, cols: list[str], rows: list[tuple[Any, ...]]
          ) -> None:
    """Bulk-insert `rows`, by COPY even where row-level security applies (store.bulk)."""
    copy_rows(cur, table, cols, rows)


def computed_days(conn: psycopg.Connection, first: date, last: date) -> set[date]:
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT day FROM lassi_day WHERE day >= %s AND day <= %s", (first, last))}


def ensure_day(conn: psycopg.Connection, day: date, *, a: float = M.DEFAULT_A,
               baseline_days: int = M.DEFAULT_BASELINE_DAYS, now: float | None = None
               ) -> DayResult | None:
    """Compute the day unless it was computed before (None then)."""
    if day in computed_days(conn, day, day):
        return None
    return compute_day(conn, day, a=a, baseline_days=baseline_days, now=now)


# -- reading back --------------------------------------------------------------------------------
_MD_SUM = " + ".join(M.column(m) for m in M.MDS_METRICS)


def fs_hours(conn: psycopg.Connection, start: float, end: float) -> list[dict[str, Any]]:
    """Stored filesystem hours in [start, end), oldest first."""
    rows = conn.execute(
        "SELECT extract(epoch FROM hour)::float8, fs, read_kb, read_ops, write_kb, write_ops, "
        f"other, {_MD_SUM}, risk_oss, risk_mds, read_kb_ops, write_kb_ops, risks, n_jobs "
        "FROM lassi_fs_hour WHERE hour >= %s AND hour < %s ORDER BY hour, fs",
        (_ts(start), _ts(end))).fetchall()
    keys = ("hour", "fs", "read_kb", "read_ops", "write_kb", "write_ops", "other", "md_ops",
            "risk_oss", "risk_mds", "read_kb_ops", "write_kb_ops", "risks", "n_jobs")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def job_hours(conn: psycopg.Connection, start: float, end: float) -> list[dict[str, Any]]:
    """Stored job hours in [start, end) with the job's display id, user and name."""
    rows = conn.execute(
        "SELECT extract(epoch FROM h.hour)::float8, h.fs, h.job, coalesce(j.jobid, h.job::text),"
        " coalesce(j.user_name, 'uid ' || h.uid::text), j.name, h.read_kb, h.read_ops, "
        f"h.write_kb, h.write_ops, h.other, {_MD_SUM.replace('md_', 'h.md_')}, h.risk_oss, "
        "h.risk_mds, h.read_kb_ops, h.write_kb_ops, h.risks "
        "FROM lassi_job_hour h LEFT JOIN LATERAL (SELECT jobid, user_name, name FROM job "
        " WHERE job_raw = h.job ORDER BY start_time DESC NULLS LAST LIMIT 1) j ON true "
        "WHERE h.hour >= %s AND h.hour < %s ORDER BY h.hour, h.fs, h.job",
        (_ts(start), _ts(end))).fetchall()
    keys = ("hour", "fs", "job", "jobid", "user", "name", "read_kb", "read_ops", "write_kb",
            "write_ops", "other", "md_ops", "risk_oss", "risk_mds", "read_kb_ops",
            "write_kb_ops", "risks")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def job_lassi(conn: psycopg.Connection, job: int) -> LassiSummary | None:
    """A job's LASSi summary over its stored hours (None when none is stored)."""
    if not has_tables(conn):
        return None
    rows = conn.execute(
        "SELECT fs, extract(epoch FROM hour)::float8, risk_oss, risk_mds, read_kb, read_ops, "
        "write_kb, write_ops, risks FROM lassi_job_hour WHERE job = %s ORDER BY hour, fs",
        (job,)).fetchall()
    if not rows:
        return None
    worst: dict[str, float] = {}
    for r in rows:
        for k, v in (r[8] or {}).items():
            worst[k] = max(worst.get(k, 0.0), float(v))
    read_kb = sum(r[4] for r in rows)
    read_ops = sum(r[5] for r in rows)
    write_kb = sum(r[6] for r in rows)
    write_ops = sum(r[7] for r in rows)
    rk, wk = M.kb_ops(read_ops, read_kb), M.kb_ops(write_ops, write_kb)
    return LassiSummary(
        fs=sorted({r[0] for r in rows}),
        hours=len({r[1] for r in rows}),
        risk_oss_max=round(max(r[2] for r in rows), 3),
        risk_mds_max=round(max(r[3] for r in rows), 3),
        risk_oss_mean=round(sum(r[2] for r in rows) / len(rows), 3),
        risk_mds_mean=round(sum(r[3] for r in rows) / len(rows), 3),
        risky_hours=len({r[1] for r in rows if r[2] > 0 or r[3] > 0}),
        read_kb_ops=None if rk is None else round(rk, 3),
        write_kb_ops=None if wk is None else round(wk, 3),
        risks_max={k: round(v, 3) for k, v in sorted(worst.items(), key=lambda kv: -kv[1])},
    )


def day_list(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]
