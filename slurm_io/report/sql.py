"""The report package's query module: every statement the views run (one interval's load for
`top` and the exporter's per-target view, `usage`, the unattributed split, `slowdown`, the
quarantine's one problem, the per-filesystem LASSi hours; the daily page's are in
report.daily_sql). The views are pure or talk to this module; what comes back is typed.

psycopg is not imported here at run time: `usage.render_table` serves the read service's
clients, which have no database driver (the attribution reader is imported where it is used).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from slurm_io.report.counters import SUM_COLUMNS, sum_select
from slurm_io.store import tiers

if TYPE_CHECKING:
    from psycopg import Connection

    from slurm_io.attribute.core import DeltaRow

_SUMS = ", ".join(f"coalesce(sum(d.{col}), 0)::float8" for col in SUM_COLUMNS.values())

# Exact-id rows (a job named) are summed per (job, uid, filesystem) with the hosts they came
# from, unless `{host}` keeps the host (a view by host): only the rows without a job need
# their host, class and times (attribution of `:uid:host`, users, systems). At a site's
# density that is ~37,000 groups -> a few thousand, what Python then adds up (issue 26).
INTERVAL_SQL = (
    "SELECT d.job, CASE WHEN d.job IS NULL THEN d.id_class END, d.uid, {host}, t.fs, "
    "CASE WHEN d.job IS NULL AND d.id_class = 5 THEN extract(epoch FROM d.ts_start)::float8 END, "
    "CASE WHEN d.job IS NULL AND d.id_class = 5 THEN extract(epoch FROM d.ts_end)::float8 END, "
    "CASE WHEN d.job IS NULL AND d.id_class = 5 "
    "THEN extract(epoch FROM d.last_update)::float8 END, "
    "CASE WHEN d.job IS NULL AND d.id_class = 6 THEN d.raw_id END, "
    "array_agg(d.host_id) FILTER (WHERE d.job IS NOT NULL AND d.host_id IS NOT NULL), "
    f"extract(epoch FROM max(d.ts_end))::float8, {_SUMS} "
    f"FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s{filters} "
    "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
)
TARGET_SQL = (
    "SELECT t.fs, t.name, t.kind, " + _SUMS + " "
    f"FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2, 3"
)
# The newest read with rows of any collector at or before a moment, looking back a while: one
# index probe per collector (the skip scan of sql/0018), where max(ts_end) over the deltas
# reads a whole interval (~60,000 rows at a site: 0.1-0.2 s, bench/README.md).
NEWEST_READ_SQL = (
    "WITH RECURSIVE c(collector) AS ("
    "(SELECT collector FROM ingest_batch ORDER BY collector LIMIT 1) UNION ALL "
    "SELECT (SELECT b.collector FROM ingest_batch b WHERE b.collector > c.collector "
    "ORDER BY b.collector LIMIT 1) FROM c WHERE c.collector IS NOT NULL) "
    "SELECT extract(epoch FROM max((SELECT b.read_time FROM ingest_batch b "
    "WHERE b.collector = c.collector AND b.read_time <= %(at)s AND b.read_time > %(lo)s "
    "AND b.n_rows > 0 ORDER BY b.read_time DESC LIMIT 1)))::float8 "
    "FROM c WHERE c.collector IS NOT NULL"
)
LATEST_SQL = (f"SELECT max(d.ts_end) FROM {tiers.window('%(lo)s', '%(hi)s')} d "
              "JOIN fs_target t USING (target_id) "
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


def prefer_index(conn: Connection) -> None:
    """Read short ts_end windows through the BRIN index (for this transaction).

    The planner's BRIN estimate is pessimistic: for one interval of a day's partition it
    prefers a parallel scan of the whole partition, twice as slow on the 30-day benchmark
    (bench/README.md, exporter). Nothing here reads more than a window of ts_end. Only in a
    transaction: SET LOCAL ends with it (an autocommit connection keeps its settings).
    """
    if not conn.autocommit:
        conn.execute("SET LOCAL enable_seqscan = off")


def latest(conn: Connection, at: float, *, fs: str | None = None,
           kind: str | None = None) -> float | None:
    """The newest ts_end at or before `at` (looking back 3 minutes, 10 minutes, an hour, a
    day, then 35 days: the BRIN index on ts_end serves the short look-backs). The first
    look-back holds one collector interval: the max of a live site's newest interval, not
    of five (a site writes ~60,000 rows an interval, issue 26)."""
    sql, args = _filters(fs, kind)
    for back in (180.0, 600.0, 3600.0, 86400.0, 35 * 86400.0):
        row = conn.execute(LATEST_SQL.format(filters=sql),
                           {**args, "lo": ts(at - back), "hi": ts(at)}).fetchone()
        if row and row[0] is not None:
            return float(row[0].timestamp())
    return None


def newest_read(conn: Connection, at: float, back: float) -> float | None:
    """The newest read time with rows among the collectors' batches in (at - back, at]: a
    guess at `latest` that `load` checks against the deltas it reads (None: no batch, or a
    role that may not read ingest_batch -- users, sql/0004)."""
    row = conn.execute("SELECT has_table_privilege('ingest_batch', 'SELECT')").fetchone()
    if not row or not row[0]:
        return None
    row = conn.execute(NEWEST_READ_SQL, {"at": ts(at), "lo": ts(at - back)}).fetchone()
    return None if not row or row[0] is None else float(row[0])


class IntervalRow(NamedTuple):
    """The deltas of one owner, class, host and filesystem in the interval, summed (SUM_COLUMNS
    order); t0/t1/last only for `:uid:host` ids, raw_id only for `%e.%u` ones. A job's row
    has no class; its host only if asked per host (`hosts` always)."""

    job: int | None
    id_class: int
    uid: int | None
    host_id: int | None
    fs: str | None
    t0: float | None
    t1: float | None
    last: float | None
    raw_id: str | None
    sums: tuple[float, ...]
    hosts: tuple[int, ...] = ()  # of a job's row: the hosts its deltas came from


class TargetRow(NamedTuple):
    """What one target moved in the interval (SUM_COLUMNS order)."""

    fs: str
    name: str
    kind: str
    sums: tuple[float, ...]


class CandidateJob(NamedTuple):
    """A job of a user on a node: a possible owner of that user's `:uid:host` deltas there.
    `job` is the raw id: the load views name jobs as the deltas do (sql/0020)."""

    host_id: int
    job: int
    uid: int
    nodes: tuple[str, ...]
    start: float | None
    end: float | None


@dataclass
class JobMeta:
    """What the load views show of a job."""

    jobid: str
    uid: int | None
    user: str | None
    account: str | None
    name: str | None
    nodes: int | None
    work_dir: str | None


def interval_rows(conn: Connection, lo: float, hi: float, *, fs: str | None = None,
                  kind: str | None = None, per_host: bool = True) -> list[IntervalRow]:
    """The deltas with ts_end in (lo, hi], summed per owner, class, host and filesystem; the
    rows naming a job per job, uid and filesystem only, with their hosts, unless
    `per_host`."""
    return interval_newest(conn, lo, hi, fs=fs, kind=kind, per_host=per_host)[0]


def interval_newest(conn: Connection, lo: float, hi: float, *, fs: str | None = None,
                    kind: str | None = None, per_host: bool = True
                    ) -> tuple[list[IntervalRow], float | None]:
    """interval_rows, and the newest ts_end among them (None: no rows)."""
    sql, args = _filters(fs, kind)
    host = "d.host_id" if per_host else "CASE WHEN d.job IS NULL THEN d.host_id END"
    # binary: the ~29,000 x 48 float8 of a site's interval decode in half the time (measured)
    with conn.cursor(binary=True) as cur:
        rows = cur.execute(INTERVAL_SQL.format(filters=sql, host=host),
                           {**args, "lo": ts(lo), "hi": ts(hi)}).fetchall()
    newest = max((r[10] for r in rows), default=None)
    # fields by index: 3x faster than unpacking into the constructor (measured, 100k rows)
    return [IntervalRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[11:],
                        tuple(sorted(set(r[9]))) if r[9] else ())
            for r in rows], newest


def target_rows(conn: Connection, lo: float, hi: float) -> list[TargetRow]:
    """Per target, the deltas with ts_end in (lo, hi] summed."""
    return [TargetRow(r[0], r[1], r[2], r[3:]) for r in conn.execute(
        TARGET_SQL, {"lo": ts(lo), "hi": ts(hi)}).fetchall()]


def candidate_jobs(conn: Connection, pairs: list[tuple[int, int]], t0: float,
                   hi: float) -> list[CandidateJob]:
    """The jobs of these (host, uid) pairs that overlap (t0, hi], by host, uid, start.

    One probe of job_node (host_id, uid, start_time) per pair: the hosts x uids of all the
    pairs (what this asked before) read ~8x the rows at a site and joined all of `job`
    by hash (0.25-0.45 s of the interval's 1 s, bench/README.md)."""
    return [CandidateJob(h, j, u, tuple(n or ()), st, en) for h, j, u, n, st, en in conn.execute(
        "SELECT jn.host_id, j.job_raw, j.uid, j.nodes, "
        "extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8"
        " FROM unnest(%s::int4[], %s::int4[]) p(host_id, uid) CROSS JOIN LATERAL ("
        "SELECT jn.host_id, jn.uid, jn.start_time, jn.job FROM job_node jn "
        "WHERE jn.host_id = p.host_id AND jn.uid = p.uid AND jn.start_time < %s "
        "AND coalesce(jn.end_time, 'infinity') > %s OFFSET 0) jn "  # OFFSET 0: probe per pair
        "JOIN job j ON j.job = jn.job ORDER BY jn.host_id, jn.uid, jn.start_time, jn.job",
        ([h for h, _ in pairs], [u for _, u in pairs], ts(hi), ts(t0)))]


def job_meta(conn: Connection, jobs: list[int]) -> dict[int, JobMeta]:
    """raw id -> the job; of a raw id that several rows share (clusters, requeued runs), the
    latest started."""
    if not jobs:
        return {}
    return {job: JobMeta(jobid, uid, user, account, name, len(nodes or ()) or None, work_dir)
            for job, jobid, uid, user, account, name, nodes, work_dir in conn.execute(
                "SELECT job_raw, jobid, uid, user_name, account, name, nodes, work_dir "
                "FROM job WHERE job_raw = ANY(%s) ORDER BY start_time NULLS FIRST", (jobs,))}


def user_names(conn: Connection, uids: list[int]) -> dict[int, str]:
    """uid -> the user name of their newest job record."""
    if not uids:
        return {}
    return dict(conn.execute(
        "SELECT DISTINCT ON (uid) uid, user_name FROM job WHERE uid = ANY(%s) "
        "AND user_name IS NOT NULL ORDER BY uid, start_time DESC", (uids,)).fetchall())


def host_names(conn: Connection, ids: list[int]) -> dict[int, str]:
    """host_id -> the host's name."""
    if not ids:
        return {}
    return dict(conn.execute("SELECT host_id, name FROM host WHERE host_id = ANY(%s)",
                             (ids,)).fetchall())


# -- jobio usage ---------------------------------------------------------------------------------
class UsageSum(NamedTuple):
    """The deltas of one filesystem and id class: how many rows, and SUM_COLUMNS' sums."""

    fs: str | None
    id_class: int
    rows: int
    sums: tuple[int, ...]


class ExtraSum(NamedTuple):
    """One counter outside the columns (the `extra` JSON) summed for a filesystem and class."""

    fs: str | None
    id_class: int
    key: str
    value: int


def usage_sums(conn: Connection, s: datetime, e: datetime) -> list[UsageSum]:
    """Counters summed over the deltas with ts_end in (s, e], per filesystem and id class."""
    rows = conn.execute(
        f"""SELECT t.fs, d.id_class, count(*)::bigint AS n_rows, {sum_select('d')}
            FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id)
            WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s
            GROUP BY 1, 2""", {"lo": s, "hi": e}).fetchall()
    return [UsageSum(fs, cls, n, tuple(vals)) for fs, cls, n, *vals in rows]


def usage_extra(conn: Connection, s: datetime, e: datetime) -> list[ExtraSum]:
    """The `extra` counters of the same deltas, summed per filesystem, class and name."""
    return [ExtraSum(*r) for r in conn.execute(
        f"""SELECT t.fs, d.id_class, x.key, sum(x.value::bigint)::bigint
           FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id),
                jsonb_each_text(d.extra) x
           WHERE d.extra IS NOT NULL AND d.ts_end > %(lo)s AND d.ts_end <= %(hi)s
           GROUP BY 1, 2, 3""", {"lo": s, "hi": e}).fetchall()]


# -- where the I/O went (unattributed) -------------------------------------------------------
class UidJob(NamedTuple):
    """A job of a known user, as the `:uid:host` split needs it."""

    job: int
    uid: int
    nodes: tuple[str, ...]
    start: float | None
    end: float | None


def jobs_named_between(conn: Connection, s: datetime, e: datetime) -> set[int]:
    """The raw job ids of the deltas with ts_end in (s, e] that name a job Slurm knows."""
    return {r[0] for r in conn.execute(
        f"SELECT DISTINCT d.job FROM {tiers.window('%(lo)s', '%(hi)s')} d "
        "JOIN job j ON j.job_raw = d.job", {"lo": s, "hi": e})}


def user_names_by_uid(conn: Connection) -> dict[int, str]:
    """uid -> a user name of its jobs (every uid a job row names)."""
    return dict(conn.execute("SELECT DISTINCT uid, user_name FROM job "
                             "WHERE uid IS NOT NULL").fetchall())


def deltas_between(conn: Connection, s: datetime, e: datetime) -> Iterator[DeltaRow]:
    """The deltas with ts_end in (s, e], streamed (a day can be millions of rows)."""
    from slurm_io.attribute.sql import delta_rows, delta_select

    with conn.cursor() as cur:
        cur.execute(delta_select("ts_end > %(lo)s AND ts_end <= %(hi)s", lo="%(lo)s",
                                 hi="%(hi)s"), {"lo": s, "hi": e})
        yield from delta_rows(cur)


def uid_jobs_overlapping(conn: Connection, lo: datetime, hi: datetime) -> list[UidJob]:
    """Jobs with a uid that ran at some time in (lo, hi): who may own a `:uid:host` delta."""
    return [UidJob(job, uid, tuple(nodes or ()), st, en) for job, uid, nodes, st, en
            in conn.execute(
                "SELECT job, uid, nodes, extract(epoch FROM start_time)::float8, "
                "extract(epoch FROM end_time)::float8 FROM job "
                "WHERE start_time < %s AND coalesce(end_time, 'infinity') > %s "
                "AND uid IS NOT NULL", (hi, lo))]


# -- jobio slowdown ------------------------------------------------------------------------------
class Run(NamedTuple):
    """A finished job of a user, as `slowdown` compares runs."""

    job: int
    jobid: str
    name: str | None
    submit_line: str | None
    start: float
    end: float
    nodes: int
    state: str | None


class JobRisk(NamedTuple):
    """A job's own LASSi hours: the filesystems and its highest risks."""

    fs: list[str]
    risk_oss: float
    risk_mds: float


class FsHour(NamedTuple):
    """One stored LASSi hour of a filesystem."""

    hour: float
    fs: str
    risk_oss: float
    risk_mds: float


def finished_runs(conn: Connection, user: str, start: datetime, end: datetime,
                  name: str | None = None) -> list[Run]:
    """The user's jobs that started in [start, end] and ran (end after start), by start."""
    q = ("SELECT job_raw, jobid, name, submit_line, extract(epoch FROM start_time)::float8, "
         "extract(epoch FROM end_time)::float8, nodes, state FROM job WHERE user_name = %s "
         "AND start_time IS NOT NULL AND end_time IS NOT NULL AND end_time > start_time "
         "AND start_time >= %s AND start_time <= %s")
    args: list[Any] = [user, start, end]
    if name is not None:
        q += " AND name = %s"
        args.append(name)
    return [Run(r[0], r[1], r[2], r[3], r[4], r[5], len(r[6] or ()), r[7])
            for r in conn.execute(q + " ORDER BY start_time, job", args)]


def job_risks(conn: Connection, jobs: list[int]) -> dict[int, JobRisk]:
    """job -> its LASSi filesystems and highest risks (jobs with LASSi hours only)."""
    return {r[0]: JobRisk(sorted(r[1]), r[2], r[3]) for r in conn.execute(
        "SELECT job, array_agg(DISTINCT fs), max(risk_oss), max(risk_mds) FROM lassi_job_hour "
        "WHERE job = ANY(%s) GROUP BY job", (jobs,))}


def fs_hours(conn: Connection, lo: datetime, hi: datetime) -> list[FsHour]:
    """The filesystems' LASSi hours in [lo, hi), oldest first."""
    return [FsHour(*r) for r in conn.execute(
        "SELECT extract(epoch FROM hour)::float8, fs, risk_oss, risk_mds FROM lassi_fs_hour "
        "WHERE hour >= %s AND hour < %s ORDER BY hour", (lo, hi))]


# -- jobio daily ---------------------------------------------------------------------------------
