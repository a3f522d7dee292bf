"""The heat map from stored per-hour counts (sql/0024, report.heat_hours) is the heat map
from the deltas (report.daily_sql.heat_counts over the whole day), row for row.

The day of tests/views/test_daily_sums.py: a simulated cluster replayed through the
collector, deltas of missed reads (spread over several intervals, over hour boundaries,
from before the day), then one hour packed, then a spooled batch replayed late into the
packed hour and into an hour already summed: the late hours, and only those, are made again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from slurm_io.model import Batch, Delta, JobId
from slurm_io.report import daily_sql, heat_hours, heat_sql
from slurm_io.report.daily_sql import HeatCount
from slurm_io.simulate import simulate
from slurm_io.store import partitions, tiers_pack
from slurm_io.store.sqlutil import ts
from slurm_io.store.writer import write_batch
from tests.attribute.simulated import load
from tests.views.test_daily_sums import D0, D1, START, _missed_reads

_SEQ = iter(range(1, 1_000_000))


def _write(conn: psycopg.Connection, collector: str,
           items: list[tuple[Delta, JobId]]) -> None:
    """`items` as the collector writes them: one batch per read, read_time its deltas'
    ts_end (slurm_io.collect.cycle), which is what an hour's summary is checked against."""
    for t1 in sorted({d.t1 for d, _ in items}):
        read = [(d, j) for d, j in items if d.t1 == t1]
        assert write_batch(conn, Batch(collector, next(_SEQ), t1, (), read, len(read), 0,
                                       0, 0))

WIDTHS = (120.0, 300.0, 3600.0)
JOBIO = str(Path(sys.executable).with_name("jobio"))


def _from_deltas(conn: psycopg.Connection, width: float) -> list[tuple[object, ...]]:
    rows = sorted(tuple(r) for r in daily_sql.heat_counts(conn, D0, D1, width, 4.0))
    conn.rollback()
    return rows


def _stored(conn: psycopg.Connection, width: float) -> list[tuple[object, ...]]:
    rows = heat_hours.day_counts(conn, D0, D1, width, 4.0)
    assert rows is not None
    return sorted(tuple(r) for r in rows)


def _made(conn: psycopg.Connection) -> dict[object, object]:
    """made_at per (hour, width) of the stored summaries."""
    out = {(h, w): m for h, w, m in conn.execute(
        "SELECT hour, width, made_at FROM heat_hour")}
    conn.rollback()
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("heat") / "cluster"
    # no collector outage: no delta longer than an interval until the missed reads come
    simulate(out, seed=7, start=START, hours=3, n_nodes=10, n_oss=2, jobs_per_hour=10,
             outage=False)
    return out


@pytest.mark.pg
def test_stored_hours_equal_the_deltas_through_late_data_and_packing(
        cluster: Path, db_dsn: str, tmp_path: Path) -> None:
    load(cluster, db_dsn, tmp_path)
    with psycopg.connect(db_dsn) as conn:
        # the collector's data alone: every hour read from its stored counts
        for width in WIDTHS:
            assert _stored(conn, width) == _from_deltas(conn, width)
        made = _made(conn)
        assert len(made) == 24 * len(WIDTHS)
        spans = heat_hours.joint_spans(
            {h: s.reach for h, s in heat_hours.ensure(conn, D0, D1, 120.0, 4.0).items()},
            120.0)
        assert spans == []  # no hour read from the deltas: all 24 from storage
        assert _stored(conn, 120.0) == _from_deltas(conn, 120.0)
        assert _made(conn) == made  # fresh: nothing made again
        assert len(_from_deltas(conn, 120.0)) > 50

        # missed reads: long deltas reach back over hours, read from the deltas together
        extra = _missed_reads(conn)
        conn.commit()
        _write(conn, "missed-reads", extra)
        for width in WIDTHS:
            assert _stored(conn, width) == _from_deltas(conn, width)
        reach = {h: s.reach for h, s in heat_hours.ensure(conn, D0, D1, 120.0, 4.0).items()}
        assert heat_hours.joint_spans(reach, 120.0)
        made = _made(conn)

        # one hour packed (figures unchanged, summaries still fresh), then a spooled batch
        # replayed into it and into an hour already summed
        hour = (START // 3600 + 1) * 3600
        hot = conn.execute("SELECT count(*) FROM jobstats_delta WHERE ts_end >= %s "
                           "AND ts_end < %s", (ts(hour), ts(hour + 3600))).fetchone()[0]
        moved, _ = tiers_pack.pack_hour(conn, hour, hot, rows_per_transaction=50)
        assert moved == hot > 0
        conn.commit()
        for width in WIDTHS:
            assert _stored(conn, width) == _from_deltas(conn, width)
        assert _made(conn) == made
        before = _from_deltas(conn, 120.0)
        late = [(d._replace(t0=d.t0 + k, t1=t1, last_update=t1 - 2), j)
                for k, (t1, (d, j)) in enumerate(zip((hour + 700.0, hour + 1300.0,
                                                      START + 60.0, hour + 3599.0),
                                                     extra[::5], strict=False))]
        _write(conn, "spooled", late)
        assert conn.execute("SELECT count(*) FROM jobstats_packed").fetchone()[0] > 0
        conn.commit()
        after = _from_deltas(conn, 120.0)
        assert after != before  # the late data counts
        for width in WIDTHS:
            assert _stored(conn, width) == _from_deltas(conn, width)
        remade = {h for h, m in _made(conn).items() if made[h] != m}
        late_hours = {heat_hours._utc((t1 - 1e-6) // 3600 * 3600) for t1, _ in
                      zip((hour + 700.0, hour + 1300.0, START + 60.0, hour + 3599.0),
                          extra[::5], strict=False)}
        assert {h for h, _ in remade} == late_hours and len(remade) == 2 * len(WIDTHS)


@pytest.mark.pg
def test_pack_sums_closed_hours_and_prune_forgets_them(cluster: Path, db_dsn: str,
                                                       tmp_path: Path) -> None:
    load(cluster, db_dsn, tmp_path)
    # the clock of `jobio db pack` and `db prune` (slurm_io.clock): 7 hours into the next day
    env = {**os.environ, "SLURM_IO_CONFIG": "/dev/null",
           "SLURM_IO_CLOCK": f"{D1 + 7 * 3600} {time.time()} 1"}
    ran = subprocess.run([JOBIO, "--dsn", db_dsn, "db", "pack", "--min-age", "0s"],
                         env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert "heat-map hour(s) summed" in ran.stdout
    with psycopg.connect(db_dsn) as conn:
        stored = heat_sql.stored(conn, D0, D1, 120.0, 4.0)
        assert len(stored) == 24  # the day the data is in, every hour
        made = _made(conn)
        assert _stored(conn, 120.0) == _from_deltas(conn, 120.0)
        assert _made(conn) == made  # the report found them fresh
        n = conn.execute("SELECT count(*) FROM heat_hour_count").fetchone()[0]
        assert n > 50
    ran = subprocess.run([JOBIO, "--dsn", db_dsn, "db", "prune", "--older-than", "0d"],
                         env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert "hour(s) deleted with their raw days" in ran.stdout
    with psycopg.connect(db_dsn) as conn:
        assert partitions.day_of(D0) not in partitions.existing_days(conn)
        assert conn.execute("SELECT count(*) FROM heat_hour WHERE hour < %s",
                            (ts(D1),)).fetchone()[0] == 0
        assert heat_hours.day_counts(conn, D0, D1, 120.0, 4.0) is None  # reads the deltas


def test_joint_spans_merge_the_hours_a_long_delta_reaches() -> None:
    h = 1_795_000_000.0 // 3600 * 3600
    w = 120.0
    first = {h + i * 3600: int((h + i * 3600) // w) for i in range(6)}
    reach: dict[float, int | None] = dict(first)
    reach[h + 5 * 3600] = None  # an hour without data
    assert heat_hours.joint_spans(reach, w) == []
    reach[h + 2 * 3600] = first[h + 1 * 3600] + 3  # back into the hour before
    reach[h + 3 * 3600] = first[h + 2 * 3600]  # touches: merged
    reach[h + 4 * 3600] = first[h] + 29  # back to the first hour: all merged
    assert heat_hours.joint_spans(reach, w) == [(h, h + 5 * 3600)]
    reach[h + 4 * 3600] = first[h + 4 * 3600]
    reach[h + 3 * 3600] = first[h + 3 * 3600] - 1
    assert heat_hours.joint_spans(reach, w) == [(h + 3600, h + 4 * 3600)]


def test_own_rows_keep_the_hours_intervals_and_say_the_reach() -> None:
    h, w = 7200.0, 120.0
    rows = [HeatCount("read", 59, 3, 1), HeatCount("read", 60, 3, 2),
            HeatCount("write", 89, 1, 4)]
    assert heat_hours.own_rows(rows, h, w) == (rows[1:], 59)
    assert heat_hours.own_rows([], h, w) == ([], None)
    assert heat_hours.applies(0.0, 86400.0, 120.0)
    assert not heat_hours.applies(0.0, 86400.0, 7.0)  # does not divide an hour
    assert not heat_hours.applies(60.0, 86400.0, 120.0)
