"""One sync or import run: fetch job records, fill in uids, upsert them (imperative shell).

Kept out of the CLI so that the hook of a later release and a systemd timer can run the same
steps with the same defaults.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.jobs.sacct import parse_sacct_text
from slurm_io.jobs.source import JobSource
from slurm_io.jobs.store import UpsertCounts, resume_end, upsert_isolated
from slurm_io.jobs.uids import fill_uids
from slurm_io.store import problems as quarantine

if TYPE_CHECKING:
    from psycopg import Connection

FIRST_SYNC_LOOKBACK = 7 * 86400  # an empty table starts with the last week
OVERLAP = 86400  # re-read the day before the newest stored end: late sacct updates


class RunResult(NamedTuple):
    fetched: int
    counts: UpsertCounts
    problems: list[str]  # one line per refused record or warning, for stderr
    since: float | None
    until: float | None
    skipped: int = 0  # records refused, each kept in the quarantine (`jobio problems`)


def default_since(newest: float | None, now: float) -> float:
    """Where a sync without --since starts: a day before the newest job end stored of the
    cluster synced (jobs that ended earlier but were still RUNNING/COMPLETING in sacct get
    their final record), or a week ago when nothing is stored yet."""
    return now - FIRST_SYNC_LOOKBACK if newest is None else newest - OVERLAP


def source_cluster(source: JobSource) -> str | None:
    """The cluster a source lists the jobs of, where it can tell (sacct: scontrol's
    ClusterName); None otherwise."""
    ask = getattr(source, "cluster", None)
    return ask() if callable(ask) else None


def sync_jobs(conn: Connection, source: JobSource, *, since: float | None,
              until: float | None, now: float) -> RunResult:
    """Records of jobs active in [since, until] from `source`, upserted; the records the
    source or the database refused are kept in the quarantine."""
    if since is None:
        since = default_since(resume_end(conn, source_cluster(source), now=now,
                                         stale=FIRST_SYNC_LOOKBACK), now)
    records = fill_uids(source.jobs(since, until))
    counts, in_db = upsert_isolated(conn, records, source="sacct")
    refused = list(getattr(source, "refused", [])) + in_db
    keep_refused(conn, refused, new_only=True)
    return RunResult(len(records) - len(in_db), counts,
                     list(getattr(source, "problems", [])) + _messages(in_db), since, until,
                     len(refused))


def import_sacct_text(conn: Connection, text: str, *,
                      tz: tzinfo | None = None, origin: str | None = None) -> RunResult:
    """`sacct -P` text (a file) upserted with source 'import'; bad lines are skipped and
    kept in the quarantine (origin `FILE line N`)."""
    read = parse_sacct_text(text, source="import", tz=tz)
    records = fill_uids(read.jobs)
    counts, in_db = upsert_isolated(conn, records, source="sacct")
    refused = read.refused + in_db
    if origin:
        refused = [p._replace(origin=f"{origin} {p.origin}") for p in refused]
    keep_refused(conn, refused)
    return RunResult(len(records) - len(in_db), counts, read.messages + _messages(in_db),
                     None, None, len(refused))


def _messages(refused: list[quarantine.Problem]) -> list[str]:
    return [f"{p.origin}: {p.reason}" for p in refused]


def keep_refused(conn: Connection, refused: list[quarantine.Problem], *,
                 new_only: bool = False) -> int:
    """Put refused records into the quarantine; how many rows were added.

    `new_only`: leave out records already quarantined in the last week. A periodic sync
    reads overlapping windows (a day, every few minutes), so the same bad sacct line comes
    back at every run; it is kept once, not once per run.
    """
    if new_only and refused:
        data = [_record_bytes(p.record) for p in refused]
        known = quarantine.kept_recently(conn, (p.source for p in refused),
                                         [d for d in data if d is not None])
        refused = [p for p, d in zip(refused, data, strict=True) if d is None or d not in known]
    if refused:
        with conn.transaction():
            quarantine.record(conn, refused)
    return len(refused)


def _record_bytes(record: bytes | str | None) -> bytes | None:
    if record is None or isinstance(record, bytes):
        return record
    try:
        return record.encode("utf-8", "surrogateescape")[:quarantine.MAX_RECORD_BYTES]
    except UnicodeEncodeError:
        return None
