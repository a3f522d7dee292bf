"""Daily partitions of jobstats_delta: created ahead of the data, dropped whole for retention.

Why daily range partitions on ts_end: retention becomes DROP TABLE of whole days (no DELETE,
no bloat, no vacuum debt) and time-bounded queries touch only the days they ask for.

There is no DEFAULT partition (see sql/0001_core.sql). The writer ensures the partitions
of a batch's days before copying rows, so a row never arrives for a day without a partition;
if one does (a partition dropped by another process after this one cached it) the insert
fails with a check violation, and the writer forgets this cache and retries. A default
partition would instead make every new partition scan and lock it, and rows misfiled there
would have to be moved.

A partition is created as a plain table and then ATTACHed rather than with CREATE TABLE ...
PARTITION OF: ATTACH takes only a SHARE UPDATE EXCLUSIVE lock on jobstats_delta, which
neither waits for nor blocks readers and writers, whereas PARTITION OF takes ACCESS
EXCLUSIVE and so would queue all ingest behind a long report query. Creators are serialised
by an advisory lock, and a name that already exists is tolerated, so concurrent collectors
can ensure the same days.

Existing partitions are cached per connection (only after the creating transaction
committed), so the per-batch call costs a set lookup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from weakref import WeakKeyDictionary

import psycopg
from psycopg import errors, sql

PARENT = "jobstats_delta"
PREFIX = "jobstats_delta_p"
# the packed tier (sql/0021, store.tiers_pack): the same days, dropped with the hot ones
PACKED_PREFIX = "jobstats_packed_p"
PARTITION_LOCK_KEY = 0x5C10_0002  # "slurm-io partition DDL" in pg_advisory_xact_lock's space
_NAME_RE = re.compile(re.escape(PREFIX) + r"(\d{8})")
_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smhdw])")
_DURATION_FULL_RE = re.compile(r"(?:(?:\d+(?:\.\d*)?|\.\d+)\s*[smhdw]\s*)+")
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}

_known: WeakKeyDictionary[psycopg.Connection, set[date]] = WeakKeyDictionary()


def day_of(ts: float) -> date:
    """UTC day of a Unix timestamp (partitions are UTC days whatever the server timezone)."""
    return datetime.fromtimestamp(ts, UTC).date()


def partition_name(day: date) -> str:
    return f"{PREFIX}{day:%Y%m%d}"


def packed_partition_name(day: date) -> str:
    return f"{PACKED_PREFIX}{day:%Y%m%d}"


def packed_0021_name(day: date) -> str:
    """sql/0021's hour rows of `day`, renamed by sql/0025 until `db pack` re-packs them."""
    return f"jobstats_packed_0021_p{day:%Y%m%d}"


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def existing_days(conn: psycopg.Connection) -> set[date]:
    """Days having a partition named by our convention (read from the catalog)."""
    rows = conn.execute(
        """
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = %s::regclass
        """,
        (PARENT,),
    ).fetchall()
    days = set()
    for (name,) in rows:
        match = _NAME_RE.fullmatch(name)
        if match:
            days.add(datetime.strptime(match.group(1), "%Y%m%d").date())
    return days


def forget(conn: psycopg.Connection) -> None:
    """Drop the cached partition list of `conn` (after a failure that may have made it wrong)."""
    _known.pop(conn, None)


def ensure_days(conn: psycopg.Connection, days: Iterable[date]) -> list[str]:
    """Make sure each day in `days` has its partition; return the names created.

    Runs its own transaction when `conn` is idle (the partitions are committed at return);
    inside a caller's transaction it uses a savepoint, and the cache may then outlive a
    rollback -- the writer recovers from that by `forget()` and retry.
    """
    wanted = set(days)
    known = _known.get(conn)
    if known is not None and wanted <= known:
        return []
    created: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PARTITION_LOCK_KEY,))
        existing = existing_days(conn)
        for day in sorted(wanted - existing):
            if _create(conn, day):
                created.append(partition_name(day))
    # Replace rather than merge: the catalog was just read, so stale entries go away.
    _known[conn] = existing | wanted
    return created


def _create(conn: psycopg.Connection, day: date) -> bool:
    """CREATE + ATTACH the partition of `day`; False when someone else made it meanwhile.

    ATTACH scans the new table to validate the bound, which costs nothing while it is empty.
    """
    name = sql.Identifier(partition_name(day))
    lo, hi = _day_start(day), _day_start(day + timedelta(days=1))
    if not _owns_parent(conn):
        # a collector role without DDL rights: the owner's SECURITY DEFINER function does it
        # (sql/0004_privacy.sql), with the same names, bounds and lock
        made = conn.execute("SELECT jobio_ensure_partitions(%s, %s)", (day, day)).fetchone()
        return bool(made and made[0])
    try:
        with conn.transaction():  # savepoint: a lost race must not abort the caller
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {name} (LIKE {parent} INCLUDING DEFAULTS INCLUDING "
                    "CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)"
                ).format(name=name, parent=sql.Identifier(PARENT))
            )
            conn.execute(
                sql.SQL(
                    "ALTER TABLE {parent} ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})"
                ).format(
                    parent=sql.Identifier(PARENT), name=name,
                    lo=sql.Literal(lo), hi=sql.Literal(hi),
                )
            )
    except (errors.DuplicateTable, errors.UniqueViolation):
        return False  # created concurrently by a process not using our advisory lock
    return True


def ensure_partitions(
    conn: psycopg.Connection, start_ts: float, end_ts: float, ahead_days: int = 2
) -> list[str]:
    """Ensure partitions for every UTC day from start_ts's to end_ts's, plus `ahead_days`.

    Creating ahead keeps the DDL away from the midnight write that first needs a day.
    Returns the names created.
    """
    if end_ts < start_ts:
        raise ValueError(f"end_ts {end_ts} is before start_ts {start_ts}")
    if ahead_days < 0:
        raise ValueError("ahead_days must be >= 0")
    first = day_of(start_ts)
    last = day_of(end_ts) + timedelta(days=ahead_days)
    return ensure_days(conn, (first + timedelta(days=i) for i in range((last - first).days + 1)))


class PartitionBusy(Exception):
    """A partition's DROP gave up after `lock_timeout` behind a long reader (a report):
    raised by `prune` with the partitions it did drop, so that the caller can say it in one
    line without knowing the driver's errors."""

    def __init__(self, dropped: list[str]) -> None:
        super().__init__(f"jobstats_delta in use; dropped before giving up: {len(dropped)}")
        self.dropped = dropped


def prune(
    conn: psycopg.Connection,
    older_than_seconds: float,
    now: float,
    *,
    lock_timeout: str = "10s",
) -> list[str]:
    """Drop the partitions whose whole day ended before `now - older_than_seconds`.

    Never deletes rows one by one: a day that is only partly older than the cut-off is kept
    whole. Each partition is dropped in its own short transaction (DROP needs an ACCESS
    EXCLUSIVE lock on jobstats_delta); `lock_timeout` stops a drop waiting behind a long
    report -- which would stall ingest queued behind it -- by raising PartitionBusy (with
    the days dropped before), so retention simply runs again later. The day's packed
    partitions (sql/0021, sql/0025) go in the same transaction. Returns the names
    dropped, oldest
    first.
    """
    if older_than_seconds < 0:
        raise ValueError("older_than_seconds must be >= 0")
    cutoff = datetime.fromtimestamp(now - older_than_seconds, UTC)
    with conn.transaction():
        days = sorted(existing_days(conn))
    dropped: list[str] = []
    try:
        for day in days:
            if _day_start(day + timedelta(days=1)) > cutoff:
                break
            with conn.transaction():
                conn.execute(
                    sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(lock_timeout))
                )
                for name in (packed_0021_name(day), packed_partition_name(day),
                             partition_name(day)):
                    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                        sql.Identifier(name)))
            dropped.append(partition_name(day))
    except errors.LockNotAvailable as e:
        raise PartitionBusy(list(dropped)) from e
    finally:
        known = _known.get(conn)
        if known is not None:
            known.difference_update(days[: len(dropped)])
    return dropped


def parse_duration(text: str) -> float:
    """Seconds in a duration like "90d", "12h", "30m", "3600s", "2w" or "1d12h".

    A unit is required: a bare "90" could mean seconds or days to a reader of the config.
    """
    compact = text.strip().lower()
    if not _DURATION_FULL_RE.fullmatch(compact):
        raise ValueError(
            f"invalid duration {text!r}: use a number with a unit s, m, h, d or w "
            "(e.g. 90d, 12h, 1d12h)"
        )
    return sum(
        float(m.group(1)) * _UNIT_SECONDS[m.group(2)] for m in _DURATION_RE.finditer(compact)
    )


def _owns_parent(conn: psycopg.Connection) -> bool:
    """Whether the current role may create partitions itself (owner or superuser)."""
    r = conn.execute(
        "SELECT pg_has_role(current_user, c.relowner, 'USAGE') OR "
        "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user) "
        "FROM pg_class c WHERE c.oid = %s::regclass", (PARENT,)).fetchone()
    return bool(r and r[0])
