"""The day's three scans (LASSi's hour sums, the daily rates, the heat map) summed per bucket
range first and then spread (lassi.sql.spread_groups_sql) give the same figures, to the last
bit, as spreading every delta (the statements as they were, kept here as the reference).

The day: a simulated cluster replayed through the collector, plus deltas of missed reads
(spread over several intervals, over hour boundaries, from before the day), one hour packed
(`jobio db pack`'s pack_hour), then a spooled batch replayed late into that packed hour and
into an hour already read: every case a bucket range and a tier can give.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest

from slurm_io.lassi import days
from slurm_io.lassi import sql as lsql
from slurm_io.model import METADATA_OPS, Batch, ByteStats, Delta, IdClass, JobId
from slurm_io.report import daily_sql
from slurm_io.simulate import simulate
from slurm_io.store import tiers, tiers_pack
from slurm_io.store.sqlutil import ts
from slurm_io.store.writer import write_batch
from tests.attribute.simulated import load

pytestmark = pytest.mark.pg
START = 1_795_000_000.0  # 2026-11-18 11:06 UTC
DAY = date(2026, 11, 18)
D0, D1 = days.day_bounds(DAY)


# -- the reference: every delta spread on its own (the statements before the sums) ----------
def _reference_day_sql() -> str:
    sums = ", ".join(f"coalesce(sum(x.f * ({e})), 0)::float8" for _, e in lsql._SUMS)
    return (
        "SELECT t.fs, t.kind, x.b * 3600 AS h, d.job, GROUPING(d.job) AS g, min(d.uid), "
        f"{sums} FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
        + lsql.spread_sql("3600", "%(first)s")
        + "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s "
        "GROUP BY GROUPING SETS ((t.fs, t.kind, x.b, d.job), (t.fs, t.kind, x.b))")


def _reference_rates_sql() -> str:
    from slurm_io.lassi import metrics as M

    md = " + ".join(f"coalesce(d.op_{m}, 0)" for m in M.MDS_METRICS)
    return (
        "SELECT t.fs, x.b, coalesce(sum(x.f * d.read_bytes), 0)::float8, "
        "coalesce(sum(x.f * d.write_bytes), 0)::float8, "
        f"coalesce(sum(x.f * ({md})) FILTER (WHERE t.kind = 'MDT'), 0)::float8 "
        f"FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
        f"{lsql.spread_sql('%(w)s', '%(first)s')}"
        "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2 ORDER BY 2, 1")


def _reference_heat_sql() -> str:
    meta = " + ".join(f"coalesce(d.op_{op}, 0)" for op in sorted(METADATA_OPS))
    s = (
        "WITH s AS (SELECT x.b, d.job, CASE WHEN d.job IS NULL THEN d.uid END AS u, "
        "CASE WHEN d.job IS NULL THEN d.host_id END AS h, "
        "sum(x.f * d.write_bytes)::float8 / %(w)s AS wr, "
        "sum(x.f * d.read_bytes)::float8 / %(w)s AS rr, "
        f"sum(x.f * ({meta}))::float8 / %(w)s AS mr "
        f"FROM {tiers.window('%(lo)s', '%(hi)s')} d {lsql.spread_sql('%(w)s', '%(first)s')}"
        "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2, 3, 4) ")
    return s + " UNION ALL ".join(
        f"SELECT '{m}', b, floor(ln({c}) / ln(%(base)s) + 1e-9)::int, count(*) FROM s "
        f"WHERE {c} > 0 GROUP BY 2, 3" for m, c in (("write", "wr"), ("read", "rr"),
                                                   ("meta", "mr")))


def figures(conn: psycopg.Connection, reference: bool) -> dict[str, Any]:
    """The three scans' rows of the day, sorted (old statements or the module's)."""
    out: dict[str, Any] = {}
    p = {"lo": ts(D0), "hi": ts(D1), "first": int(D0 // 3600)}
    if reference:
        out["lassi"] = conn.execute(_reference_day_sql(), p).fetchall()
    else:
        out["lassi"] = [(r.fs, r.kind, r.hour, r.job, int(r.total), r.uid,
                         *r.sums.values()) for r in lsql.day_sums(conn, D0, D1)]
    out["lassi"] = sorted((tuple(float(v) if i == 2 else v for i, v in enumerate(r))
                           for r in out["lassi"]), key=repr)
    for width in (120.0, 300.0, 3600.0):
        q = {"w": width, "lo": ts(D0), "hi": ts(D1), "first": int(D0 // width), "base": 4.0}
        if reference:
            rates = [tuple(r) for r in conn.execute(_reference_rates_sql(), q)]
            heat = [tuple(r) for r in conn.execute(_reference_heat_sql(), q)]
        else:
            rates = [tuple(r) for r in daily_sql.rates(conn, D0, D1, width)]
            heat = [tuple(r) for r in daily_sql.heat_counts(conn, D0, D1, width, 4.0)]
        out[f"rates {width}"] = rates  # both ordered by (interval, fs)
        out[f"heat {width}"] = sorted(heat)
    conn.rollback()
    return out


# -- the day -----------------------------------------------------------------------------------
def _write(conn: psycopg.Connection, collector: str, items: list[tuple[Delta, JobId]]) -> None:
    assert write_batch(conn, Batch(collector, 1, max(d.t1 for d, _ in items), (), items,
                                   len(items), 0, 0, 0))


def _bytes(n: int) -> dict[str, ByteStats]:
    return {"write_bytes": ByteStats(n, 4096, 1 << 20, n * 65536 + 3, None, None),
            "read_bytes": ByteStats(n + 1, 512, 4096, (n + 1) * 1000 + 7, None, None)}


def _missed_reads(conn: psycopg.Connection) -> list[tuple[Delta, JobId]]:
    """Deltas whose interval spans several collector periods: 10 minutes inside an hour,
    2.5 hours over hour boundaries, one from the day before, 1.5 h and a microsecond more;
    ends on a whole hour and a microsecond after; of a job, of a system uid, of a
    `:uid:host` entry, on an OST and on the MDT."""
    raw, uid, node = conn.execute(
        "SELECT j.job_raw, j.uid, h.name FROM job j JOIN job_node jn USING (job) "
        "JOIN host h USING (host_id) ORDER BY j.job LIMIT 1").fetchone()
    ost, mdt = (conn.execute("SELECT name FROM fs_target WHERE kind = %s ORDER BY name "
                             "LIMIT 1", (k,)).fetchone()[0] for k in ("OST", "MDT"))
    exact = JobId(IdClass.EXACT, raw, uid, node, None, False)
    system = JobId(IdClass.SYSTEM, None, 0, node, None, False)
    missing = JobId(IdClass.JOB_MISSING, None, uid, node, None, False)
    md = {"open": 11, "close": 13, "getattr": 101, "mkdir": 3, "statfs": 5}
    out = []
    edge = (START // 3600 + 2) * 3600  # a whole hour: (h - 1 h, h] holds a ts_end of h
    for i, (t0, t1) in enumerate([(START + 600, START + 1201.5), (START + 1800, START + 10800),
                                  (D0 - 5000, D0 + 1500.25), (START + 3000, START + 3190),
                                  (edge - 120, edge), (edge - 119.999999, edge + 0.000001),
                                  (edge - 5400, edge), (edge - 5400.000001, edge + 240)]):
        for target, samples, stats in ((ost, {"write_bytes": 17 + i, "read_bytes": 9 + i,
                                              "punch": 2, "sync": 1}, _bytes(17 + i)),
                                       (mdt, md, {})):
            for k, jid in enumerate((exact, system, missing)):
                rid = {0: f"{raw}:{uid}:{node}", 1: f":0:{node}", 2: f":{uid}:{node}"}[k]
                out.append((Delta(target, rid, rid, t0, t1, t1 - 1, samples, stats, 8), jid))
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sums") / "cluster"
    simulate(out, seed=7, start=START, hours=3, n_nodes=10, n_oss=2, jobs_per_hour=10)
    return out


def test_summed_scans_equal_the_per_delta_scans(cluster: Path, db_dsn: str,
                                                tmp_path: Path) -> None:
    load(cluster, db_dsn, tmp_path)
    with psycopg.connect(db_dsn) as conn:
        extra = _missed_reads(conn)
        conn.commit()
        _write(conn, "missed-reads", extra)
        before = figures(conn, reference=True)
        assert figures(conn, reference=False) == before
        assert len(before["lassi"]) > 50 and len(before["heat 120.0"]) > 50
        # a long delta reaches buckets before its own: some groups are spread
        assert any(r[1] < int(START // 120) for r in before["rates 120.0"])

        # one hour packed, then a spooled batch replayed into it and into an earlier hour
        hour = (START // 3600 + 1) * 3600
        hot = conn.execute("SELECT count(*) FROM jobstats_delta WHERE ts_end >= %s "
                           "AND ts_end < %s", (ts(hour), ts(hour + 3600))).fetchone()[0]
        moved, _ = tiers_pack.pack_hour(conn, hour, hot, rows_per_transaction=50)
        assert moved == hot > 0
        late = [(d._replace(t0=d.t0 + k, t1=t1, last_update=t1 - 2), j)
                for k, (t1, (d, j)) in enumerate(zip((hour + 700.0, hour + 1300.0,
                                                      START + 60.0, hour + 3599.0),
                                                     extra[::5], strict=False))]
        conn.commit()
        _write(conn, "spooled", late)
        packed = conn.execute("SELECT count(*) FROM jobstats_packed").fetchone()[0]
        assert packed > 0
        after = figures(conn, reference=True)
        assert after != before  # the packed hour and the late data are read
        assert figures(conn, reference=False) == after
