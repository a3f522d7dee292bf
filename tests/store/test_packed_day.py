"""The packed tier's day rows (sql/0025, the `derived` layout): the edge cases of its
encoding give every delta back exactly through store.tiers, late data rewrites only the day
rows of the entries it belongs to, an entry spanning midnight has a row in each day, and
sql/0021's hour rows are read after the upgrade and re-packed by `db pack`.

Every case compares each delta, as text, read through store.tiers before and after packing
(test_packed_tier.py compares every figure computed from them).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from slurm_io import paths
from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId
from slurm_io.store import migrate, partitions, tiers, tiers_pack
from slurm_io.store.writer import write_batch

pytestmark = pytest.mark.pg
MIDNIGHT = datetime(2026, 11, 19, tzinfo=UTC).timestamp()
NOW = MIDNIGHT + 10 * 86400


def _delta(raw: str, t1: float, target: str = "scratch-OST0001", *, size: int = 4096,
           n: int = 3, mixed: bool = False) -> tuple[Delta, JobId]:
    job, uid, host = raw.split(":")
    big = size * 4 if mixed else size  # mixed sizes: max, bytes and sumsq off the prediction
    total = size * (n - 1) + big
    stats = ByteStats(n, size, big, total, size * size * (n - 1) + big * big, None)
    d = Delta(target, raw, raw, t1 - 120, t1, t1 - 7.123456, {"read_bytes": n, "open": 2},
              {"read_bytes": stats}, 0)
    return d, JobId(IdClass.EXACT, int(job), int(uid), host, None, False)


def _write(conn: psycopg.Connection, name: str, pairs: list[tuple[Delta, JobId]]) -> None:
    conn.commit()
    assert write_batch(conn, Batch(name, 1, pairs[-1][0].t1, (), pairs, len(pairs), 0, 0, 0))


def every_delta(conn: psycopg.Connection) -> list[str]:
    """Every delta of both tiers, as text, sorted: what any reader can compute from."""
    rows = conn.execute(
        f"SELECT d::text FROM {tiers.window('%(lo)s', '%(hi)s')} d",
        {"lo": "1970-01-02", "hi": "2100-01-01"}).fetchall()
    conn.commit()
    return sorted(r[0] for r in rows)


def _counts(conn: psycopg.Connection) -> tuple[int, int]:
    row = conn.execute("SELECT (SELECT count(*) FROM jobstats_delta), "
                       "(SELECT coalesce(sum(n), 0) FROM jobstats_packed)").fetchone()
    conn.commit()
    assert row is not None
    return int(row[0]), int(row[1])


def _pack(conn: psycopg.Connection, **kw: int) -> tiers_pack.Packed:
    done = tiers_pack.pack(conn, NOW, min_age=0, max_wait=0, **kw)
    conn.commit()
    return done


def test_edge_values_and_midnight_decode_back_exactly(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        pairs = [_delta("7:1000:n1", MIDNIGHT - 120 * k, mixed=k % 2 == 1) for k in range(1, 6)]
        pairs += [_delta("7:1000:n1", MIDNIGHT + 120 * k, "scratch-OST0002") for k in range(4)]
        pairs += [_delta("8:1001:n2", MIDNIGHT + 3600 + 120 * k, size=1 << 20) for k in range(6)]
        _write(conn, "edges", pairs)
        t = "ts_end = to_timestamp(%s)"
        for sumsq, at in ((1.5, MIDNIGHT - 240),  # not an integer
                          (1e30, MIDNIGHT - 360),  # beyond int8
                          (2.0 ** 63, MIDNIGHT + 3600),  # just beyond int8
                          (float("inf"), MIDNIGHT + 3600 + 120)):
            conn.execute(f"UPDATE jobstats_delta SET read_bytes_sumsq = %s WHERE {t}",
                         (sumsq, at))
        # a NULL-min counter (a client that printed no min), a negative min, a NULL sumsq
        conn.execute(f"UPDATE jobstats_delta SET read_bytes_min = NULL WHERE {t}",
                     (MIDNIGHT - 480,))
        conn.execute(f"UPDATE jobstats_delta SET read_bytes_min = -5 WHERE {t}",
                     (MIDNIGHT + 3600 + 360,))
        conn.execute(f"UPDATE jobstats_delta SET read_bytes_sumsq = NULL WHERE {t}",
                     (MIDNIGHT + 3600 + 480,))
        conn.commit()
        before = every_delta(conn)
        assert len(before) == len(pairs)
        done = _pack(conn)
        assert done.deltas == len(pairs)
        assert _counts(conn) == (0, len(pairs))
        assert every_delta(conn) == before
        rows = conn.execute("SELECT raw_id, hour::text, n, read_bytes_sumsq_raw IS NOT NULL, "
                            "read_bytes_max IS NULL FROM jobstats_packed ORDER BY 1, 2"
                            ).fetchall()
        # the entry spanning midnight has a row in each day; escapes where sumsq is not exact
        assert [r[:3] for r in rows] == [("7:1000:n1", "2026-11-18 00:00:00+00", 5),
                                         ("7:1000:n1", "2026-11-19 00:00:00+00", 4),
                                         ("8:1001:n2", "2026-11-19 00:00:00+00", 6)]
        assert [r[3] for r in rows] == [True, False, True]
        # one request size (max = min) where no size was mixed: no residual array (the
        # negative min predicts nothing: its max is kept as a residual of 0)
        assert [r[4] for r in rows] == [False, True, False]


def test_late_data_rewrites_only_the_day_rows_of_its_entries(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        _write(conn, "a", [_delta(f"{j}:1000:n{j}", MIDNIGHT + 600 * k, mixed=k == 2)
                           for j in (1, 2, 3) for k in range(1, 7)])
        first = _pack(conn)
        # two hours of one day, one run: its plan and one chunk
        assert (first.deltas, first.hours, first.transactions) == (18, 2, 2)
        rows0 = dict(conn.execute("SELECT raw_id, xmin::text FROM jobstats_packed").fetchall())
        conn.commit()
        # late: one entry's delta in the packed hour, another in the next hour of the day
        _write(conn, "late", [_delta("2:1000:n2", MIDNIGHT + 100, "scratch-OST0002"),
                              _delta("2:1000:n2", MIDNIGHT + 4000, mixed=True)])
        before = every_delta(conn)
        assert len(before) == 20 and _counts(conn) == (2, 18)
        second = _pack(conn)
        assert (second.deltas, second.hours) == (2, 2)
        assert _counts(conn) == (0, 20)
        assert every_delta(conn) == before
        rows1 = dict(conn.execute("SELECT raw_id, xmin::text FROM jobstats_packed").fetchall())
        conn.commit()
        assert sorted(rows1) == sorted(rows0)  # still one row per entry and day
        assert [r for r in rows0 if rows0[r] != rows1[r]] == ["2:1000:n2"]


def _old_pack(conn: psycopg.Connection) -> None:
    """Pack every hot delta as sql/0021 did (one row per entry and hour, plain arrays)."""
    cols = tiers.array_columns()
    entry = ", ".join(tiers.ENTRY_COLUMNS)
    for (day,) in conn.execute("SELECT DISTINCT date_trunc('day', ts_end) FROM jobstats_delta"
                               ).fetchall():
        name = partitions.packed_partition_name(day.date())
        conn.execute(sql.SQL("CREATE TABLE {} PARTITION OF jobstats_packed FOR VALUES FROM "
                             "({}) TO ({})").format(sql.Identifier(name), sql.Literal(day),
                                                    sql.Literal(day + timedelta(days=1))))
    aggs = ", ".join(f"array_agg({c} ORDER BY target_id, ts_end)" for c in cols)
    conn.execute(f"INSERT INTO jobstats_packed (hour, {entry}, n, {', '.join(cols)}) "
                 f"SELECT date_trunc('hour', ts_end), {entry}, count(*), {aggs} "
                 f"FROM jobstats_delta GROUP BY 1, {entry}")
    conn.execute("DELETE FROM jobstats_delta")
    conn.commit()


def test_hour_rows_of_0021_are_read_after_the_upgrade_then_repacked(
        empty_db_dsn: str, tmp_path: Path) -> None:
    old = tmp_path / "sql"
    old.mkdir()
    for m in migrate.available():
        if m.version < 25:
            shutil.copy(m.path, old / m.path.name)
    with psycopg.connect(empty_db_dsn) as conn:
        migrate.upgrade(conn, old)
        pairs = [_delta(f"{j}:1000:n{j}", MIDNIGHT + 900 * k, mixed=k % 3 == 0)
                 for j in (1, 2) for k in range(1, 9)]
        _write(conn, "a", pairs)
        hot = sorted(r[0] for r in conn.execute("SELECT d::text FROM jobstats_delta d"))
        _old_pack(conn)
        assert conn.execute("SELECT count(*) FROM jobstats_packed").fetchone() == (6,)
        conn.commit()
        applied = migrate.upgrade(conn, paths.sql_dir())
        assert "0025_packed_day" in applied
        day = partitions.day_of(MIDNIGHT)
        assert conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                            (partitions.packed_0021_name(day),)).fetchone() == (True,)
        conn.commit()
        assert every_delta(conn) == hot  # read as the third half, as they were
        # late data for one entry beside the old rows: both re-packed into one day row
        _write(conn, "late", [_delta("1:1000:n1", MIDNIGHT + 50)])
        want = every_delta(conn)
        done = _pack(conn)
        assert (done.converted, done.deltas) == (1, 1)
        assert every_delta(conn) == want
        assert _counts(conn) == (0, len(pairs) + 1)
        assert conn.execute("SELECT raw_id, n FROM jobstats_packed ORDER BY 1").fetchall() == [
            ("1:1000:n1", 9), ("2:1000:n2", 8)]
        assert conn.execute("SELECT to_regclass(%s)", (partitions.packed_0021_name(day),)
                            ).fetchone() == (None,)  # emptied and dropped
        conn.commit()
        assert _pack(conn).converted == 0
