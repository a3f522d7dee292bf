"""The daily heat map from counts kept per closed hour (sql/0024), made once and remade only
for an hour that got data since.

Why: grouping a site's day of deltas into its ~19.5 M (series, interval) sums took ~150 s
of `jobio daily` (bench/README.md, "A day at a site"); the counts of an hour never change
once its data is in, so each hour is summed once -- by `jobio db pack` as hours close, or
by `jobio daily` for the hours it finds without a fresh summary -- and the report reads 24
hours of counts.

The same figures as report.daily_sql's statement over the whole day, because an interval's
counts depend only on the deltas spread into it: a normal delta lies whole in the interval
of its ts_end, so an hour's intervals get exactly the deltas with ts_end in (hour, hour +
1 h], summed here with the day's spreading (`first`: its first interval). A longer delta
(a missed read) is spread over every interval it spans, possibly into earlier hours: an hour
whose deltas do so records how far back (`reach`), and the hours from there to it are read
from the deltas together, as before. An hour's summary records the ingest batches it covered
(heat_sql.Covered); a batch that comes later for the hour (late data, a replayed spool, a
restore) makes it stale, and it is made again before it is read.

Only at a width that divides an hour (the collector period): any other `--interval` reads
the deltas as before, and so does a role that may not write the summaries.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from slurm_io.report import daily_sql, heat_sql
from slurm_io.report.daily_sql import HeatCount
from slurm_io.report.heat_sql import Covered, StoredHour
from slurm_io.store.sqlutil import no_jit

if TYPE_CHECKING:
    from psycopg import Connection

HOUR = 3600.0
DAY = 86400.0
BASE = 4.0  # the daily page's bins [4^k, 4^(k+1)): powers of 1024 fall on bin edges


# -- the pure part -----------------------------------------------------------------------------
def applies(start: float, end: float, width: float) -> bool:
    """Whether hours' counts make this range at this width: whole hours, intervals that
    divide an hour (so that no interval straddles two hours)."""
    return (width > 0 and HOUR % width == 0 and start % HOUR == 0 and end % HOUR == 0
            and end > start)


def hours(start: float, end: float) -> list[float]:
    """The hour starts of [start, end)."""
    return [start + i * HOUR for i in range(int((end - start) // HOUR))]


def fresh(have: StoredHour | None, now: Covered, day_first: int) -> bool:
    """Whether a stored summary still holds: made with the same spreading and covering the
    same batches as there are now."""
    return have is not None and have.day_first == day_first and have.covered == now


def joint_spans(reach: dict[float, int | None], width: float) -> list[tuple[float, float]]:
    """The ranges [lo, hi) of whole hours to read from the deltas together: from the hour a
    long delta reaches back into to the hour of that delta (merged when they overlap or
    touch). `reach`: per hour start, the first interval its deltas spread to."""
    spans: list[tuple[float, float]] = []
    for h in sorted(reach):
        r = reach[h]
        if r is None or r * width >= h:
            continue
        lo = (r * width // HOUR) * HOUR
        if spans and lo <= spans[-1][1]:
            spans[-1] = (min(spans[-1][0], lo), h + HOUR)
        else:
            spans.append((lo, h + HOUR))
    return spans


def own_rows(rows: Iterable[HeatCount], hour: float, width: float
             ) -> tuple[list[HeatCount], int | None]:
    """An hour's counts of its own intervals, and the first interval of all its rows."""
    rows = list(rows)
    reach = min((r.b for r in rows), default=None)
    first_own = int(hour // width)
    return [r for r in rows if r.b >= first_own], reach


# -- with the database ---------------------------------------------------------------------------
def _utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _raw_day(conn: Connection, start: float) -> bool:
    """Whether the day's raw deltas are kept: a pruned day's summaries are not read (its
    report reads what is left of its deltas, nothing, as before the summaries)."""
    from slurm_io.store import partitions

    return partitions.day_of(start) in partitions.existing_days(conn)


def make_hour(conn: Connection, hour: float, day_first: int, covering: Covered,
              width: float, base: float) -> StoredHour:
    """Sum one hour from its deltas and store it (replacing); commits."""
    no_jit(conn)
    rows, reach = own_rows(daily_sql.heat_counts(conn, hour, hour + HOUR, width, base,
                                                 first=day_first), hour, width)
    made = StoredHour(_utc(hour), day_first, covering, reach)
    heat_sql.store(conn, made, width, base, rows)
    return made


def ensure(conn: Connection, start: float, end: float, width: float, base: float,
           *, until: float | None = None) -> dict[float, StoredHour]:
    """Make the summaries of the hours of [start, end) (within one UTC day) that have none
    or a stale one; hours that end after `until` are left alone. Returns every hour's
    summary, made or found, by hour start (a left-alone hour is absent)."""
    return _ensure(conn, start, end, width, base, until)[0]


def _ensure(conn: Connection, start: float, end: float, width: float, base: float,
            until: float | None) -> tuple[dict[float, StoredHour], int]:
    """ensure(), and how many hours it made."""
    day_first = int((start // DAY) * DAY // width)
    now = heat_sql.covered(conn, start, end)
    have = heat_sql.stored(conn, start, end, width, base)
    out: dict[float, StoredHour] = {}
    made = 0
    for h in hours(start, end):
        if until is not None and h + HOUR > until:
            continue
        c = now.get(_utc(h), Covered(0, None))
        s = have.get(_utc(h))
        if s is not None and fresh(s, c, day_first):
            out[h] = s
        else:
            out[h] = make_hour(conn, h, day_first, c, width, base)
            made += 1
    return out, made


def day_counts(conn: Connection, start: float, end: float, width: float, base: float
               ) -> list[HeatCount] | None:
    """The heat counts of the day [start, end) as report.daily_sql's statement gives them,
    from the hours' summaries (made first where missing or stale); None where summaries do
    not apply (the caller reads the deltas)."""
    if not applies(start, end, width) or start // DAY != (end - 1) // DAY \
            or not heat_sql.usable(conn) or not _raw_day(conn, start):
        return None
    made = ensure(conn, start, end, width, base)
    spans = joint_spans({h: s.reach for h, s in made.items()}, width)
    stored_hours = [_utc(h) for h in made if not any(lo <= h < hi for lo, hi in spans)]
    out = heat_sql.counts(conn, stored_hours, width, base)
    first = int(start // width)
    for lo, hi in spans:
        no_jit(conn)
        out.extend(daily_sql.heat_counts(conn, lo, hi, width, base, first=first))
    return out


def closed_hours(conn: Connection, now: float, width: float, base: float,
                 days: int = 2) -> int:
    """Make the missing or stale summaries of the closed hours of the last `days` UTC days
    (`jobio db pack` after packing: the hours a site's nightly report will read). Returns
    how many hours were made."""
    if not heat_sql.usable(conn) or not applies(0.0, DAY, width):
        return 0
    today = (now // DAY) * DAY
    return sum(_ensure(conn, today - d * DAY, today - d * DAY + DAY, width, base, now)[1]
               for d in range(days - 1, -1, -1))
