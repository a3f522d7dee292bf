"""One sync or import run: fetch job records, fill in uids, upsert them (imperative shell).

Kept out of the CLI so that the hook of a later release and a systemd timer can run the same
steps with the same defaults.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import NamedTuple

import psycopg

from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.source import JobSource
from slurm_io.jobs.store import UpsertCounts, newest_end, upsert_job_counts
from slurm_io.jobs.uids import fill_uids

FIRST_SYNC_LOOKBACK = 7 * 86400  # an empty table starts with the last week
OVERLAP = 86400  # re-read the day before the newest stored end: late sacct updates


class RunResult(NamedTuple):
    fetched: int
    counts: UpsertCounts
    problems: list[str]
    since: float | None
    until: float | None


def default_since(newest: float | None, now: float) -> float:
    """Where a sync without --since starts: a day before the newest job end stored (jobs
    that ended earlier but were still RUNNING/COMPLETING in sacct get their final record),
    or a week ago when nothing is stored yet."""
    return now - FIRST_SYNC_LOOKBACK if newest is None else newest - OVERLAP


def sync_jobs(conn: psycopg.Connection, source: JobSource, *, since: float | None,
              until: float | None, now: float) -> RunResult:
    """Records of jobs active in [since, until] from `source`, upserted."""
    if since is None:
        since = default_since(newest_end(conn), now)
    records = fill_uids(source.jobs(since, until))
    counts = upsert_job_counts(conn, records)
    return RunResult(len(records), counts, list(getattr(source, "problems", [])), since, until)


def import_sacct_text(conn: psycopg.Connection, text: str, *,
                      tz: tzinfo | None = None) -> RunResult:
    """`sacct -P` text (a file) upserted with source 'import'."""
    records, problems = parse_sacct(text, source="import", tz=tz)
    records = fill_uids(records)
    return RunResult(len(records), upsert_job_counts(conn, records), problems, None, None)
