"""The daily page's statements (report.daily): the day's rates and heat map over intervals
of a chosen width, every delta spread over the intervals it spans, and the LASSi baselines.
Apart from report.sql, whose statements serve `top`, the exporter and the other views."""

from __future__ import annotations

from datetime import date, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from slurm_io.report.sql import ts
from slurm_io.store import tiers

if TYPE_CHECKING:
    from psycopg import Connection


class Rate(NamedTuple):
    """What one filesystem moved in one interval (b*width, +width]."""

    fs: str
    b: int
    read_bytes: float
    write_bytes: float
    md_ops: float


class HeatCount(NamedTuple):
    """How many series had a `metric` rate in [base^k, base^(k+1)) in interval b."""

    metric: str
    b: int
    k: int
    n: int


class Baseline(NamedTuple):
    """The LASSi baseline a filesystem's day was scored against."""

    fs: str
    a: float
    first: datetime
    after_last: datetime
    hours: int
    own: list[str]


@cache
def _daily_sql() -> tuple[str, str]:
    """RATES_SQL and HEATMAP_SQL (built once, on first use: they need the LASSi spreading)."""
    from slurm_io.lassi import metrics as M
    from slurm_io.lassi.sql import spread_sql
    from slurm_io.model import METADATA_OPS

    md_mdt = " + ".join(f"coalesce(d.op_{m}, 0)" for m in M.MDS_METRICS)
    meta_all = " + ".join(f"coalesce(d.op_{op}, 0)" for op in sorted(METADATA_OPS))
    spread = spread_sql("%(w)s", "%(first)s")
    rates = (
        "SELECT t.fs, x.b, coalesce(sum(x.f * d.read_bytes), 0)::float8, "
        "coalesce(sum(x.f * d.write_bytes), 0)::float8, "
        f"coalesce(sum(x.f * ({md_mdt})) FILTER (WHERE t.kind = 'MDT'), 0)::float8 "
        f"FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
        f"{spread}"
        "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2 ORDER BY 2"
    )
    # One series = a job (ids naming it), or a (uid, host) outside jobs; its rate in one
    # interval = what it moved in the interval / interval length; then counted per log bin.
    heatmap = (
        "WITH s AS (SELECT x.b, d.job, "
        "CASE WHEN d.job IS NULL THEN d.uid END AS u, "
        "CASE WHEN d.job IS NULL THEN d.host_id END "
        "AS h, sum(x.f * d.write_bytes)::float8 / %(w)s AS wr, "
        "sum(x.f * d.read_bytes)::float8 / %(w)s AS rr, "
        f"sum(x.f * ({meta_all}))::float8 / %(w)s AS mr "
        f"FROM {tiers.window('%(lo)s', '%(hi)s')} d {spread}"
        "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s GROUP BY 1, 2, 3, 4) "
        "SELECT 'write', b, floor(ln(wr) / ln(%(base)s) + 1e-9)::int, count(*) FROM s "
        "WHERE wr > 0 GROUP BY 2, 3 "
        "UNION ALL SELECT 'read', b, floor(ln(rr) / ln(%(base)s) + 1e-9)::int, count(*) FROM s "
        "WHERE rr > 0 GROUP BY 2, 3 "
        "UNION ALL SELECT 'meta', b, floor(ln(mr) / ln(%(base)s) + 1e-9)::int, count(*) FROM s "
        "WHERE mr > 0 GROUP BY 2, 3"
    )
    return rates, heatmap


def _spread_params(start: float, end: float, width: float, **kw: Any) -> dict[str, Any]:
    return {"w": width, "lo": ts(start), "hi": ts(end), "first": int(start // width), **kw}


def rates(conn: Connection, start: float, end: float, width: float) -> list[Rate]:
    """Read/write bytes and MDT metadata operations per fs and interval, by interval."""
    return [Rate(*r) for r in conn.execute(_daily_sql()[0],
                                           _spread_params(start, end, width)).fetchall()]


def heat_counts(conn: Connection, start: float, end: float, width: float,
                base: float) -> list[HeatCount]:
    """Series counted per metric, interval and logarithmic rate bin."""
    return [HeatCount(*r) for r in conn.execute(
        _daily_sql()[1], _spread_params(start, end, width, base=base))]


def baselines(conn: Connection, day: date) -> list[Baseline]:
    """The LASSi baselines of the day's filesystems (lassi_day), by filesystem."""
    return [Baseline(fs, a, f, to, n, list(own)) for fs, a, f, to, n, own in conn.execute(
        "SELECT fs, a, baseline_from, baseline_to, baseline_hours, own_metrics "
        "FROM lassi_day WHERE day = %s ORDER BY fs", (day,))]
