"""Writing JobRecords into the `job` and `job_node` tables (imperative shell).

Idempotent: one INSERT ... ON CONFLICT (job) DO UPDATE, so re-importing the same jobs
changes nothing, and importing newer data for a job updates its row (and `updated_at`).
A row whose merged values equal the stored ones is not touched at all, which keeps
`updated_at` meaning "when did we last learn something about this job" and lets callers
report inserted / updated / unchanged.

Merge rule (evaluated on the locked, current row, so concurrent hooks and syncs are safe):
new non-NULL values win over stored ones, and NULL (or no nodes) never wipes stored data.
One exception: a hook record (source 'hook', written at job end, without state or times on
22.05) arriving after sacct already gave the job's final state and end keeps every stored
value and only fills gaps, since sacct's final record is the better one.

Speed: records go into a session temp table by binary COPY, then one INSERT ... SELECT;
job_node rows are brought up to date only for the jobs that changed. Measured on 2 cores
(PostgreSQL 15, 50k jobs of 1-8 nodes = 225k job_node rows): first import ~5 s (two thirds
of it the job_node inserts with their foreign-key checks), re-import unchanged ~0.6 s, every
job's state changed ~2.2 s (see docs/jobs.md).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import psycopg
from psycopg import sql

# hookenv stays imported here: the first module of the server extra that `jobio report`
# and `jobs import` reach on a collector's install is python-hostlist (tests/install)
from slurm_io.jobs.hookenv import record_from_hook_env
from slurm_io.jobs.info import JobInfo
from slurm_io.jobs.runs import latest_per_run
from slurm_io.store.sqlutil import ts as _ts

if TYPE_CHECKING:  # (imported where used: `jobio JOBID` reads jobs, writes none; issue 25)
    from slurm_io.model import JobRecord
    from slurm_io.store.problems import Problem

__all__ = [
    "UpsertCounts",
    "job_key",
    "newest_end",
    "record_from_hook_env",
    "resume_end",
    "upsert_isolated",
    "upsert_job_counts",
    "upsert_jobs",
]

# (job table column, COPY type), in JobRecord field order. The record's `job` (JobIDRaw)
# goes to job_raw; the row key `job` is found or made by _ASSIGN_KEYS (sql/0020).
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("job_raw", "int8"), ("jobid", "text"), ("array_job", "int8"), ("array_task", "text"),
    ("uid", "int4"), ("user_name", "text"), ("account", "text"), ("partition", "text"),
    ("name", "text"), ("nodes", "text[]"), ("submit", "float8"), ("start_time", "float8"),
    ("end_time", "float8"), ("state", "text"), ("exit_code", "text"), ("work_dir", "text"),
    ("submit_line", "text"), ("source", "text"), ("sluid", "text"), ("cluster", "text"),
)
# Identity of a row: never merged, only matched.
_IDENTITY = frozenset({"job_raw", "cluster"})
_TIMES = frozenset({"submit", "start_time", "end_time"})
# States after which sacct's record of a job no longer changes (on its own).
ACTIVE_STATES: tuple[str, ...] = (
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
    "RESV_DEL_HOLD",
)
_TEMP = sql.Identifier("slurm_io_job_in")


class UpsertCounts(NamedTuple):
    inserted: int
    updated: int
    unchanged: int

    @property
    def written(self) -> int:
        return self.inserted + self.updated


def upsert_jobs(conn: psycopg.Connection, records: Iterable[JobRecord]) -> int:
    """Insert or update `records` (and their job_node rows); the number of rows written.

    Commits, unless the caller has a transaction open (then it is a savepoint in it).
    """
    return upsert_job_counts(conn, records).written


def upsert_job_counts(conn: psycopg.Connection, records: Iterable[JobRecord]) -> UpsertCounts:
    """As upsert_jobs, telling inserted, updated and unchanged jobs apart.

    Several records of one job run (a file with repeated lines) count once: the last wins.
    """
    latest = latest_per_run(list(records))
    if not latest:
        return UpsertCounts(0, 0, 0)
    with conn.transaction(), conn.cursor() as cur:
        _load_temp(cur, latest)
        cur.execute(sql.SQL(
            "INSERT INTO host (name) SELECT DISTINCT n FROM {}, unnest(nodes) AS n "
            "ORDER BY n ON CONFLICT (name) DO NOTHING").format(_TEMP))
        cur.execute(sql.SQL("SELECT pg_advisory_xact_lock({})").format(sql.Literal(KEY_LOCK)))
        for statement in _ASSIGN_KEYS:
            cur.execute(statement)
        cur.execute(_UPSERT_SQL)
        written = cur.fetchall()
        changed = [job for job, _ in written]
        if changed:
            _sync_job_nodes(cur, changed)
            cur.execute(sql.SQL(
                "INSERT INTO cluster_host (cluster, host_id) SELECT DISTINCT t.cluster, "
                "h.host_id FROM {} t CROSS JOIN LATERAL unnest(t.nodes) AS n(name) "
                "JOIN host h ON h.name = n.name ORDER BY 1, 2 ON CONFLICT DO NOTHING"
            ).format(_TEMP))
    inserted = sum(1 for _, ins in written if ins)
    return UpsertCounts(inserted, len(written) - inserted, len(latest) - len(written))


class Isolated(NamedTuple):
    """What `upsert_isolated` wrote, and the records the database refused (as problems)."""

    counts: UpsertCounts
    refused: list[Problem]


def upsert_isolated(conn: psycopg.Connection, records: list[JobRecord], *, source: str
                    ) -> Isolated:
    """upsert_job_counts, where a record the database refuses (a value the checks at the
    edge missed) costs that record only: the batch is halved until the culprit is alone,
    and it comes back as a quarantine Problem. An unavailable database still raises.

    Integers are range-checked here first: psycopg's binary COPY (the C implementation)
    wraps an int4 overflow instead of refusing it (uid 2^31 arrives as -2^31).
    """
    from slurm_io.store.problems import Problem

    out_of_range = [(r, why) for r in records if (why := _out_of_range(r))]
    if out_of_range:
        bad = {id(r) for r, _ in out_of_range}
        counts, problems = upsert_isolated(conn, [r for r in records if id(r) not in bad],
                                           source=source)
        return Isolated(counts, problems + [
            Problem(source, f"refused: {why}", f"job {r.job}", repr(r))
            for r, why in out_of_range])
    try:
        return Isolated(upsert_job_counts(conn, records), [])
    except (psycopg.DataError, psycopg.IntegrityError, ValueError, OverflowError,
            struct.error) as e:  # refused by the server, or by psycopg's encoders (COPY)
        if len(records) <= 1:
            reason = f"refused by the database: {type(e).__name__}: {str(e).splitlines()[0]}"
            return Isolated(UpsertCounts(0, 0, 0),
                            [Problem(source, reason, f"job {r.job}", repr(r)) for r in records])
    mid = len(records) // 2
    a, pa = upsert_isolated(conn, records[:mid], source=source)
    b, pb = upsert_isolated(conn, records[mid:], source=source)
    return Isolated(UpsertCounts(*(x + y for x, y in zip(a, b, strict=True))), pa + pb)


def _out_of_range(r: JobRecord) -> str | None:
    """Why an integer of `r` does not fit its column (job, array_job bigint; uid integer)."""
    for name, value, low, high in (("job", r.job, 0, 2**63 - 1),
                                   ("array_job", r.array_job, 0, 2**63 - 1),
                                   ("uid", r.uid, -2**31, 2**31 - 1)):
        if value is not None and not low <= value <= high:
            return f"{name} {value} does not fit its column ({low}..{high})"
    return None


def newest_end(conn: psycopg.Connection, cluster: str | None = None) -> float | None:
    """Unix time of the latest job end stored (where an incremental sync resumes), of one
    cluster when given."""
    with conn.transaction():  # leaves no transaction open behind the caller's back
        row = conn.execute("SELECT extract(epoch FROM max(end_time))::float8 FROM job "
                           "WHERE %(c)s::text IS NULL OR cluster = %(c)s", {"c": cluster}
                           ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def resume_end(conn: psycopg.Connection, cluster: str | None, *, now: float,
               stale: float) -> float | None:
    """Where an incremental sync of `cluster`'s jobs resumes: its latest job end stored.

    Several clusters can share one database, each synced by its own controller at its own
    pace: resuming after another cluster's newer end would skip this one's jobs in between.
    Where the cluster is unknown (the controller could not say), the oldest of the clusters'
    latest ends, leaving out a cluster whose latest end is older than `stale` (one no
    longer synced: it would hold every sync to its last day).
    """
    if cluster is not None:
        return newest_end(conn, cluster)
    with conn.transaction():
        ends = [float(e) for (e,) in conn.execute(
            "SELECT extract(epoch FROM max(end_time))::float8 FROM job "
            "WHERE end_time IS NOT NULL GROUP BY cluster").fetchall() if e is not None]
    live = [e for e in ends if e >= now - stale]
    return min(live) if live else max(ends, default=None)


def _load_temp(cur: psycopg.Cursor, records: Iterable[JobRecord]) -> None:
    """COPY the records into a session temp table emptied at commit.

    Binary COPY with times as float8 (converted by to_timestamp in SQL): no Python datetime
    per value, which is most of the client-side cost otherwise.
    """
    cur.execute(sql.SQL(
        "CREATE TEMP TABLE IF NOT EXISTS {} ({}, job int8, run int4) ON COMMIT DELETE ROWS"
    ).format(_TEMP, sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t))
                                       for c, t in _COLUMNS)))
    cur.execute(sql.SQL("TRUNCATE {}").format(_TEMP))  # a caller's earlier call, same txn
    copy_sql = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        _TEMP, sql.SQL(", ").join(sql.Identifier(c) for c, _ in _COLUMNS))
    with cur.copy(copy_sql) as copy:
        copy.set_types([t for _, t in _COLUMNS])
        write_row = copy.write_row
        for r in records:
            row = list(r)
            row[9] = list(r.nodes)
            write_row(row)


def _merge_expr(col: str, keep_old: sql.Composable) -> sql.Composable:
    """The merged value of one column (see the module docstring)."""
    new, old = sql.SQL("EXCLUDED.{}").format(sql.Identifier(col)), sql.SQL("j.{}").format(
        sql.Identifier(col))
    if col == "source":
        return sql.SQL("CASE WHEN {} THEN {} ELSE {} END").format(keep_old, old, new)
    if col == "nodes":  # no nodes is no information
        new = sql.SQL("NULLIF({}, '{{}}'::text[])").format(new)
        old = sql.SQL("NULLIF({}, '{{}}'::text[])").format(old)
        return sql.SQL("COALESCE(CASE WHEN {k} THEN COALESCE({o}, {n}) ELSE COALESCE({n}, {o}) "
                       "END, '{{}}'::text[])").format(k=keep_old, o=old, n=new)
    return sql.SQL("CASE WHEN {k} THEN COALESCE({o}, {n}) ELSE COALESCE({n}, {o}) END").format(
        k=keep_old, o=old, n=new)


def _build_upsert() -> sql.Composed:
    keep_old = sql.SQL(
        "(EXCLUDED.source = 'hook' AND j.source <> 'hook' AND j.state IS NOT NULL "
        "AND j.end_time IS NOT NULL AND j.state <> ALL({}::text[]))"
    ).format(sql.Literal(list(ACTIVE_STATES)))
    cols = ["job", "run", *(c for c, _ in _COLUMNS)]
    merged = {c: _merge_expr(c, keep_old) for c in cols
              if c not in _IDENTITY and c not in ("job", "run")}
    select = [sql.SQL("to_timestamp({})").format(sql.Identifier(c)) if c in _TIMES
              else sql.Identifier(c) for c in cols]
    return sql.SQL(
        "INSERT INTO job AS j ({cols}, updated_at) "
        "SELECT {select}, now() FROM {temp} ORDER BY job "  # one lock order for all writers
        "ON CONFLICT (job) DO UPDATE SET {sets}, updated_at = now() "
        "WHERE ({current}) IS DISTINCT FROM ({merged}) "
        "RETURNING j.job, (j.xmax = 0) AS inserted"
    ).format(
        cols=sql.SQL(", ").join(map(sql.Identifier, cols)),
        select=sql.SQL(", ").join(select),
        temp=_TEMP,
        sets=sql.SQL(", ").join(sql.SQL("{} = {}").format(sql.Identifier(c), e)
                                for c, e in merged.items()),
        current=sql.SQL(", ").join(sql.SQL("j.{}").format(sql.Identifier(c)) for c in merged),
        merged=sql.SQL(", ").join(merged.values()),
    )


_UPSERT_SQL = _build_upsert()

# One writer of job keys at a time (hooks and syncs may bring the same new job at once).
KEY_LOCK = 0x6A6F626B6579  # 'jobkey'

# The stored run a record is (docs/jobs.md "Several clusters, requeued runs"): same cluster
# and raw id, and the same SLUID when both have one, else the same start when both have one;
# of several, the latest run. A record matching none is a new run (key from job_key_seq).
RUN_MATCH = (
    "j.cluster = t.cluster AND j.job_raw = t.job_raw AND CASE "
    "WHEN t.sluid IS NOT NULL AND j.sluid IS NOT NULL THEN j.sluid = t.sluid "
    "WHEN t.start_time IS NOT NULL AND j.start_time IS NOT NULL "
    "THEN j.start_time = to_timestamp(t.start_time) ELSE true END")
_ASSIGN_KEYS = (
    sql.SQL("UPDATE {} SET cluster = coalesce(cluster, (SELECT value FROM jobio_setting "
            "WHERE name = 'cluster'), 'default')").format(_TEMP),
    sql.SQL("UPDATE {} t SET (job, run) = (SELECT j.job, j.run FROM job j WHERE " + RUN_MATCH
            + " ORDER BY j.run DESC LIMIT 1)").format(_TEMP),
    # two records matched one stored run (it had no start yet, they do): the later start
    # keeps it, the others become runs of their own
    sql.SQL("UPDATE {t} SET job = NULL WHERE ctid IN (SELECT c FROM (SELECT ctid AS c, "
            "row_number() OVER (PARTITION BY job ORDER BY start_time DESC NULLS LAST) AS k "
            "FROM {t} WHERE job IS NOT NULL) x WHERE k > 1)").format(t=_TEMP),
    sql.SQL("WITH n AS (SELECT ctid AS c, row_number() OVER (PARTITION BY cluster, job_raw "
            "ORDER BY start_time NULLS LAST, sluid) AS k FROM {t} WHERE job IS NULL) "
            "UPDATE {t} t SET job = nextval('job_key_seq'), run = n.k + coalesce("
            "(SELECT max(j.run) FROM job j WHERE j.cluster = t.cluster "
            "AND j.job_raw = t.job_raw), -1) FROM n WHERE t.ctid = n.c").format(t=_TEMP),
)


def job_key(conn: psycopg.Connection, r: JobRecord) -> int | None:
    """The row key of the stored run `r` is (after upsert_jobs), or None."""
    row = conn.execute(
        "SELECT j.job FROM job j, (SELECT coalesce(%s, (SELECT value FROM jobio_setting "
        "WHERE name = 'cluster'), 'default') AS cluster, %s::bigint AS job_raw, "
        "%s::text AS sluid, %s::float8 AS start_time) t WHERE " + RUN_MATCH
        + " ORDER BY j.run DESC LIMIT 1", (r.cluster, r.job, r.sluid, r.start)).fetchone()
    return None if row is None else int(row[0])


def _sync_job_nodes(cur: psycopg.Cursor, jobs: list[int]) -> None:
    """Make the job_node rows of `jobs` match their (merged) job rows: one row per node,
    carrying the uid and times that `:uid:host` recovery matches on.

    Incremental rather than delete-and-insert: most updates change a state or an end time,
    not the nodes, and rewriting every job_node row (two foreign-key checks and three index
    entries each) was most of the cost of a re-sync.
    """
    cur.execute(
        """
        DELETE FROM job_node jn USING job j, host h
        WHERE j.job = ANY(%s::bigint[]) AND jn.job = j.job AND h.host_id = jn.host_id
          AND NOT h.name = ANY(j.nodes)
        """,
        (jobs,),
    )
    cur.execute(
        """
        INSERT INTO job_node AS jn (host_id, job, uid, start_time, end_time)
        SELECT h.host_id, j.job, j.uid, j.start_time, j.end_time
        FROM job j CROSS JOIN LATERAL unnest(j.nodes) AS n(name)
        JOIN host h ON h.name = n.name
        WHERE j.job = ANY(%s::bigint[])
        ORDER BY h.host_id, j.job
        ON CONFLICT (host_id, job) DO UPDATE
        SET uid = EXCLUDED.uid, start_time = EXCLUDED.start_time, end_time = EXCLUDED.end_time
        WHERE (jn.uid, jn.start_time, jn.end_time)
              IS DISTINCT FROM (EXCLUDED.uid, EXCLUDED.start_time, EXCLUDED.end_time)
        """,
        (jobs,),
    )


# -- reading the job table: every reader of a job record (the mails, show, the service,
# daily, attribution) needs these, not only attribution.

JOB_COLS = ("job, jobid, uid, user_name, account, partition, name, nodes, "
            "extract(epoch FROM start_time)::float8, extract(epoch FROM end_time)::float8, "
            "state, exit_code, work_dir, submit_line, sluid, job_raw, cluster, run")


def info_row(r: tuple) -> JobInfo:
    """A row of `SELECT JOB_COLS FROM job` as a JobInfo (attribute.stored reads the same)."""
    return JobInfo(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(r[7] or ()), r[8], r[9],
                   r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[17])


def find_jobs(conn: psycopg.Connection, spec: str, clusters: list[str] | None = None
              ) -> list[JobInfo]:
    """Jobs named like sacct -j: `123` (a job, every task of array 123, every component of
    het job 123), `5_1` (one task), `1853+1` (one het component); a `.step` is ignored.
    Every cluster's and every run's rows, unless `clusters` (sacct -M) narrows them."""
    base = spec.split(".", 1)[0]
    where = "" if clusters is None else " AND cluster = ANY(%(c)s)"
    if "_" in base or "+" in base:
        rows = conn.execute(f"SELECT {JOB_COLS} FROM job WHERE jobid = %(s)s{where} "
                            "ORDER BY cluster, run", {"s": base, "c": clusters})
    else:
        n = int(base)
        rows = conn.execute(
            f"SELECT {JOB_COLS} FROM job WHERE (job_raw = %(n)s OR array_job = %(n)s "
            f"OR jobid LIKE %(p)s){where} ORDER BY cluster, array_job NULLS FIRST, "
            "jobid <> %(s)s, job_raw, run", {"n": n, "p": f"{n}+%", "s": str(n), "c": clusters})
    return [info_row(r) for r in rows]


def job_by_key(conn: psycopg.Connection, key: int) -> JobInfo | None:
    """The job row with row key `key` (report_queue, job_io and the others hold keys)."""
    r = conn.execute(f"SELECT {JOB_COLS} FROM job WHERE job = %s", (key,)).fetchone()
    return None if r is None else info_row(r)


def raw_ids(conn: psycopg.Connection, keys: list[int]) -> list[int]:
    """The distinct raw ids (what sacct -j takes) of the rows `keys`."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT job_raw FROM job WHERE job = ANY(%s) ORDER BY 1", (keys,))]


def user_jobs(conn: psycopg.Connection, user: str | None, start: float, end: float
              ) -> list[JobInfo]:
    """Jobs of a user (all users when None) that ran in [start, end]."""
    q = (f"SELECT {JOB_COLS} FROM job WHERE start_time <= %s "
         "AND coalesce(end_time, 'infinity') >= %s")
    args: list[Any] = [_ts(end), _ts(start)]
    if user is not None:
        q += " AND user_name = %s"
        args.append(user)
    return [info_row(r) for r in conn.execute(q + " ORDER BY start_time, job", args)]


def raw_ids_of(conn: psycopg.Connection, keys: list[int]) -> dict[int, int]:
    """row key -> raw id (JobIDRaw) of the rows `keys`."""
    return dict(conn.execute("SELECT job, job_raw FROM job WHERE job = ANY(%s)",
                             (keys,)).fetchall())
