"""Daily partitions: created ahead, bounded by UTC days, pruned only as whole old days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest

from slurm_io.store import partitions
from slurm_io.store.partitions import ensure_partitions, parse_duration, prune
from tests.concurrency import on_two_connections

pytestmark = pytest.mark.pg

DAY = 86400.0


def _ts(text: str) -> float:
    """Unix time of an ISO timestamp read as UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _partition_names(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        """
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'jobstats_delta'::regclass ORDER BY 1
        """
    ).fetchall()
    conn.commit()
    return [name for (name,) in rows]


def _insert(conn: psycopg.Connection, ts_end: datetime) -> str:
    """Insert a minimal row; return the partition it landed in."""
    (where,) = conn.execute(
        """
        INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, raw_id)
        VALUES (%s - interval '1 minute', %s, 1, 1, 'x')
        RETURNING tableoid::regclass::text
        """,
        (ts_end, ts_end),
    ).fetchone()
    conn.commit()
    return where


def test_ensure_creates_the_days_of_the_range_and_days_ahead(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        created = ensure_partitions(
            conn, _ts("2024-03-09T22:00:00"), _ts("2024-03-10T12:00:00"), ahead_days=2
        )
        expected = [f"jobstats_delta_p202403{d:02d}" for d in (9, 10, 11, 12)]
        assert created == expected
        assert _partition_names(conn) == expected


def test_ensuring_existing_days_creates_nothing_on_any_connection(db_dsn: str) -> None:
    start = _ts("2024-05-01T08:00:00")
    with psycopg.connect(db_dsn) as first, psycopg.connect(db_dsn) as second:
        assert len(ensure_partitions(first, start, start)) == 3
        assert ensure_partitions(first, start, start) == []  # from the cache
        assert ensure_partitions(second, start, start) == []  # from the catalog
        assert ensure_partitions(second, start, start + DAY, ahead_days=2) == [
            "jobstats_delta_p20240504"
        ]


def test_partitions_have_the_table_indexes(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        ensure_partitions(conn, _ts("2024-05-01T00:00:00"), _ts("2024-05-01T00:00:00"), 0)
        indexes = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'jobstats_delta_p20240501'"
        ).fetchall()
    defs = [d for (d,) in indexes]
    assert any("(job, ts_end)" in d and "WHERE (job IS NOT NULL)" in d for d in defs)
    assert any("(host_id, ts_end, uid)" in d for d in defs)


def test_day_boundaries_are_utc_whatever_the_session_time_zone(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SET TIME ZONE 'America/New_York'")
        conn.commit()
        ensure_partitions(conn, _ts("2024-06-01T00:00:00"), _ts("2024-06-01T00:00:00"), 1)
        last_moment = datetime(2024, 6, 1, 23, 59, 59, 999999, tzinfo=UTC)
        assert _insert(conn, last_moment) == "jobstats_delta_p20240601"
        assert _insert(conn, last_moment + timedelta(microseconds=1)) == (
            "jobstats_delta_p20240602"
        )


def test_a_row_for_a_day_without_partition_is_rejected_not_hidden(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn, pytest.raises(psycopg.errors.CheckViolation):
        _insert(conn, datetime(2031, 1, 1, tzinfo=UTC))


def test_prune_drops_only_days_wholly_older_than_the_cutoff(db_dsn: str) -> None:
    today = date(2024, 7, 20)
    now = _ts("2024-07-20T12:00:00")
    with psycopg.connect(db_dsn) as conn:
        ensure_partitions(conn, now - 10 * DAY, now, ahead_days=0)
        for back in range(11):
            _insert(conn, datetime(2024, 7, 20, 6, tzinfo=UTC) - timedelta(days=back))
        dropped = prune(conn, parse_duration("5d"), now)
        # cut-off 2024-07-15 12:00: days up to the 14th ended before it; the 15th is partly
        # newer and is kept whole.
        assert dropped == [
            partitions.partition_name(today - timedelta(days=back)) for back in range(10, 5, -1)
        ]
        remaining = _partition_names(conn)
        assert remaining[0] == "jobstats_delta_p20240715"
        assert len(remaining) == 6
        (oldest,) = conn.execute("SELECT min(ts_end) FROM jobstats_delta").fetchone()
        assert oldest == datetime(2024, 7, 15, 6, tzinfo=UTC)
        assert conn.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (6,)


def test_prune_at_a_midnight_cutoff_drops_the_day_ending_there(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        midnight = _ts("2024-08-02T00:00:00")
        ensure_partitions(conn, midnight - 2 * DAY, midnight, ahead_days=0)
        assert prune(conn, DAY, midnight + DAY) == [
            "jobstats_delta_p20240731", "jobstats_delta_p20240801",
        ]
        assert prune(conn, DAY, midnight + DAY) == []


def test_a_pruned_day_is_created_again_when_needed(db_dsn: str) -> None:
    start = _ts("2024-09-01T10:00:00")
    with psycopg.connect(db_dsn) as conn:
        ensure_partitions(conn, start, start, ahead_days=0)
        assert prune(conn, 0, start + DAY) == ["jobstats_delta_p20240901"]
        assert ensure_partitions(conn, start, start, ahead_days=0) == [
            "jobstats_delta_p20240901"
        ]


def test_concurrent_ensures_of_the_same_days_both_succeed(db_dsn: str) -> None:
    start = _ts("2024-10-01T00:00:00")
    created = on_two_connections(
        db_dsn, lambda conn: ensure_partitions(conn, start, start + 6 * DAY, ahead_days=1))
    names = sorted(n for c in created for n in c)
    assert names == [f"jobstats_delta_p202410{d:02d}" for d in range(1, 9)]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90d", 90 * DAY), ("12h", 43200), ("30m", 1800), ("3600s", 3600), ("2w", 14 * DAY),
     ("1d12h", 1.5 * DAY), (" 1.5h ", 5400), ("7D", 7 * DAY)],
)
def test_parse_duration_accepts_numbers_with_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "90", "d", "1x", "-1d", "1d 2", "ninety days"])
def test_parse_duration_rejects_text_without_a_clear_unit(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_creating_a_partition_does_not_wait_for_open_readers(db_dsn: str) -> None:
    # A report holding jobstats_delta open must not block ingest of a new day: with
    # CREATE TABLE ... PARTITION OF (ACCESS EXCLUSIVE on the parent) this would time out.
    start = _ts("2024-11-01T00:00:00")
    with psycopg.connect(db_dsn) as reader, psycopg.connect(db_dsn) as writer:
        reader.execute("SELECT count(*) FROM jobstats_delta").fetchone()  # transaction stays open
        writer.execute("SET lock_timeout = '2s'")
        writer.commit()
        assert ensure_partitions(writer, start, start, ahead_days=0) == [
            "jobstats_delta_p20241101"
        ]
        reader.rollback()
