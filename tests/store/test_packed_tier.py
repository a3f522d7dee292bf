"""The packed tier (sql/0021, store.tiers, store.tiers_pack, `jobio db pack`): every figure is
the same before and after packing, late data is read and merged, a kill loses nothing, prune
drops packed days, and the closing policy decides as docs/storage.md says.

A simulated cluster (slurm_io.simulate) is replayed through the collector (tests/attribute/
simulated.py); its figures are every reader of raw deltas: `jobio show --json` computed live,
the stored attribution (`job_io`, `job_io_hour`), the recovery of `:uid:host` deltas by
(node, uid, time), LASSi's stored hours, the daily page's rates and heat map, `jobio usage`
and the unattributed split.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId
from slurm_io.simulate import simulate
from slurm_io.store import partitions, tiers_pack
from slurm_io.store.tiers_pack import HOUR, HourState, closed
from slurm_io.store.writer import write_batch
from tests.attribute.simulated import load

pytestmark = pytest.mark.pg
START = 1_795_000_000.0  # 2026-11-18 11:06 UTC
NOW = START + 10 * 86400
DAY = partitions.day_of(START)
JOBIO = str(Path(sys.executable).with_name("jobio"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pack") / "cluster"
    simulate(out, seed=11, start=START, hours=3, n_nodes=12, n_oss=2, jobs_per_hour=10)
    return out


@pytest.fixture
def loaded(cluster: Path, db_dsn: str, tmp_path: Path) -> str:
    return load(cluster, db_dsn, tmp_path)


def _jobids(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT jobid FROM job WHERE start_time IS NOT NULL ORDER BY job")]


def figures(dsn: str) -> dict[str, Any]:
    """Every figure read from raw deltas, JSON-comparable. Clears the stored attribution and
    LASSi hours first (so that show computes from the deltas) and stores them again."""
    from slurm_io.attribute.batch import attribute_jobs
    from slurm_io.attribute.sql import deltas_by_pair
    from slurm_io.attribute.stored import pending_jobs
    from slurm_io.lassi.days import compute_day
    from slurm_io.report import daily_sql as dsql
    from slurm_io.report import sql as rsql
    from slurm_io.report.unattributed import split
    from slurm_io.report.usage import usage

    out: dict[str, Any] = {}
    with psycopg.connect(dsn) as conn:
        for table in ("job_io", "lassi_job_hour", "lassi_fs_hour", "lassi_day"):
            conn.execute(f"DELETE FROM {table}")  # show computes from the deltas alone
        conn.commit()
        ids = _jobids(conn)
    shown = CliRunner().invoke(__import__("slurm_io.cli", fromlist=["main"]).main,
                               ["--dsn", dsn, "show", "--json", *ids],
                               env={"SLURM_IO_CONFIG": "/dev/null"})
    assert shown.exit_code == 0, shown.output
    out["show"] = json.loads(shown.output)
    for j in out["show"]:  # a running job's elapsed time is the clock's, not the deltas'
        if not j.get("end"):
            j.pop("elapsed", None)
    lo, hi = START - 3600, START + 6 * 3600
    with psycopg.connect(dsn) as conn:
        attribute_jobs(conn, pending_jobs(conn, START - 86400, None), now=NOW,
                       resolution=120.0)
        conn.commit()
        out["job_io"] = conn.execute(
            "SELECT job, complete, totals, recovered, ambiguous, by_target, by_node, timeline,"
            " quality, split, by_evidence, by_time, n_direct, n_recovered, revision,"
            " data_until::text FROM job_io ORDER BY job").fetchall()
        out["job_io_hour"] = conn.execute(
            "SELECT job, hour::text, fs, kind, totals, recovered FROM job_io_hour "
            "ORDER BY 1, 2, 3, 4").fetchall()
        pairs = {(n, u): (lo, hi) for n, u in conn.execute(
            "SELECT DISTINCT h.name, jn.uid FROM job_node jn JOIN host h USING (host_id)")}
        out["recovery"] = sorted(repr(d) for d in deltas_by_pair(conn, pairs, 86400.0))
        compute_day(conn, DAY)
        conn.commit()
        out["lassi"] = [conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall()
                        for t in ("lassi_job_hour", "lassi_fs_hour")]
        d0 = partitions._day_start(DAY).timestamp()
        out["rates"] = sorted(dsql.rates(conn, d0, d0 + 86400, 120.0))
        out["heat"] = sorted(dsql.heat_counts(conn, d0, d0 + 86400, 120.0, 4.0))
        out["usage"] = repr(usage(conn, lo, hi))
        out["split"] = repr(split(conn, lo, hi, now=NOW))
        out["interval"] = sorted(repr(r) for r in rsql.interval_rows(conn, START, START + 7200))
    assert out["show"] and out["job_io"] and out["recovery"] and out["lassi"][0]
    return json.loads(json.dumps(out, default=str))


def tiers_count(dsn: str) -> tuple[int, int]:
    """(hot rows, packed deltas)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT (SELECT count(*) FROM jobstats_delta), "
                           "(SELECT coalesce(sum(n), 0) FROM jobstats_packed)").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _pack(dsn: str, **kw: Any) -> tiers_pack.Packed:
    with psycopg.connect(dsn) as conn:
        return tiers_pack.pack(conn, NOW, min_age=0, max_wait=0, **kw)


def test_every_figure_is_the_same_after_packing(loaded: str) -> None:
    before = figures(loaded)
    hot, packed = tiers_count(loaded)
    assert hot > 500 and packed == 0
    done = _pack(loaded, rows_per_transaction=400)
    assert done.deltas == hot and done.transactions > done.hours >= 3
    assert tiers_count(loaded) == (0, hot)
    assert figures(loaded) == before
    assert _pack(loaded).hours == 0  # idempotent: nothing hot is left to pack


def test_late_data_for_a_packed_hour_is_read_then_merged(loaded: str) -> None:
    _pack(loaded)
    with psycopg.connect(loaded) as conn:
        job, raw, uid, node, t_end = conn.execute(
            "SELECT j.job, j.job_raw, j.uid, h.name, extract(epoch FROM j.end_time)::float8 "
            "FROM job j JOIN job_node jn USING (job) JOIN host h USING (host_id) "
            "WHERE j.end_time > j.start_time + interval '20 minutes' ORDER BY j.job LIMIT 1"
        ).fetchone()
        target = conn.execute("SELECT name FROM fs_target WHERE kind = 'OST' LIMIT 1"
                              ).fetchone()[0]
    before = {j["jobid"]: j for j in figures(loaded)["show"]}
    t1 = t_end - 300.0  # inside the job, in an hour already packed
    rid = f"{raw}:{uid}:{node}"
    late = Delta(target, rid, rid, t1 - 120, t1, t1 - 1, {"read_bytes": 7},
                 {"read_bytes": ByteStats(7, 4096, 4096, 7 * 4096, 7 * 4096 * 4096, None)}, 0)
    with psycopg.connect(loaded) as conn:
        jobid = conn.execute("SELECT jobid FROM job WHERE job = %s", (job,)).fetchone()[0]
        conn.commit()
        assert write_batch(conn, Batch("late", 1, t1, (), [
            (late, JobId(IdClass.EXACT, raw, uid, node, None, False))], 1, 0, 0, 0))
    assert tiers_count(loaded)[0] == 1
    after = figures(loaded)
    got = {j["jobid"]: j for j in after["show"]}
    assert (got[jobid]["totals"]["read_bytes"]
            == before[jobid]["totals"].get("read_bytes", 0) + 7 * 4096)
    assert _pack(loaded).deltas == 1
    hot, _ = tiers_count(loaded)
    assert hot == 0
    assert figures(loaded) == after
    with psycopg.connect(loaded) as conn:  # merged: still one packed row per entry and hour
        dup = conn.execute("SELECT count(*) FROM (SELECT hour, raw_id, job, id_class, uid, "
                           "host_id FROM jobstats_packed GROUP BY 1, 2, 3, 4, 5, 6 "
                           "HAVING count(*) > 1) x").fetchone()[0]
    assert dup == 0


def test_a_killed_pack_loses_and_doubles_nothing(loaded: str) -> None:
    before = figures(loaded)
    hot, _ = tiers_count(loaded)
    env = {**os.environ, "SLURM_IO_CONFIG": "/dev/null"}
    proc = subprocess.Popen(
        [JOBIO, "--dsn", loaded, "db", "pack", "--min-age", "0s", "--max-wait", "0s",
         "--rows-per-transaction", "20"], env=env, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and tiers_count(loaded)[1] == 0:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # in the middle: some chunks packed, others not
    proc.wait()
    time.sleep(0.5)  # the server notices the dead client and rolls its statement back
    h, p = tiers_count(loaded)
    assert h + p == hot and 0 < p < hot, (h, p, hot)
    assert figures(loaded) == before
    ran = subprocess.run([JOBIO, "--dsn", loaded, "db", "pack", "--min-age", "0s",
                          "--max-wait", "0s"], env=env, capture_output=True, text=True,
                         check=False)
    assert ran.returncode == 0, ran.stderr
    assert "hour(s) packed" in ran.stdout
    assert tiers_count(loaded) == (0, hot)
    assert figures(loaded) == before


def test_prune_drops_packed_days(loaded: str) -> None:
    _pack(loaded)
    name = partitions.packed_partition_name(DAY)
    with psycopg.connect(loaded) as conn:
        assert conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() != (None,)
        dropped = partitions.prune(conn, 86400.0, NOW)
        assert partitions.partition_name(DAY) in dropped
        assert conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() == (None,)
        assert conn.execute("SELECT count(*) FROM jobstats_packed").fetchone() == (0,)


def test_db_pack_refuses_a_bad_duration_in_one_line(loaded: str) -> None:
    ran = subprocess.run([JOBIO, "--dsn", loaded, "db", "pack", "--min-age", "6"],
                         env={**os.environ, "SLURM_IO_CONFIG": "/dev/null"},
                         capture_output=True, text=True, check=False)
    assert ran.returncode != 0 and "Traceback" not in ran.stderr
    assert "--min-age" in ran.stderr


H = 1_795_000_000.0 // HOUR * HOUR
# (hour's start relative to now, hot rows, pending jobs) -> packed now?
POLICY = [
    (-2 * HOUR, 10, 0, False),  # ended an hour ago: younger than min_age (6 h)
    (-7 * HOUR, 10, 0, True),  # ended 6 h ago, its jobs attributed
    (-7 * HOUR, 0, 0, False),  # nothing hot
    (-7 * HOUR, 10, 3, False),  # finished jobs still to attribute
    (-49 * HOUR, 10, 3, True),  # ... but it ended 2 days ago: max_wait
    (-47 * HOUR, 10, 3, False),
    (-6.5 * HOUR, 10, 0, False),  # still in min_age by half an hour
]


@pytest.mark.parametrize(("rel", "hot", "pending", "want"), POLICY)
def test_closed_policy(rel: float, hot: int, pending: int, want: bool) -> None:
    assert closed(HourState(H + rel, hot, pending), now=H) is want


def test_chunks() -> None:
    assert [tiers_pack.chunks(n, 100) for n in (0, 1, 100, 101, 1000)] == [1, 1, 1, 2, 10]


def _visible_as(dsn: str, role: str) -> tuple[int, int]:
    """(deltas of both tiers, packed rows) that `role` reads through store.tiers."""
    from slurm_io.store import tiers

    with psycopg.connect(dsn) as conn:
        conn.execute(f"SET ROLE {role}")
        row = conn.execute(
            f"SELECT (SELECT count(*) FROM {tiers.window('%(lo)s', '%(hi)s')} d), "
            "(SELECT count(*) FROM jobstats_packed)",
            {"lo": "1970-01-02", "hi": "2100-01-01"}).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_user_reads_the_same_own_deltas_from_either_tier(loaded: str) -> None:
    role = f"pack_user_{os.getpid()}"
    with psycopg.connect(loaded, autocommit=True) as conn:
        (uid,) = conn.execute("SELECT uid FROM job WHERE uid IS NOT NULL ORDER BY job LIMIT 1"
                              ).fetchone()
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} NOLOGIN IN ROLE jobio_user")
        conn.execute("INSERT INTO jobio_account (rolname, uid) VALUES (%s, %s)", (role, uid))
        (own,) = conn.execute(
            "SELECT count(*) FROM jobstats_delta WHERE uid = %(u)s OR job IN "
            "(SELECT job_raw FROM job WHERE uid = %(u)s)", {"u": uid}).fetchone()
        (everyone,) = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()
    try:
        assert 0 < own < everyone
        assert _visible_as(loaded, role) == (own, 0)
        _pack(loaded)
        seen, rows = _visible_as(loaded, role)
        assert seen == own and rows > 0
        with psycopg.connect(loaded) as conn:
            (all_rows,) = conn.execute("SELECT count(*) FROM jobstats_packed").fetchone()
        assert rows < all_rows  # the other users' packed rows stay invisible
    finally:
        with psycopg.connect(loaded, autocommit=True) as conn:
            conn.execute("DELETE FROM jobio_account WHERE rolname = %s", (role,))
            conn.execute(f"DROP ROLE IF EXISTS {role}")
