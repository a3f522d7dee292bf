"""LASSi's days: the hourly metrics and risk scores of one UTC day, made and stored, and a
job's summary over its stored hours. The statements are lassi.sql's; here is what is done
with their rows (a domain module: it may use attribution, which a query module may not).

`compute_day` does, for one UTC day:
1. one scan of the day's deltas, summed per (filesystem, target kind, job, hour) and then
   per (filesystem, target kind, hour) from those sums: the filesystem totals and the
   direct part of every job (ids that name the job);
2. one query for the (host, uid) pairs of the day's job-missing `:uid:host` deltas and one
   for the jobs that ran on those hosts; the jobs' shares of them are the
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from slurm_io.attribute import stored
from slurm_io.attribute.figures import figures
from slurm_io.jobs.info import JobWindow
from slurm_io.jobs.store import raw_ids_of
from slurm_io.lassi import metrics as M
from slurm_io.lassi import sql
from slurm_io.lassi.summary import LassiSummary
from slurm_io.store.sqlutil import ts as _ts

if TYPE_CHECKING:
    import psycopg


def day_bounds(day: date) -> tuple[float, float]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
    return start, start + 86400.0


def day_list(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


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
    for r in sql.day_sums(conn, start, end):
        vals = M.metric_values(r.kind, r.sums)
        if r.total:
            M.add_into(fs_vals[(r.fs, r.hour)], vals)
        elif r.job is not None:
            if vals:
                M.add_into(job_vals[(r.fs, r.hour, r.job)], vals)
            uids.setdefault(r.job, r.uid)
    _recover(conn, start, end, job_vals, uids, now=now)
    return fs_vals, job_vals, uids


def _recover(conn: psycopg.Connection, start: float, end: float,
             job_vals: dict[tuple[str, float, int], dict[str, float]],
             uids: dict[int, int | None], *, now: float) -> None:
    """Add the jobs' recovered shares of the day's `:uid:host` deltas: the stored results of
    attribution (job_io_hour); jobs with a share but no stored result yet get theirs from
    attribute.figures (computed then, not stored: that is `jobio attribute`'s)."""
    hours = [(x.job, x.hour, x.fs, x.kind, x.uid, x.recovered)
             for x in stored.stored_hours(conn, start, end) if x.recovered]
    rows = sql.missing_pairs(conn, start, end)
    if rows:
        hosts = sorted({r.host_id for r in rows})
        lo = min(r.start for r in rows)
        done = stored.attributed_on_hosts(conn, hosts, lo, end)
        pairs = {(r.host_id, r.uid) for r in rows}
        for c in sql.candidates(conn, hosts, lo, end):
            if c.job in done or (c.host_id, c.uid) not in pairs:
                continue
            done.add(c.job)
            io = figures(conn, JobWindow(c.job, c.uid, tuple(c.nodes or ()), c.start, c.end,
                                         c.raw), now=now).io
            hours += [(c.job, h, fs, kind, c.uid, rec) for (h, fs, kind), (_t, rec)
                      in io.hours.items() if rec and start <= h < end]
    # LASSi's job hours are by raw id, as the deltas naming jobs are (DAY_SQL); results are
    # stored by row key (sql/0020)
    raw_of = raw_ids_of(conn, sorted({x[0] for x in hours})) if hours else {}
    for key, h, fs, kind, uid, rec in hours:
        job = raw_of.get(key, key)
        if h < start:
            continue
        vals = M.metric_values(kind, _sums(rec))
        if vals:
            M.add_into(job_vals[(fs, h, job)], vals)
            uids.setdefault(job, uid)


def _sums(counters: dict[str, int]) -> dict[str, float]:
    """metric_values' input from counters by Lustre name (as lassi.sql sums the columns)."""
    out = {n: float(counters.get(n, 0)) for n in sql.SUM_NAMES if n != "other"}
    out["other"] = float(sum(counters.get(op, 0) for op in sql.OTHER_OPS))
    return out


# -- scores and storing ------------------------------------------------------------------------
def compute_day(conn: psycopg.Connection, day: date, *, a: float = M.DEFAULT_A,
                baseline_days: int = M.DEFAULT_BASELINE_DAYS, now: float | None = None
                ) -> DayResult:
    """Compute and store (replacing) the LASSi hours of one UTC day; commits."""
    t_start = time.perf_counter()
    now = time.time() if now is None else now
    start, end = day_bounds(day)
    fs_vals, job_vals, uids = aggregate_day(conn, start, end, now=now)
    b_from, b_to = start - baseline_days * 86400.0, start
    base = sql.baseline(conn, b_from, b_to)
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
    sql.store_day(conn, day, start, end, job_rows, fs_rows, day_rows)
    result.fs = fs_names
    result.job_hours = len(job_rows)
    result.fs_hours = len(fs_rows)
    result.seconds = time.perf_counter() - t_start
    return result


def _clean(d: dict[str, float | None]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in d.items() if v}


def _row(s: M.Scored) -> tuple[Any, ...]:
    """A scored hour's values in the order of lassi.sql's *_HOUR_COLS (metrics, scores)."""
    return (*(s.values[m] for m in M.METRICS), s.risk_oss, s.risk_mds, s.read_kb_ops,
            s.write_kb_ops, json.dumps({k: round(v, 4) for k, v in s.risks.items()}))


def ensure_day(conn: psycopg.Connection, day: date, *, a: float = M.DEFAULT_A,
               baseline_days: int = M.DEFAULT_BASELINE_DAYS, now: float | None = None
               ) -> DayResult | None:
    """Compute the day unless it was computed before (None then)."""
    if day in sql.computed_days(conn, day, day):
        return None
    return compute_day(conn, day, a=a, baseline_days=baseline_days, now=now)


# -- a job's summary -----------------------------------------------------------------------------
def job_lassi(conn: psycopg.Connection, job: int) -> LassiSummary | None:
    """A job's LASSi summary over its stored hours (None when none is stored)."""
    return summarize(sql.job_lassi_hours(conn, job))


def summarize(rows: Sequence[sql.JobHour]) -> LassiSummary | None:
    """The summary of a job's stored hours (None for none): worst and mean risks, the hours
    with a risk, kB per operation over all of them, each metric's worst risk."""
    if not rows:
        return None
    worst: dict[str, float] = {}
    for r in rows:
        for k, v in (r.risks or {}).items():
            worst[k] = max(worst.get(k, 0.0), float(v))
    read_kb = sum(r.read_kb for r in rows)
    read_ops = sum(r.read_ops for r in rows)
    write_kb = sum(r.write_kb for r in rows)
    write_ops = sum(r.write_ops for r in rows)
    rk, wk = M.kb_ops(read_ops, read_kb), M.kb_ops(write_ops, write_kb)
    return LassiSummary(
        fs=sorted({r.fs for r in rows}),
        hours=len({r.hour for r in rows}),
        risk_oss_max=round(max(r.risk_oss for r in rows), 3),
        risk_mds_max=round(max(r.risk_mds for r in rows), 3),
        risk_oss_mean=round(sum(r.risk_oss for r in rows) / len(rows), 3),
        risk_mds_mean=round(sum(r.risk_mds for r in rows) / len(rows), 3),
        risky_hours=len({r.hour for r in rows if r.risk_oss > 0 or r.risk_mds > 0}),
        read_kb_ops=None if rk is None else round(rk, 3),
        write_kb_ops=None if wk is None else round(wk, 3),
        risks_max={k: round(v, 3) for k, v in sorted(worst.items(), key=lambda kv: -kv[1])},
    )
