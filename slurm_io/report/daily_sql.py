"""The daily page's statements (report.daily): the day's rates and heat map over intervals
of a chosen width, every delta spread over the intervals it spans, and the LASSi baselines.
Apart from report.sql, whose statements serve `top`, the exporter and the other views."""

from __future__ import annotations

from datetime import date, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from slurm_io.report.sql import ts
from slurm_io.store import tiers
from slurm_io.store.sqlutil import hash_groups

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
    """RATES_SQL and HEATMAP_SQL (built once, on first use: they need the LASSi spreading).

    The rates first sum the deltas in bigint (the server's int128 sums, in the parallel
    workers) per target and raw (ts_start, ts_end), which fixes a delta's buckets: ~47,000
    groups of a site's 47 M deltas a day (a target's entries share their reads' times); the
    bucket range of each group is then computed once and the groups spread
    (lassi.sql.spread_groups_sql): the same figures to the last digit as spreading every
    delta, without per-delta bucket arithmetic, set-returning call and numeric products
    (bench/README.md, "A day at a site")."""
    from slurm_io.lassi import metrics as M
    from slurm_io.lassi.sql import bucket_range_sql, spread_groups_sql, spread_sql
    from slurm_io.model import METADATA_OPS

    md_mdt = " + ".join(f"coalesce(d.op_{m}, 0)" for m in M.MDS_METRICS)
    meta_all = " + ".join(f"coalesce(d.op_{op}, 0)" for op in sorted(METADATA_OPS))
    lo, hi = bucket_range_sql("%(w)s", "%(first)s")
    window = tiers.window("%(lo)s", "%(hi)s")
    in_day = "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s"

    def ranged(raw: str) -> str:
        """`raw` (sums per ..., ts_start, ts_end, as `d`) with each group's bucket range."""
        return f"(SELECT d.*, {lo} AS lo, {hi} AS hi FROM ({raw}) d) g "

    rates = (
        "SELECT t.fs, x.b, coalesce(sum(x.f * g.rb), 0)::float8, "
        "coalesce(sum(x.f * g.wb), 0)::float8, "
        "coalesce(sum(x.f * g.md) FILTER (WHERE t.kind = 'MDT'), 0)::float8 FROM "
        + ranged("SELECT d.target_id, d.ts_start, d.ts_end, sum(d.read_bytes) AS rb, "
                 f"sum(d.write_bytes) AS wb, sum({md_mdt}) AS md FROM {window} d {in_day} "
                 "GROUP BY 1, 2, 3")
        + f"JOIN fs_target t USING (target_id) {spread_groups_sql('g')}"
        "GROUP BY 1, 2 ORDER BY 2, 1"
    )
    # One series = a job (ids naming it), or a (uid, host) outside jobs; its rate in one
    # interval = what it moved in the interval / interval length; then counted per log bin.
    # Each delta spread on its own here: ~19 M series-intervals of a site's 47 M deltas a
    # day leave nothing for a first sum per range to save, and the second aggregation it
    # needs cost more than the spreading (2 hours of the site: 65 s against 72-97 s).
    heatmap = (
        "WITH s AS (SELECT x.b, d.job, "
        "CASE WHEN d.job IS NULL THEN d.uid END AS u, "
        "CASE WHEN d.job IS NULL THEN d.host_id END "
        "AS h, sum(x.f * d.write_bytes)::float8 / %(w)s AS wr, "
        "sum(x.f * d.read_bytes)::float8 / %(w)s AS rr, "
        f"sum(x.f * ({meta_all}))::float8 / %(w)s AS mr "
        f"FROM {window} d {spread_sql('%(w)s', '%(first)s')}"
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
    with hash_groups(conn):
        return [Rate(*r) for r in conn.execute(_daily_sql()[0],
                                               _spread_params(start, end, width)).fetchall()]


def heat_counts(conn: Connection, start: float, end: float, width: float,
                base: float, *, first: int | None = None) -> list[HeatCount]:
    """Series counted per metric, interval and logarithmic rate bin, of the deltas with
    ts_end in (start, end]. `first`: the interval no delta is spread before (default: that of
    `start`); an hour of a day (report.heat_hours) passes its day's, so that a long delta
    is spread as the whole day's statement spreads it."""
    params = _spread_params(start, end, width, base=base)
    if first is not None:
        params["first"] = first
    return [HeatCount(*r) for r in conn.execute(_daily_sql()[1], params)]


def baselines(conn: Connection, day: date) -> list[Baseline]:
    """The LASSi baselines of the day's filesystems (lassi_day), by filesystem."""
    return [Baseline(fs, a, f, to, n, list(own)) for fs, a, f, to, n, own in conn.execute(
        "SELECT fs, a, baseline_from, baseline_to, baseline_hours, own_metrics "
        "FROM lassi_day WHERE day = %s ORDER BY fs", (day,))]
