"""The queries of report/load.py (one interval's load) and of the exporter's per-target view."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from slurm_io.report.counters import SUM_COLUMNS

_SUMS = ", ".join(f"coalesce(sum(d.{col}), 0)::float8" for col in SUM_COLUMNS.values())

INTERVAL_SQL = (
    "SELECT d.job, d.id_class, d.uid, d.host_id, t.fs, "
    "CASE WHEN d.id_class = 5 THEN extract(epoch FROM d.ts_start)::float8 END, "
    "CASE WHEN d.id_class = 5 THEN extract(epoch FROM d.ts_end)::float8 END, "
    "CASE WHEN d.id_class = 5 THEN extract(epoch FROM d.last_update)::float8 END, "
    "CASE WHEN d.id_class = 6 THEN d.raw_id END, "
    f"{_SUMS} "
    "FROM jobstats_delta d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s{filters} "
    "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
)
TARGET_SQL = (
    "SELECT t.fs, t.name, t.kind, " + _SUMS + " "
    "FROM jobstats_delta d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2, 3"
)
LATEST_SQL = ("SELECT max(d.ts_end) FROM jobstats_delta d JOIN fs_target t USING (target_id) "
              "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s{filters}")


def ts(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _filters(fs: str | None, kind: str | None) -> tuple[str, dict[str, Any]]:
    sql, args = "", {}
    if fs:
        sql += " AND t.fs = %(fs)s"
        args["fs"] = fs
    if kind:
        sql += " AND t.kind = %(kind)s"
        args["kind"] = kind
    return sql, args


def prefer_index(conn: psycopg.Connection) -> None:
    """Read short ts_end windows through the BRIN index (for this transaction).

    The planner's BRIN estimate is pessimistic: for one interval of a day's partition it
    prefers a parallel scan of the whole partition, twice as slow on the 30-day benchmark
    (bench/README.md, exporter). Nothing here reads more than a window of ts_end. Only in a
    transaction: SET LOCAL ends with it (an autocommit connection keeps its settings).
    """
    if not conn.autocommit:
        conn.execute("SET LOCAL enable_seqscan = off")


def latest(conn: psycopg.Connection, at: float, *, fs: str | None = None,
           kind: str | None = None) -> float | None:
    """The newest ts_end at or before `at` (looking back 10 minutes, an hour, a day, then
    35 days: the BRIN index on ts_end serves the short look-backs)."""
    sql, args = _filters(fs, kind)
    for back in (600.0, 3600.0, 86400.0, 35 * 86400.0):
        row = conn.execute(LATEST_SQL.format(filters=sql),
                           {**args, "lo": ts(at - back), "hi": ts(at)}).fetchone()
        if row and row[0] is not None:
            return float(row[0].timestamp())
    return None


def interval_rows(conn: psycopg.Connection, lo: float, hi: float, *, fs: str | None = None,
                  kind: str | None = None) -> list[tuple[Any, ...]]:
    """(job, id_class, uid, host_id, fs, t0, t1, last_update, raw_id, *counters) of the
    deltas with ts_end in (lo, hi]; t0/t1/last only for `:uid:host`, raw_id for `%e.%u`."""
    sql, args = _filters(fs, kind)
    return conn.execute(INTERVAL_SQL.format(filters=sql),
                        {**args, "lo": ts(lo), "hi": ts(hi)}).fetchall()


def target_rows(conn: psycopg.Connection, lo: float, hi: float) -> list[tuple[Any, ...]]:
    """(fs, target name, kind, *counters) of the deltas with ts_end in (lo, hi]."""
    return conn.execute(TARGET_SQL, {"lo": ts(lo), "hi": ts(hi)}).fetchall()


def candidate_jobs(conn: psycopg.Connection, hosts: list[int], uids: list[int], t0: float,
                   hi: float) -> list[tuple[Any, ...]]:
    """(host_id, job, uid, nodes, start, end) of the jobs of these users on these nodes that
    overlap (t0, hi]: who may own a `:uid:host` delta. `job` is the raw id: the load views
    name jobs as the deltas do (sql/0020)."""
    return conn.execute(
        "SELECT jn.host_id, j.job_raw, j.uid, j.nodes, "
        "extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8"
        " FROM job_node jn JOIN job j USING (job) WHERE jn.host_id = ANY(%s) "
        "AND jn.uid = ANY(%s) AND jn.start_time < %s "
        "AND coalesce(jn.end_time, 'infinity') > %s",
        (hosts, uids, ts(hi), ts(t0))).fetchall()


def job_meta(conn: psycopg.Connection, jobs: list[int]) -> dict[int, tuple[Any, ...]]:
    """raw id -> (jobid, uid, user, account, name, node count, work_dir); of a raw id that
    several rows share (clusters, requeued runs), the latest started."""
    if not jobs:
        return {}
    return {job: (jobid, uid, user, account, name, len(nodes or ()) or None, work_dir)
            for job, jobid, uid, user, account, name, nodes, work_dir in conn.execute(
                "SELECT job_raw, jobid, uid, user_name, account, name, nodes, work_dir "
                "FROM job WHERE job_raw = ANY(%s) ORDER BY start_time NULLS FIRST", (jobs,))}


def user_names(conn: psycopg.Connection, uids: list[int]) -> dict[int, str]:
    """uid -> the user name of their newest job record."""
    if not uids:
        return {}
    return dict(conn.execute(
        "SELECT DISTINCT ON (uid) uid, user_name FROM job WHERE uid = ANY(%s) "
        "AND user_name IS NOT NULL ORDER BY uid, start_time DESC", (uids,)).fetchall())


def host_names(conn: psycopg.Connection, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    return dict(conn.execute("SELECT host_id, name FROM host WHERE host_id = ANY(%s)",
                             (ids,)).fetchall())
