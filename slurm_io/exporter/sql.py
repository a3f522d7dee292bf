"""The exporter's health queries (the interval's load comes from report/sql.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from psycopg import Connection


class CollectorBatch(NamedTuple):
    """A collector's newest batch: when it was read and stored, its problems and rows."""

    collector: str
    read_time: float
    ingested_at: float
    n_problems: int
    n_rows: int


class ProblemSource(NamedTuple):
    """Records one source had refused: ever, and in the last hour."""

    source: str
    total: int
    last_hour: int


class QueueState(NamedTuple):
    """Rows of the job report queue in one state."""

    state: str
    rows: int


def collectors(conn: Connection) -> list[CollectorBatch]:
    """Each collector's newest batch of the last 7 days (the primary key (collector, seq)
    serves the DISTINCT ON)."""
    return [CollectorBatch(*r) for r in conn.execute(
        "SELECT DISTINCT ON (collector) collector, extract(epoch FROM read_time)::float8, "
        "extract(epoch FROM ingested_at)::float8, n_problems, n_rows FROM ingest_batch "
        "WHERE read_time > now() - interval '7 days' ORDER BY collector, seq DESC").fetchall()]


def problems(conn: Connection) -> list[ProblemSource]:
    """The quarantine (`problem`) per source."""
    return [ProblemSource(*r) for r in conn.execute(
        "SELECT source, count(*), count(*) FILTER (WHERE seen_at > now() - interval '1 hour') "
        "FROM problem GROUP BY source").fetchall()]


def report_queue(conn: Connection) -> list[QueueState]:
    """The job report queue's rows per state."""
    return [QueueState(*r) for r in conn.execute(
        "SELECT state, count(*) FROM report_queue GROUP BY state").fetchall()]
