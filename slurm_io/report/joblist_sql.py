"""The queries of a user's job list (report.joblist): stored figures and LASSi risks of many
jobs at once, so that a list of 500 jobs costs three queries, not a `figures` call per job."""

from __future__ import annotations

from typing import Any, NamedTuple

import psycopg

from slurm_io.store.sqlutil import has_tables


class StoredSummary(NamedTuple):
    """What the list shows of a job's stored figures (job_io): the whole row is not read."""

    totals: dict[str, int]
    quality: dict[str, Any]
    complete: bool
    revision: int
    current: bool  # no batch ingested since: recomputing would give the same
    # {"read_bytes": {"least": L, "most": M}, ...} of the attribution ranges (sql/0022)
    # when stored for this revision; None: none (a row an older release revised)
    ranges: dict[str, Any] | None


def stored_summaries(conn: psycopg.Connection, keys: list[int]) -> dict[int, StoredSummary]:
    """row key -> the stored figures of those of `keys` that have them (row-level security
    decides which the caller reads, as for every reader)."""
    rows = conn.execute(
        "SELECT job, totals, quality, complete, revision, "
        "coalesce(data_until, '-infinity') >= coalesce(jobio_newest_ingest(), '-infinity'), "
        "CASE WHEN ranges_revision = revision THEN ranges END "
        "FROM job_io WHERE job = ANY(%s)", (keys,))
    return {r[0]: StoredSummary(r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows}


def worst_risks(conn: psycopg.Connection, raw_ids: list[int]) -> dict[int, tuple[float, float]]:
    """raw id -> (worst risk_oss, worst risk_mds) over the job's stored LASSi hours."""
    if not raw_ids or not has_tables(conn):
        return {}
    rows = conn.execute("SELECT job, max(risk_oss), max(risk_mds) FROM lassi_job_hour "
                        "WHERE job = ANY(%s) GROUP BY job", (raw_ids,))
    return {r[0]: (float(r[1]), float(r[2])) for r in rows}
