"""A job's stored figures: every read and write of job_io and job_io_hour (query module).

Attribution computes a job's figures (attribute.core over what attribute.sql fetches); this
module is the only one that stores them, reads them back, and says how current they are
(complete: every collector read past the job's end; current: no batch ingested since they
were computed; stale: complete, but a batch ingested since may hold late data of the job).
Which of them a reader gets is decided once, in attribute.figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from slurm_io.attribute.core import JobIO
from slurm_io.attribute.result import ranges_from_json, ranges_json
from slurm_io.jobs.info import JobInfo, JobWindow
from slurm_io.jobs.store import JOB_COLS, info_row
from slurm_io.store.bulk import copy_rows
from slurm_io.store.sqlutil import ts as _ts


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
    "ranges = EXCLUDED.ranges, "
    "ranges_revision = job_io.revision + (job_io.totals <> EXCLUDED.totals)::int, "
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
                                   data_until, ranges, ranges_revision)
               VALUES (%s, %s, now(), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1,
                       jobio_newest_ingest(), %s, 1)
               """ + UPSERT_JOB_IO + " RETURNING revision",
            (j.job, j.uid, complete, json.dumps(io.totals), json.dumps(io.recovered),
             json.dumps(io.ambiguous), json.dumps(io.by_target), json.dumps(io.by_node),
             json.dumps(io.timeline), json.dumps(io.quality), json.dumps(io.split),
             json.dumps(io.by_evidence), json.dumps(io.by_time), io.n_direct,
             io.n_recovered, json.dumps(ranges_json(io.ranges))))
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
            "coalesce(jobio_newest_ingest(), '-infinity'), "
            # a range left by a newer release's revision only (sql/0022)
            "CASE WHEN ranges_revision = revision THEN ranges END")


def stored_job_io(conn: psycopg.Connection, job: int) -> StoredIO | None:
    """The stored figures of a job, or None (not attributed yet). `hours` are not read:
    job_io_hour is for the views over time (LASSi, daily)."""
    r = conn.execute(f"SELECT {_IO_COLS} FROM job_io WHERE job = %s", (job,)).fetchone()
    if r is None:
        return None
    io = JobIO(job, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
               {}, ranges_from_json(r[16]))
    return StoredIO(io, r[12], r[13], r[14], r[15])


class HourRow(NamedTuple):
    """One stored hour of a job's figures (job_io_hour): hours (h, h + 1 h] of ts_end."""

    job: int  # the row key
    hour: float
    fs: str
    kind: str  # MDT or OST
    uid: int | None
    totals: dict[str, int]
    recovered: dict[str, int]  # the part of totals from `:uid:host` deltas


def stored_hours(conn: psycopg.Connection, start: float, end: float, jobs: list[int] | None = None
                 ) -> list[HourRow]:
    """The stored hours in [start, end) (of `jobs` only, when given)."""
    q = ("SELECT job, extract(epoch FROM hour)::float8, fs, kind, uid, totals, recovered "
         "FROM job_io_hour WHERE hour >= %s AND hour < %s")
    args: list[Any] = [_ts(start), _ts(end)]
    if jobs is not None:
        q += " AND job = ANY(%s)"
        args.append(jobs)
    return [HourRow._make(r) for r in conn.execute(q, args)]


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


_PENDING = (f"SELECT {JOB_COLS} FROM job WHERE (job IN (SELECT j.job "
            "FROM job j LEFT JOIN job_io io USING (job) "
            "WHERE j.end_time >= %s AND j.start_time IS NOT NULL "
            "AND (io.job IS NULL OR NOT io.complete)) OR job = ANY(%s))")


def pending_jobs(conn: psycopg.Connection, since: float, limit: int | None = None
                 ) -> list[JobInfo]:
    """Finished jobs (ended after `since`) without a complete attribution yet, and those
    whose stored figures late data may change (stale_jobs), in order of their end."""
    q = _PENDING + " ORDER BY end_time, job"
    if limit:
        q += f" LIMIT {int(limit)}"
    return [info_row(r) for r in conn.execute(q, (_ts(since), stale_jobs(conn, since)))]


def pending_pages(conn: psycopg.Connection, since: float, stale: list[int],
                  limit: int | None, *, page: int) -> Iterator[list[JobInfo]]:
    """pending_jobs a page at a time (`stale`: stale_jobs, asked once), each page after the
    last one's (end, job): a run that commits as it goes neither holds the whole backlog
    nor meets a job twice, and the jobs it stored meanwhile do not shift the pages."""
    first = _PENDING + " ORDER BY end_time, job LIMIT %s"
    # after the previous page's last job, compared as stored (no float round trip)
    then = (_PENDING + " AND (end_time, job) > (SELECT end_time, job FROM job WHERE job = %s)"
            " ORDER BY end_time, job LIMIT %s")
    last: int | None = None
    left = limit if limit else None
    while left is None or left > 0:
        size = page if left is None else min(page, left)
        rows = conn.execute(first, (_ts(since), stale, size)) if last is None else \
            conn.execute(then, (_ts(since), stale, last, size))
        jobs = [info_row(r) for r in rows]
        if not jobs:
            return
        yield jobs
        last = jobs[-1].job
        if left is not None:
            left -= len(jobs)
        if len(jobs) < size:
            return


_STAGE_COLS = ("job", "uid", "complete", "totals", "recovered", "ambiguous", "by_target",
               "by_node", "timeline", "quality", "split", "by_evidence", "by_time",
               "n_direct", "n_recovered", "ranges")


def store_many(conn: psycopg.Connection, results: Sequence[tuple[JobWindow, JobIO, bool]],
               data_until: datetime | None) -> None:
    """Store (replace) many jobs' figures: one COPY into a temporary table, one upsert (the
    revision rule of store_job_io), and their hours by one COPY."""
    if not results:
        return
    last = {j.job: (j, io, c) for j, io, c in results}  # a job given twice: its last figures
    d = json.dumps
    with conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _jobio_io_stage "
                    "(LIKE job_io INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
        cur.execute("TRUNCATE _jobio_io_stage")
        with cur.copy(f"COPY _jobio_io_stage ({', '.join(_STAGE_COLS)}) FROM STDIN") as cp:
            for j, io, complete in last.values():
                cp.write_row((j.job, j.uid, complete, d(io.totals), d(io.recovered),
                              d(io.ambiguous), d(io.by_target), d(io.by_node),
                              d(io.timeline), d(io.quality), d(io.split), d(io.by_evidence),
                              d(io.by_time), io.n_direct, io.n_recovered,
                              d(ranges_json(io.ranges))))
        cols = ", ".join(_STAGE_COLS)
        cur.execute(
            f"INSERT INTO job_io ({cols}, computed_at, revision, data_until, ranges_revision) "
            f"SELECT {cols}, now(), 1, %s, 1 FROM _jobio_io_stage " + UPSERT_JOB_IO,
            (data_until,))
        cur.execute("TRUNCATE _jobio_io_stage")
    store_hours(conn, list(last), [r for j, io, _ in last.values() for r in _hour_rows(j, io)])


def newest_ingest(conn: psycopg.Connection) -> datetime | None:
    """When the newest batch was ingested: what stored figures computed now are current to."""
    (newest,) = conn.execute("SELECT jobio_newest_ingest()").fetchone() or (None,)
    return newest


def attributed_on_hosts(conn: psycopg.Connection, host_ids: list[int], lo: float, hi: float
                        ) -> set[int]:
    """The jobs with stored figures that ran on one of `host_ids` during (lo, hi) (LASSi
    takes their shares of `:uid:host` deltas from their stored hours)."""
    return {r[0] for r in conn.execute(
        "SELECT io.job FROM job_io io JOIN job_node jn USING (job) "
        "WHERE jn.host_id = ANY(%s) AND jn.start_time < %s "
        "AND coalesce(jn.end_time, 'infinity') > %s", (host_ids, _ts(hi), _ts(lo)))}
