"""The LASSi queries: the day's scans of the deltas, the baseline averages, storing a day's
hours and reading them back. Statements only; lassi.days makes the hours from what these
return (docs/architecture.md: a package's query module, an adapter).

Hours are (h, h + 1 h] of ts_end, h in UTC, like the days of the partitions.
"""

from __future__ import annotations

from datetime import date
from typing import Any, NamedTuple

import psycopg

from slurm_io.lassi import metrics as M
from slurm_io.model import OP_COUNTERS, IdClass
from slurm_io.store import tiers
from slurm_io.store.bulk import copy_rows
from slurm_io.store.sqlutil import has_tables, hash_groups, no_jit
from slurm_io.store.sqlutil import ts as _ts

HOUR = 3600.0
# the operations LASSi counts as "other" on the OSTs (lassi.days sums counters the same way)
OTHER_OPS = [op for op in OP_COUNTERS if op not in M.OST_DATA_OPS]
_OTHER_SQL = " + ".join(f"coalesce(d.op_{op}, 0)" for op in OTHER_OPS)
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
SUM_NAMES = [n for n, _ in _SUMS]


def bucket_range_sql(width: str, first: str) -> tuple[str, str]:
    """The first and last bucket index (`lo`, `hi`) a delta `d` is spread over (see
    spread_sql): SQL expressions of one row, no set-returning function."""
    e = f"extract(epoch FROM d.ts_end) / {width}"
    s = f"extract(epoch FROM d.ts_start) / {width}"
    lo = (f"CASE WHEN extract(epoch FROM d.ts_end - d.ts_start) > 1.5 * {width} "
          f"THEN least(greatest(floor({s})::bigint, {first}), ceil({e})::bigint - 1) "
          f"ELSE ceil({e})::bigint - 1 END")
    return lo, f"ceil({e})::bigint - 1"


def spread_sql(width: str, first: str) -> str:
    """A LATERAL join giving each delta its bucket(s) `x.b` (bucket index: bucket
    (b * width, (b + 1) * width]) and weight `x.f` (metrics.spread_buckets in SQL): a normal
    read goes whole to the bucket of ts_end, a longer interval (missed reads) is spread
    evenly over its buckets, none before bucket index `first`. `width` and `first` are SQL
    expressions (parameters)."""
    lo, hi = bucket_range_sql(width, first)
    return (
        "CROSS JOIN LATERAL (SELECT gs AS b, 1.0 / (r.hi - r.lo + 1) AS f FROM (SELECT "
        f"{lo} AS lo, {hi} AS hi) r, generate_series(r.lo, r.hi) gs) x "
    )


def spread_groups_sql(alias: str) -> str:
    """spread_sql for rows already summed per bucket range (columns `lo`, `hi` of `alias`):
    each group's sums go to its buckets `x.b` with weight `x.f`, the same weight every delta
    of the group had. Why it is the same figure: numeric multiplication and addition are
    exact, so f * sum(v) = sum(f * v) to the last digit, and summing bigints first (int128
    in the server) spares the per-delta set-returning call and numeric products that made
    the day's scans CPU-bound (bench/README.md, "A day at a site")."""
    return (f"CROSS JOIN LATERAL (SELECT gs AS b, 1.0 / ({alias}.hi - {alias}.lo + 1) AS f "
            f"FROM generate_series({alias}.lo, {alias}.hi) gs) x ")


def target_array(column: str) -> str:
    """fs_target's `column` as an array indexed by target_id (NULL where no target has the
    id): a scalar subquery the server computes once, for per-delta lookups without a join."""
    return (f"SELECT array_agg(t.{column} ORDER BY i) FROM generate_series(1, "
            "(SELECT max(target_id) FROM fs_target)) i LEFT JOIN fs_target t ON t.target_id = i")


# A normal delta (not longer than 1.5 h) goes whole to the hour (h, h + 1 h] of its ts_end:
# the group key is that hour, date_trunc of ts_end - 1 us in UTC (exact: microseconds are
# the timestamps' resolution; cheap, where the numeric epoch arithmetic of bucket_range_sql
# on every one of a site's 47 M deltas a day cost a minute); a longer one keeps its
# (ts_start, ts_end), whose hours bucket_range_sql gives per group.
_LONG = "d.ts_end - d.ts_start > interval '5400 seconds'"  # = epoch > 1.5 * 3600
_INNER_SUMS = ", ".join(f"sum({expr}) AS s{i}" for i, (_, expr) in enumerate(_SUMS))
_LO_H, _HI_H = bucket_range_sql("3600", "%(first)s")
# The deltas first summed per (fs, kind, job, hour or long interval) in bigint, then
# spread over hours (spread_groups_sql: the same figures as spreading every delta, a
# fraction of the work). fs and kind come from arrays of fs_target indexed by target_id
# (computed once, in the same snapshot): with a join to fs_target the planner would not sum
# in the parallel workers; and the per-job and the per-filesystem rows are two aggregates
# of those few groups (GROUPING SETS made the planner sort every delta for its order).
_KEYED = (
    f"SELECT ({target_array('fs')})[d.target_id] AS fs, "
    f"({target_array('kind')})[d.target_id] AS kind, d.job, "
    f"CASE WHEN {_LONG} THEN d.ts_start END AS ts_start, CASE WHEN {_LONG} THEN d.ts_end "
    "ELSE date_trunc('hour', d.ts_end - interval '1 microsecond', 'UTC') END AS ts_end, "
    f"min(d.uid) AS uid, {_INNER_SUMS} FROM {tiers.window('%(lo)s', '%(hi)s')} d "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2, 3, 4, 5")
_HOUR = "(extract(epoch FROM d.ts_end) / 3600)::bigint"
_GROUPS = (
    f"SELECT d.*, CASE WHEN d.ts_start IS NULL THEN {_HOUR} ELSE {_LO_H} END AS lo, "
    f"CASE WHEN d.ts_start IS NULL THEN {_HOUR} ELSE {_HI_H} END AS hi FROM ({_KEYED}) d")
_SPREAD = f"SELECT g.*, x.b, x.f FROM g {spread_groups_sql('g')}"
_SPREAD_SUMS = ", ".join(f"coalesce(sum(f * s{i}), 0)::float8" for i in range(len(_SUMS)))
DAY_SQL = (
    f"WITH g AS MATERIALIZED ({_GROUPS}), s AS MATERIALIZED ({_SPREAD}) "
    f"SELECT fs, kind, b * 3600 AS h, job, 0 AS g, min(uid), {_SPREAD_SUMS} "
    "FROM s GROUP BY fs, kind, b, job "
    f"UNION ALL SELECT fs, kind, b * 3600, NULL, 1, min(uid), {_SPREAD_SUMS} "
    "FROM s GROUP BY fs, kind, b"
)


# The (host, uid) pairs of the job-missing `:uid:host` deltas and their earliest start: all
# lassi.days needs of them to find the jobs that may own a share (the shares themselves are
# attribution's stored results). It fetched every such delta with its sums before: 4.1 M
# rows and 9.3 GB of Python objects for a site's day (bench/README.md, "A day at a site").
MISSING_SQL = (
    "SELECT d.host_id, d.uid, min(extract(epoch FROM d.ts_start))::float8 "
    f"FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s AND d.id_class = %(cls)s AND d.job IS NULL "
    "AND d.host_id IS NOT NULL AND d.uid IS NOT NULL GROUP BY 1, 2"
)
CANDIDATES_SQL = (
    "SELECT jn.host_id, j.job, j.uid, j.nodes, extract(epoch FROM j.start_time)::float8, "
    "extract(epoch FROM j.end_time)::float8, j.job_raw FROM job_node jn JOIN job j USING (job) "
    "WHERE jn.host_id = ANY(%s) AND jn.start_time < %s "
    "AND coalesce(jn.end_time, 'infinity') > %s"
)
_COLS = [M.column(m) for m in M.METRICS]
_SCORE_COLS = ["risk_oss", "risk_mds", "read_kb_ops", "write_kb_ops", "risks"]


# -- the day's deltas ------------------------------------------------------------------------------
class DaySum(NamedTuple):
    """One row of DAY_SQL: a (filesystem, target kind, hour[, job]) group's sums."""

    fs: str
    kind: str
    hour: float
    job: int | None
    total: bool  # the (fs, kind, hour) grouping set: every delta, whichever job
    uid: int | None  # the smallest uid of the job's deltas
    sums: dict[str, float]  # by SUM_NAMES: metrics.metric_values' input


def day_sums(conn: psycopg.Connection, start: float, end: float) -> list[DaySum]:
    """One scan of the deltas in (start, end], spread over hours (none before start's),
    grouped per filesystem, kind and hour, and per job as well."""
    no_jit(conn)
    with hash_groups(conn), conn.cursor() as cur:
        cur.execute(DAY_SQL, {"lo": _ts(start), "hi": _ts(end), "first": int(start // HOUR)})
        return [DaySum(fs, kind, float(h), job, bool(g), uid,
                       dict(zip(SUM_NAMES, sums, strict=True)))
                for fs, kind, h, job, g, uid, *sums in cur]


class MissingPair(NamedTuple):
    """A host and uid with job-missing `:uid:host` deltas, and the earliest start of them."""

    host_id: int
    uid: int
    start: float


def missing_pairs(conn: psycopg.Connection, start: float, end: float) -> list[MissingPair]:
    """The (host, uid) pairs of the job-missing deltas in (start, end] that name a host and
    a uid (the ones attribution can give to jobs), with their earliest ts_start."""
    with conn.cursor() as cur:
        cur.execute(MISSING_SQL, {"lo": _ts(start), "hi": _ts(end),
                                  "cls": int(IdClass.JOB_MISSING)})
        return [MissingPair(*r) for r in cur.fetchall()]


class Candidate(NamedTuple):
    """A job that ran on a host (job_node), with what attribution needs of it."""

    host_id: int
    job: int  # row key
    uid: int | None
    nodes: list[str] | None
    start: float | None
    end: float | None
    raw: int  # the raw Slurm id the deltas name


def candidates(conn: psycopg.Connection, hosts: list[int], lo: float, hi: float
               ) -> list[Candidate]:
    """The jobs on `hosts` that started before `hi` and had not ended by `lo`."""
    return [Candidate(*r) for r in conn.execute(CANDIDATES_SQL, (hosts, _ts(hi), _ts(lo)))]


# -- baseline ----------------------------------------------------------------------------------
class Baseline(NamedTuple):
    """A filesystem's averages over stored hours (metric -> average of the non-zero values)."""

    hours: int  # filesystem hours stored
    job_avg: dict[str, float | None]
    fs_avg: dict[str, float | None]


def _avg_sql(table: str) -> str:
    cols = ", ".join(f"avg(nullif({c}, 0))" for c in _COLS)
    return (f"SELECT fs, count(*), {cols} FROM {table} WHERE hour >= %s AND hour < %s "
            "GROUP BY fs")


def baseline(conn: psycopg.Connection, start: float, end: float) -> dict[str, Baseline]:
    """fs -> its Baseline over the stored hours in [start, end) (`jobio lassi compute`'s
    baseline of the next day, and the alerts')."""
    out: dict[str, Any] = {}
    for fs, n, *avgs in conn.execute(_avg_sql("lassi_fs_hour"), (_ts(start), _ts(end))):
        out[fs] = [n, {}, dict(zip(M.METRICS, avgs, strict=True))]
    for fs, _n, *avgs in conn.execute(_avg_sql("lassi_job_hour"), (_ts(start), _ts(end))):
        out.setdefault(fs, [0, {}, {}])[1] = dict(zip(M.METRICS, avgs, strict=True))
    return {k: Baseline(v[0], v[1], v[2]) for k, v in out.items()}


# -- storing a day -------------------------------------------------------------------------------
JOB_HOUR_COLS = ["hour", "fs", "job", "uid", *_COLS, *_SCORE_COLS]
FS_HOUR_COLS = ["hour", "fs", *_COLS, *_SCORE_COLS, "n_jobs"]


def store_day(conn: psycopg.Connection, day: date, start: float, end: float,
              job_rows: list[tuple[Any, ...]], fs_rows: list[tuple[Any, ...]],
              day_rows: list[tuple[Any, ...]]) -> None:
    """Replace the day's stored hours in [start, end) and its lassi_day rows, in one
    transaction; commits. Rows by JOB_HOUR_COLS, FS_HOUR_COLS and lassi_day's columns."""
    with conn.transaction():
        conn.execute("DELETE FROM lassi_job_hour WHERE hour >= %s AND hour < %s",
                     (_ts(start), _ts(end)))
        conn.execute("DELETE FROM lassi_fs_hour WHERE hour >= %s AND hour < %s",
                     (_ts(start), _ts(end)))
        conn.execute("DELETE FROM lassi_day WHERE day = %s", (day,))
        with conn.cursor() as cur:
            _copy(cur, "lassi_job_hour", JOB_HOUR_COLS, job_rows)
            _copy(cur, "lassi_fs_hour", FS_HOUR_COLS, fs_rows)
            cur.executemany(
                "INSERT INTO lassi_day (fs, day, a, baseline_from, baseline_to, baseline_hours,"
                " job_avg, fs_avg, own_metrics) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                day_rows)
    conn.commit()


def _copy(cur: psycopg.Cursor, table: str, cols: list[str], rows: list[tuple[Any, ...]]
          ) -> None:
    """Bulk-insert `rows`, by COPY even where row-level security applies (store.bulk)."""
    copy_rows(cur, table, cols, rows)


def computed_days(conn: psycopg.Connection, first: date, last: date) -> set[date]:
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT day FROM lassi_day WHERE day >= %s AND day <= %s", (first, last))}


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


class JobHour(NamedTuple):
    """One stored LASSi hour of a job on a filesystem (what a job's summary is made of)."""

    fs: str
    hour: float
    risk_oss: float
    risk_mds: float
    read_kb: float
    read_ops: float
    write_kb: float
    write_ops: float
    risks: dict[str, float] | None  # metric -> risk


def job_lassi_hours(conn: psycopg.Connection, job: int) -> list[JobHour]:
    """A job's stored LASSi hours (raw id), oldest first; none when the LASSi tables do not
    exist (their migration has not run)."""
    if not has_tables(conn):
        return []
    return [JobHour(*r) for r in conn.execute(
        "SELECT fs, extract(epoch FROM hour)::float8, risk_oss, risk_mds, read_kb, read_ops, "
        "write_kb, write_ops, risks FROM lassi_job_hour WHERE job = %s ORDER BY hour, fs",
        (job,))]
