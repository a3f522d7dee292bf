"""The exporter's health queries (the interval's load comes from report/sql.py)."""

from __future__ import annotations

from typing import Any

import psycopg


def collectors(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    """(collector, read time, ingest time, problems, rows) of each collector's newest batch of
    the last 7 days (the primary key (collector, seq) serves the DISTINCT ON)."""
    return conn.execute(
        "SELECT DISTINCT ON (collector) collector, extract(epoch FROM read_time)::float8, "
        "extract(epoch FROM ingested_at)::float8, n_problems, n_rows FROM ingest_batch "
        "WHERE read_time > now() - interval '7 days' ORDER BY collector, seq DESC").fetchall()


def problems(conn: psycopg.Connection) -> list[tuple[str, int, int]]:
    """(source, rows ever, rows in the last hour) of the quarantine (`problem`)."""
    return conn.execute(
        "SELECT source, count(*), count(*) FILTER (WHERE seen_at > now() - interval '1 hour') "
        "FROM problem GROUP BY source").fetchall()


def report_queue(conn: psycopg.Connection) -> list[tuple[str, int]]:
    """(state, rows) of the job report queue."""
    return conn.execute("SELECT state, count(*) FROM report_queue GROUP BY state").fetchall()
