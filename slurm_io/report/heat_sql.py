"""The stored heat-map hours (sql/0024, report.heat_hours): what each hour covered, its
counts, and the ingest batches an hour's summary is checked against.

Apart from report.daily_sql, which computes the counts from the deltas (through
store.tiers, as every reader of deltas): this module reads and writes only the summary
tables and ingest_batch's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.report.daily_sql import HeatCount
from slurm_io.store.sqlutil import ts

if TYPE_CHECKING:
    from psycopg import Connection


class Covered(NamedTuple):
    """The ingest batches of an hour: those with read_time (their deltas' ts_end) in
    (hour, hour + 1 h], by number and newest ingested_at. Any batch that comes later for the
    hour changes one or the other (a late or replayed batch: one more, a newer time)."""

    batches: int
    newest: datetime | None


class StoredHour(NamedTuple):
    """An hour's summary as stored: what it covered, and the first interval its deltas
    spread to (before the hour's own: a long delta reaches back into an earlier hour)."""

    hour: datetime
    day_first: int
    covered: Covered
    reach: int | None


def usable(conn: Connection) -> bool:
    """Whether the summaries can be kept here: the tables exist (sql/0024) and this role
    may write them (the writer of `jobio daily`; any other reads the deltas as before)."""
    row = conn.execute(
        "SELECT to_regclass('heat_hour') IS NOT NULL AND "
        "has_table_privilege('heat_hour', 'INSERT') AND "
        "has_table_privilege('heat_hour_count', 'INSERT')").fetchone()
    return bool(row and row[0])


def covered(conn: Connection, lo: float, hi: float) -> dict[datetime, Covered]:
    """The ingest batches of each hour of (lo, hi] (lo, hi whole hours), by hour start;
    hours without a batch are absent."""
    rows = conn.execute(
        "SELECT date_trunc('hour', read_time - interval '1 microsecond', 'UTC'), count(*), "
        "max(ingested_at) FROM ingest_batch WHERE read_time > %s AND read_time <= %s "
        "GROUP BY 1", (ts(lo), ts(hi))).fetchall()
    return {h: Covered(n, newest) for h, n, newest in rows}


def stored(conn: Connection, lo: float, hi: float, width: float, base: float
           ) -> dict[datetime, StoredHour]:
    """The summaries of the hours in [lo, hi) at this width and base, by hour start."""
    rows = conn.execute(
        "SELECT hour, day_first, batches, newest, reach FROM heat_hour "
        "WHERE hour >= %s AND hour < %s AND width = %s AND base = %s",
        (ts(lo), ts(hi), width, base)).fetchall()
    return {h: StoredHour(h, f, Covered(n, newest), r) for h, f, n, newest, r in rows}


def counts(conn: Connection, hours: list[datetime], width: float, base: float
           ) -> list[HeatCount]:
    """The stored counts of these hours."""
    if not hours:
        return []
    return [HeatCount(*r) for r in conn.execute(
        "SELECT metric, b, k, n FROM heat_hour_count "
        "WHERE hour = ANY(%s) AND width = %s AND base = %s", (hours, width, base))]


def store(conn: Connection, hour: StoredHour, width: float, base: float,
          rows: Iterable[HeatCount]) -> None:
    """Replace one hour's summary with `rows`; commits (an hour is stored whole or not)."""
    with conn.transaction():
        # two runs making the same hour (a pack and a daily): one after the other
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('heat_hour'), %s)",
                     (int(hour.hour.timestamp() // 3600),))
        conn.execute("DELETE FROM heat_hour WHERE hour = %s AND width = %s AND base = %s",
                     (hour.hour, width, base))
        conn.execute(
            "INSERT INTO heat_hour (hour, width, base, day_first, batches, newest, reach) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (hour.hour, width, base, hour.day_first, hour.covered.batches,
             hour.covered.newest, hour.reach))
        with conn.cursor().copy(
                "COPY heat_hour_count (hour, width, base, metric, b, k, n) FROM STDIN") as cp:
            for r in rows:
                cp.write_row((hour.hour, width, base, r.metric, r.b, r.k, r.n))
    conn.commit()


def forget_before(conn: Connection, t: float) -> int:
    """Delete the summaries of hours before `t` (their raw days were dropped: a report of
    such a day reads what is left of its deltas, as before); commits. Returns the hours."""
    with conn.transaction():
        n = conn.execute("DELETE FROM heat_hour WHERE hour < %s", (ts(t),)).rowcount
    conn.commit()
    return n
