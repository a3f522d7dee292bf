"""Fetching what attribution needs from PostgreSQL, and storing its results (thin adapter).

Three indexed queries per job: deltas naming the job (jobstats_delta_job), `:uid:host`
deltas on its nodes in its window (jobstats_delta_host_ts, which holds only those), and the
jobs of the same uid on those nodes (job_node_host_uid). All decisions are made in attribute.core.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from itertools import compress
from typing import Any, NamedTuple

import psycopg

from slurm_io.attribute.core import DeltaRow, JobIO, JobWindow, attribute
from slurm_io.attribute.evidence import WINDOWS
from slurm_io.attribute.shared_ids import own_deltas
from slurm_io.model import BYTE_COUNTERS, OP_COUNTERS, IdClass
from slurm_io.store.bulk import copy_rows

_COUNTER_COLS: list[tuple[str, str]] = []
for _b in BYTE_COUNTERS:
    _COUNTER_COLS += [(_b, f"d.{_b}"), (f"{_b}_samples", f"d.{_b}_samples")]
_COUNTER_COLS += [(op, f"d.op_{op}") for op in OP_COUNTERS]

DELTA_COLUMNS = (
    "SELECT extract(epoch FROM d.ts_start)::float8, extract(epoch FROM d.ts_end)::float8, "
    "extract(epoch FROM d.last_update)::float8, t.name, h.name, d.id_class, d.job, d.uid, "
    "d.read_bytes_min, d.read_bytes_max, d.read_bytes_hist, "
    "d.write_bytes_min, d.write_bytes_max, d.write_bytes_hist, d.extra, "
    "extract(epoch FROM d.entry_start)::float8, "
    + ", ".join(col for _, col in _COUNTER_COLS)
)
DELTA_FROM = (" FROM jobstats_delta d JOIN fs_target t USING (target_id) "
              "LEFT JOIN host h USING (host_id) ")
DELTA_SELECT = DELTA_COLUMNS + DELTA_FROM
_N_FIXED = 16
_NAMES = [name for name, _ in _COUNTER_COLS]
# deltas naming a job may come up to a day late or early (clock skew, late collectors)
MARGIN = 86400.0


class JobInfo(NamedTuple):
    """A job record as `show` prints it (from the job table)."""

    job: int
    jobid: str
    uid: int | None
    user: str | None
    account: str | None
    partition: str | None
    name: str | None
    nodes: tuple[str, ...]
    start: float | None
    end: float | None
    state: str | None
    exit_code: str | None
    work_dir: str | None
    submit_line: str | None
    sluid: str | None = None  # Slurm 24.11+ (sacct), 25.11+ (hook env)
    raw: int | None = None  # JobIDRaw (job is the row key, sql/0020); None: same as job
    cluster: str | None = None
    run: int = 0  # 0: first run, n: after the n-th requeue

    @property
    def raw_id(self) -> int:
        return self.job if self.raw is None else self.raw

    @property
    def window(self) -> JobWindow:
        return JobWindow(self.job, self.uid, self.nodes, self.start, self.end, self.raw_id,
                         self.cluster)


def _ts(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, UTC)


def _hist(v: Any) -> tuple[tuple[str, int], ...] | None:
    if not v:
        return None
    return tuple((k, int(c)) for k, c in v.items())


def delta_rows(cur: psycopg.Cursor) -> list[DeltaRow]:
    """The fetched rows as DeltaRows: counters keep their non-zero values (the columns are
    bigint: no conversion; a zero delta is stored as NULL). Per row as little Python as
    possible: a batch converts some 10^5 rows (bench/bench_show.py batch)."""
    out = []
    append = out.append
    make = DeltaRow._make
    names = _NAMES
    n = _N_FIXED
    for r in cur.fetchall():
        vals = r[n:]
        counters = dict(compress(zip(names, vals, strict=True), vals))
        if r[14]:
            for k, v in r[14].items():
                counters[k] = counters.get(k, 0) + int(v)
        rs, ws = r[n + 1], r[n + 3]  # read_bytes_samples, write_bytes_samples
        if rs or ws:
            sizes = {}
            if rs:
                sizes["read"] = (rs, r[8], r[9], _hist(r[10]))
            if ws:
                sizes["write"] = (ws, r[11], r[12], _hist(r[13]))
        else:
            sizes = {}
        append(make((r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], counters, sizes, r[15])))
    return out


_JOB_COLS = ("job, jobid, uid, user_name, account, partition, name, nodes, "
             "extract(epoch FROM start_time)::float8, extract(epoch FROM end_time)::float8, "
             "state, exit_code, work_dir, submit_line, sluid, job_raw, cluster, run")


def _info(r: tuple) -> JobInfo:
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
        rows = conn.execute(f"SELECT {_JOB_COLS} FROM job WHERE jobid = %(s)s{where} "
                            "ORDER BY cluster, run", {"s": base, "c": clusters})
    else:
        n = int(base)
        rows = conn.execute(
            f"SELECT {_JOB_COLS} FROM job WHERE (job_raw = %(n)s OR array_job = %(n)s "
            f"OR jobid LIKE %(p)s){where} ORDER BY cluster, array_job NULLS FIRST, "
            "jobid <> %(s)s, job_raw, run", {"n": n, "p": f"{n}+%", "s": str(n), "c": clusters})
    return [_info(r) for r in rows]


def job_by_key(conn: psycopg.Connection, key: int) -> JobInfo | None:
    """The job row with row key `key` (report_queue, job_io and the others hold keys)."""
    r = conn.execute(f"SELECT {_JOB_COLS} FROM job WHERE job = %s", (key,)).fetchone()
    return None if r is None else _info(r)


def raw_ids(conn: psycopg.Connection, keys: list[int]) -> list[int]:
    """The distinct raw ids (what sacct -j takes) of the rows `keys`."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT job_raw FROM job WHERE job = ANY(%s) ORDER BY 1", (keys,))]


def user_jobs(conn: psycopg.Connection, user: str | None, start: float, end: float
              ) -> list[JobInfo]:
    """Jobs of a user (all users when None) that ran in [start, end]."""
    q = (f"SELECT {_JOB_COLS} FROM job WHERE start_time <= %s "
         "AND coalesce(end_time, 'infinity') >= %s")
    args: list[Any] = [_ts(end), _ts(start)]
    if user is not None:
        q += " AND user_name = %s"
        args.append(user)
    return [_info(r) for r in conn.execute(q + " ORDER BY start_time, job", args)]


def direct_deltas(conn: psycopg.Connection, j: JobWindow, now: float) -> list[DeltaRow]:
    """Deltas naming the job's raw id; where other rows share it (another cluster, another
    run), only those attribute.owners gives this row (attribute.shared_ids)."""
    return own_deltas(conn, j, _deltas_naming(conn, j, now), now)


def _deltas_naming(conn: psycopg.Connection, j: JobWindow, now: float) -> list[DeltaRow]:
    q = DELTA_SELECT + "WHERE d.job = %s"
    args: list[Any] = [j.raw_id]
    if j.start is not None:
        q += " AND d.ts_end >= %s"
        args.append(_ts(j.start - MARGIN))
        q += " AND d.ts_end <= %s"
        args.append(_ts((j.end if j.end is not None else now) + MARGIN))
    with conn.cursor() as cur:
        cur.execute(q, args)
        return delta_rows(cur)


# The id class is a constant in the text, not a parameter: jobstats_delta_host_ts only holds
# JOB_MISSING rows (sql/0008), and a generic plan cannot match a parameter to that predicate.
RECOVERED_SQL = (
    DELTA_SELECT + "WHERE d.host_id = ANY(SELECT host_id FROM host WHERE name = ANY(%s)) "
    f"AND d.uid = %s AND d.id_class = {int(IdClass.JOB_MISSING)} "
    "AND d.ts_end > %s AND d.ts_start < %s "
    # an interval is at most a collector outage long: bound ts_end for partition pruning
    "AND d.ts_end < %s"
)


def recovered_deltas(conn: psycopg.Connection, j: JobWindow, now: float, *, w: float = 0.0
                     ) -> list[DeltaRow]:
    """`:uid:host` deltas on the job's nodes in its run, widened by `w` on each side: with
    the evidence window, the blind stretches next to the run tell when the competitors could
    not be observed (attribute.evidence); outside the run the job gets none of them."""
    if j.uid is None or not j.nodes or j.start is None:
        return []
    end = j.end if j.end is not None else now
    with conn.cursor() as cur:
        cur.execute(RECOVERED_SQL, (list(j.nodes), j.uid, _ts(j.start - w), _ts(end + w),
                                    _ts(end + w + MARGIN)))
        return delta_rows(cur)


def competitors(conn: psycopg.Connection, j: JobWindow, lo: float, hi: float
                ) -> list[JobWindow]:
    """Jobs of the same uid with a node in common that ran during [lo, hi]."""
    rows = conn.execute(
        "SELECT j.job, j.uid, j.nodes, extract(epoch FROM j.start_time)::float8, "
        "extract(epoch FROM j.end_time)::float8, j.job_raw, j.cluster FROM job j "
        "WHERE j.job IN ("
        " SELECT jn.job FROM job_node jn JOIN host h USING (host_id)"
        " WHERE h.name = ANY(%s) AND jn.uid = %s AND jn.start_time < %s"
        " AND coalesce(jn.end_time, 'infinity') > %s)",
        (list(j.nodes), j.uid, _ts(hi), _ts(lo))).fetchall()
    return [JobWindow(r[0], r[1], tuple(r[2] or ()), r[3], r[4], r[5], r[6]) for r in rows]


def evidence_deltas(conn: psycopg.Connection, jobs: list[int], lo: float, hi: float
                    ) -> list[DeltaRow]:
    """Deltas naming any of the raw ids `jobs` that end in [lo, hi]: what they did by their
    own id."""
    if not jobs:
        return []
    with conn.cursor() as cur:
        cur.execute(DELTA_SELECT + "WHERE d.job = ANY(%s) AND d.ts_end >= %s AND d.ts_end <= %s",
                    (jobs, _ts(lo), _ts(hi)))
        return delta_rows(cur)


def attribute_job(conn: psycopg.Connection, j: JobWindow, *, now: float | None = None,
                  resolution: float = 120.0, splits: dict[Any, Any] | None = None,
                  evidence: bool = True) -> JobIO:
    """Fetch and attribute one job's I/O (`splits`: the batch's cache, core.attribute).
    `evidence=False` splits ambiguous deltas by time alone (for measuring, bench/accuracy)."""
    now = time.time() if now is None else now
    direct = direct_deltas(conn, j, now)
    rec = recovered_deltas(conn, j, now)
    comp: list[JobWindow] = []
    ev: list[DeltaRow] = []
    if rec:
        lo, hi = min(d.ts_start for d in rec), max(d.ts_end for d in rec)
        comp = competitors(conn, j, lo, hi)
        others = [c.raw_id for c in comp if c.job != j.job]
        if others and evidence:
            rec = recovered_deltas(conn, j, now, w=WINDOWS[-1])
            ev = evidence_deltas(conn, others, lo - WINDOWS[-1], hi + WINDOWS[-1] + MARGIN / 24)
    return attribute(j, direct, rec, comp, now=now, resolution=resolution, evidence=ev,
                     splits=splits, use_evidence=evidence)


def _hour_rows(j: JobWindow, io: JobIO) -> list[tuple[Any, ...]]:
    return [(j.job, _ts(h), fs, kind, j.uid, json.dumps(tot), json.dumps(rec))
            for (h, fs, kind), (tot, rec) in io.hours.items() if tot or rec]


# Replacing a job's stored figures: the revision counts the times its totals changed
# (docs/attribution.md); one clause for the single and the batch path (attribute.batch).
UPSERT_JOB_IO = (
    "ON CONFLICT (job) DO UPDATE SET uid = EXCLUDED.uid, computed_at = now(), "
    "complete = EXCLUDED.complete, totals = EXCLUDED.totals, "
    "recovered = EXCLUDED.recovered, ambiguous = EXCLUDED.ambiguous, "
    "by_target = EXCLUDED.by_target, by_node = EXCLUDED.by_node, "
    "timeline = EXCLUDED.timeline, quality = EXCLUDED.quality, split = EXCLUDED.split, "
    "by_evidence = EXCLUDED.by_evidence, by_time = EXCLUDED.by_time, "
    "n_direct = EXCLUDED.n_direct, n_recovered = EXCLUDED.n_recovered, "
    "revision = job_io.revision + (job_io.totals <> EXCLUDED.totals)::int, "
    "data_until = EXCLUDED.data_until")


def store_job_io(conn: psycopg.Connection, j: JobWindow, io: JobIO, complete: bool, *,
                 hours: bool = True) -> int:
    """Store (replace) the job's figures and hours; returns the revision: 1 for the first,
    one more each time the totals change (late data), unchanged when they do not.
    `hours=False`: the caller stores the hours (store_hours, once for a batch)."""
    with conn.cursor() as cur:
        cur.execute(
            """INSERT INTO job_io (job, uid, computed_at, complete, totals, recovered,
                                   ambiguous, by_target, by_node, timeline, quality, split,
                                   by_evidence, by_time, n_direct, n_recovered, revision,
                                   data_until)
               VALUES (%s, %s, now(), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1,
                       jobio_newest_ingest())
               """ + UPSERT_JOB_IO + " RETURNING revision",
            (j.job, j.uid, complete, json.dumps(io.totals), json.dumps(io.recovered),
             json.dumps(io.ambiguous), json.dumps(io.by_target), json.dumps(io.by_node),
             json.dumps(io.timeline), json.dumps(io.quality), json.dumps(io.split),
             json.dumps(io.by_evidence), json.dumps(io.by_time), io.n_direct,
             io.n_recovered))
        r = cur.fetchone()
    if hours:
        store_hours(conn, [j.job], _hour_rows(j, io))
    return r[0] if r else 1


def store_hours(conn: psycopg.Connection, jobs: list[int], rows: list[tuple[Any, ...]]) -> None:
    """Replace the stored hours of `jobs` by `rows` (one DELETE and one COPY)."""
    conn.execute("DELETE FROM job_io_hour WHERE job = ANY(%s)", (jobs,))
    with conn.cursor() as cur:
        copy_rows(cur, "job_io_hour",
                  ("job", "hour", "fs", "kind", "uid", "totals", "recovered"), rows)


class StoredIO(NamedTuple):
    """A job's stored figures (job_io) with what says how current they are."""

    io: JobIO
    complete: bool
    revision: int
    computed_at: float
    current: bool  # no batch was ingested since: computing again would give the same


_IO_COLS = ("totals, recovered, ambiguous, split, by_target, by_node, timeline, quality, "
            "n_direct, n_recovered, by_evidence, by_time, complete, revision, "
            "extract(epoch FROM computed_at)::float8, "
            "coalesce(data_until, '-infinity') >= "
            "coalesce(jobio_newest_ingest(), '-infinity')")


def stored_job_io(conn: psycopg.Connection, job: int) -> StoredIO | None:
    """The stored figures of a job, or None (not attributed yet). `hours` are not read:
    job_io_hour is for the views over time (LASSi, daily)."""
    r = conn.execute(f"SELECT {_IO_COLS} FROM job_io WHERE job = %s", (job,)).fetchone()
    if r is None:
        return None
    io = JobIO(job, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
               {})
    return StoredIO(io, r[12], r[13], r[14], r[15])


def stored_hours(conn: psycopg.Connection, start: float, end: float, jobs: list[int] | None = None
                 ) -> list[tuple[int, float, str, str, int | None, dict[str, int],
                                 dict[str, int]]]:
    """(job, hour, fs, kind, uid, totals, recovered) of stored hours in [start, end)."""
    q = ("SELECT job, extract(epoch FROM hour)::float8, fs, kind, uid, totals, recovered "
         "FROM job_io_hour WHERE hour >= %s AND hour < %s")
    args: list[Any] = [_ts(start), _ts(end)]
    if jobs is not None:
        q += " AND job = ANY(%s)"
        args.append(jobs)
    return [tuple(r) for r in conn.execute(q, args)]  # type: ignore[misc]


# A batch read later than this after a job's end holds nothing of the job unless its interval
# spans a collector outage; a batch ingested after the job's figures were stored and read
# before that holds late data of the job (a spooled batch, a collector back from an outage).
LATE_GRACE = 900.0


def stale_jobs(conn: psycopg.Connection, since: float) -> list[int]:
    """Complete jobs (ended after `since`) whose figures predate a batch that may hold their
    data: what re-attribution after late data recomputes."""
    return [r[0] for r in conn.execute(
        "SELECT io.job FROM job_io io JOIN job j USING (job) "
        "WHERE io.complete AND j.end_time >= %s AND EXISTS (SELECT 1 FROM ingest_batch b "
        " WHERE b.ingested_at > coalesce(io.data_until, '-infinity') "
        " AND b.read_time > j.start_time "
        " AND b.read_time <= j.end_time + make_interval(secs => %s))",
        (_ts(since), LATE_GRACE))]


def data_complete_until(conn: psycopg.Connection) -> float | None:
    """The time up to which every collector has read: the oldest of their newest reads.

    Through a SECURITY DEFINER function (sql/0017): users may not read ingest_batch."""
    r = conn.execute(
        "SELECT extract(epoch FROM jobio_data_complete_until())::float8").fetchone()
    return r[0] if r else None


def pending_jobs(conn: psycopg.Connection, since: float, limit: int | None = None
                 ) -> list[JobInfo]:
    """Finished jobs (ended after `since`) without a complete attribution yet, and those
    whose stored figures late data may change (stale_jobs)."""
    q = (f"SELECT {_JOB_COLS} FROM job WHERE job IN (SELECT j.job "
         "FROM job j LEFT JOIN job_io io USING (job) "
         "WHERE j.end_time >= %s AND j.start_time IS NOT NULL "
         "AND (io.job IS NULL OR NOT io.complete)) OR job = ANY(%s) ORDER BY end_time")
    if limit:
        q += f" LIMIT {int(limit)}"
    return [_info(r) for r in conn.execute(q, (_ts(since), stale_jobs(conn, since)))]


def attribute_jobs(conn: psycopg.Connection, jobs: list[JobInfo], *, now: float | None = None,
                   resolution: float = 120.0) -> tuple[int, int]:
    """Attribute and store many jobs; returns (stored, complete). Set-based fetching and
    bulk storing: attribute.batch."""
    from slurm_io.attribute.batch import attribute_jobs as batch

    return batch(conn, jobs, now=now, resolution=resolution)
