"""Retention of the stored results: the tier kept for years after the raw deltas are gone.

Raw deltas go by whole daily partitions (store.partitions.prune). The results of attribution
(job_io per job, job_io_hour per job and hour) and the LASSi hours are small (docs/storage.md
gives bytes per job and per day) and are deleted row by row past their own retention, which
the site sets in years.
"""

from __future__ import annotations

import psycopg

from slurm_io.store.sqlutil import ts as _ts

# (table, time column): what prune_results deletes, oldest tier last
_RESULT_TABLES: tuple[tuple[str, str], ...] = (
    ("job_io_hour", "hour"),
    ("lassi_job_hour", "hour"),
    ("lassi_fs_hour", "hour"),
    ("lassi_day", "day"),
)


def prune_results(conn: psycopg.Connection, before: float) -> dict[str, int]:
    """Delete stored results older than `before` (epoch): hours before it, and the per-job
    figures of jobs that ended before it. Commits; returns rows deleted per table."""
    out: dict[str, int] = {}
    cut = _ts(before)
    with conn.transaction():
        for table, col in _RESULT_TABLES:
            if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,):
                continue
            cur = conn.execute(f"DELETE FROM {table} WHERE {col} < %s", (cut,))
            out[table] = cur.rowcount
        cur = conn.execute("DELETE FROM job_io WHERE job IN (SELECT job FROM job "
                           "WHERE end_time < %s)", (cut,))
        out["job_io"] = cur.rowcount
    return out


def unattributed_before(conn: psycopg.Connection, before: float) -> int:
    """Finished jobs that ended before `before` without a complete stored attribution:
    dropping their raw deltas loses their figures."""
    r = conn.execute(
        "SELECT count(*) FROM job j LEFT JOIN job_io io USING (job) WHERE j.end_time < %s "
        "AND j.start_time IS NOT NULL AND (io.job IS NULL OR NOT io.complete)",
        (_ts(before),)).fetchone()
    return int(r[0]) if r else 0
