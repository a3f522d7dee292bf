"""Fetching what attribution needs from PostgreSQL: the one delta fetch (query module).

A job's inputs are its direct deltas (naming its raw id within a day of its run), the
`:uid:host` deltas on its nodes around its run, the jobs of the same uid there, and what
those did by their own id. One job (show, the reporter), a chunk of jobs (`jobio attribute`)
and an interval (the live views) ask the same two questions, each for a set of windows in
one round trip: deltas naming some ids, each id in its own time window (`deltas_by_job`), and
`:uid:host` deltas of some (host, uid) pairs, each in its own window (`deltas_by_pair`).
Every decision is made in attribute.core/batch/live over what these return.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import compress
from typing import Any, NamedTuple

import psycopg

from slurm_io.attribute.owners import Claimant
from slurm_io.attribute.rows import DeltaRow
from slurm_io.jobs.info import JobWindow
from slurm_io.model import BYTE_COUNTERS, OP_COUNTERS, IdClass
from slurm_io.store import tiers
from slurm_io.store.sqlutil import ts as _ts

_COUNTER_COLS: list[tuple[str, str]] = []
for _b in BYTE_COUNTERS:
    _COUNTER_COLS += [(_b, f"d.{_b}"), (f"{_b}_samples", f"d.{_b}_samples")]
_COUNTER_COLS += [(op, f"d.op_{op}") for op in OP_COUNTERS]

DELTA_COLUMNS = (
    "SELECT extract(epoch FROM d.ts_start)::float8, extract(epoch FROM d.ts_end)::float8, "
    "extract(epoch FROM d.last_update)::float8, t.name, h.name, d.id_class, d.job, d.uid, "
    "d.read_bytes_min, d.read_bytes_max, d.read_bytes_hist, "
    "d.write_bytes_min, d.write_bytes_max, d.write_bytes_hist, d.extra, "
    "extract(epoch FROM d.entry_start)::float8, "
    + ", ".join(col for _, col in _COUNTER_COLS)
)


def delta_select(where: str, *, lo: str, hi: str) -> str:
    """DELTA_COLUMNS of the deltas of both tiers for which `where` holds (store.tiers:
    `lo`/`hi` bound their ts_end), with their target's and host's names."""
    return (DELTA_COLUMNS + " FROM " + tiers.deltas(where, lo=lo, hi=hi)
            + " d JOIN fs_target t USING (target_id) LEFT JOIN host h USING (host_id) ")


_N_FIXED = 16
_NAMES = [name for name, _ in _COUNTER_COLS]
# deltas naming a job may come up to a day late or early (clock skew, late collectors)
MARGIN = 86400.0
# a job never started: its deltas whenever they were read (these bound the windows)
EVER = (0.0, 4102444800.0)  # 1970 .. 2100


def _hist(v: Any) -> tuple[tuple[str, int], ...] | None:
    if not v:
        return None
    return tuple((k, int(c)) for k, c in v.items())


def delta_rows(cur: psycopg.Cursor) -> list[DeltaRow]:
    """The fetched rows as DeltaRows: counters keep their non-zero values (the columns are
    bigint: no conversion; a zero delta is stored as NULL). Per row as little Python as
    possible: a batch converts some 10^5 rows (bench/bench_show.py batch)."""
    out = []
    append = out.append
    make = DeltaRow._make
    names = _NAMES
    n = _N_FIXED
    for r in cur.fetchall():
        vals = r[n:]
        counters = dict(compress(zip(names, vals, strict=True), vals))
        if r[14]:
            for k, v in r[14].items():
                counters[k] = counters.get(k, 0) + int(v)
        rs, ws = r[n + 1], r[n + 3]  # read_bytes_samples, write_bytes_samples
        if rs or ws:
            sizes = {}
            if rs:
                sizes["read"] = (rs, r[8], r[9], _hist(r[10]))
            if ws:
                sizes["write"] = (ws, r[11], r[12], _hist(r[13]))
        else:
            sizes = {}
        append(make((r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], counters, sizes, r[15])))
    return out


# the names of a delta's target and host
_JOIN_NAMES = (" JOIN fs_target t ON t.target_id = d.target_id "
               "LEFT JOIN host h ON h.host_id = d.host_id")
# Deltas naming some ids within the hull of their windows (the index on (job, ts_end), and
# partition pruning by ts_end); each id's own window is applied to the rows (deltas_by_job):
# rows outside it exist only for ids used again (another cluster, a requeue), and a join
# over the windows (tried) costs a single job's show four times this query's time.
BY_JOB_SQL = delta_select("job = ANY(%(jobs)s) AND ts_end >= %(lo)s AND ts_end <= %(hi)s",
                          lo="%(lo)s", hi="%(hi)s")
# `:uid:host` deltas of (node, uid) pairs, each pair in its own window (lo, hi), ending
# less than `margin` seconds after hi (an interval is at most a collector outage long).
# jobstats_delta_host_ts holds only JOB_MISSING rows (sql/0008): the id class is a constant
# in the text, as a generic plan cannot match a parameter to the index's predicate.
# Both tiers (store.tiers), each pair's rows found by a LATERAL lookup of its host and uid.
BY_PAIR_SQL = (
    DELTA_COLUMNS + " FROM unnest(%(nodes)s::text[], %(uids)s::int[], %(los)s::timestamptz[],"
    " %(his)s::timestamptz[]) AS w(node, uid, lo, hi) JOIN host hw ON hw.name = w.node"
    " CROSS JOIN LATERAL " + tiers.deltas(
        "host_id = hw.host_id AND uid = w.uid"
        f" AND id_class = {int(IdClass.JOB_MISSING)}"
        " AND ts_end > w.lo AND ts_start < w.hi AND ts_end < w.hi + make_interval(secs => "
        "%(margin)s) AND ts_end > %(glo)s AND ts_end < %(ghi)s", lo="%(glo)s", hi="%(ghi)s")
    + " d" + _JOIN_NAMES
)
_COMPETITORS_SQL = (
    "SELECT h.name, jn.uid, jn.job, extract(epoch FROM jn.start_time)::float8,"
    " extract(epoch FROM jn.end_time)::float8, j.uid, j.nodes,"
    " extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8,"
    " j.job_raw, j.cluster"
    " FROM unnest(%s::text[], %s::int[], %s::timestamptz[], %s::timestamptz[])"
    " AS w(node, uid, lo, hi) JOIN host h ON h.name = w.node"
    " JOIN job_node jn ON jn.host_id = h.host_id AND jn.uid = w.uid"
    " AND jn.start_time < w.hi AND coalesce(jn.end_time, 'infinity') > w.lo"
    " JOIN job j ON j.job = jn.job"
)


def deltas_by_job(conn: psycopg.Connection, windows: dict[int, tuple[float, float]]
                  ) -> dict[int, list[DeltaRow]]:
    """raw id -> the deltas naming it with ts_end in its window [lo, hi]."""
    out: dict[int, list[DeltaRow]] = defaultdict(list)
    if not windows:
        return out
    glo = min(a for a, _ in windows.values())
    ghi = max(b for _, b in windows.values())
    with conn.cursor(binary=True) as cur:
        cur.execute(BY_JOB_SQL, {"jobs": sorted(windows), "lo": _ts(glo), "hi": _ts(ghi)})
        rows = delta_rows(cur)
    bounds = {k: (_us(a), _us(b)) for k, (a, b) in windows.items()}
    for d in rows:
        if d.job is not None:
            a, b = bounds[d.job]
            if a <= d.ts_end <= b:
                out[d.job].append(d)
    return out


def _us(t: float) -> float:
    """`t` on the server's microsecond grid, as a timestamptz parameter compares it."""
    return round(t * 1e6) / 1e6


def _pairs(windows: dict[tuple[str, int], tuple[float, float]]) -> list[list[Any]]:
    """Columns (nodes, uids, lo, hi) for the unnest of BY_PAIR_SQL/_COMPETITORS_SQL."""
    keys = sorted(windows)
    return [[k[0] for k in keys], [k[1] for k in keys],
            [_ts(windows[k][0]) for k in keys], [_ts(windows[k][1]) for k in keys]]


def deltas_by_pair(conn: psycopg.Connection, windows: dict[tuple[str, int], tuple[float, float]],
                   margin: float) -> list[DeltaRow]:
    """The `:uid:host` deltas of the (node, uid) pairs of `windows` that meet the pair's
    window (lo, hi) and end less than `margin` seconds after hi (nodes the database does
    not know have none)."""
    if not windows:
        return []
    glo = min(v[0] for v in windows.values())
    ghi = max(v[1] for v in windows.values()) + margin
    with conn.cursor(binary=True) as cur:
        nodes, uids, los, his = _pairs(windows)
        cur.execute(BY_PAIR_SQL, {"nodes": nodes, "uids": uids, "los": los, "his": his,
                                  "margin": margin, "glo": _ts(glo), "ghi": _ts(ghi)})
        return delta_rows(cur)


class NodeJob(NamedTuple):
    """A job of a uid on a node (job_node), with its own run on that node."""

    node: str
    uid: int
    start: float | None  # of its run on the node
    end: float | None
    job: JobWindow


def jobs_by_pair(conn: psycopg.Connection, windows: dict[tuple[str, int], tuple[float, float]]
                 ) -> list[NodeJob]:
    """The jobs of each (node, uid) pair of `windows` that ran there during its window."""
    if not windows:
        return []
    return [NodeJob(name, uid, st, en, JobWindow(job, juid, tuple(nodes or ()), jst, jen, raw,
                                                 cluster))
            for name, uid, job, st, en, juid, nodes, jst, jen, raw, cluster
            in conn.execute(_COMPETITORS_SQL, _pairs(windows))]


def host_names(conn: psycopg.Connection, ids: list[int]) -> dict[int, str]:
    """host id -> host name, for the ids given."""
    return dict(conn.execute("SELECT host_id, name FROM host WHERE host_id = ANY(%s)",
                             (ids,)).fetchall())


# -- whose deltas naming a shared raw id are (attribute.shared_ids, attribute.owners) --------
def claimants(conn: psycopg.Connection, raws: list[int]) -> dict[int, list[Claimant]]:
    """raw id -> the job rows with that raw id (other clusters, other runs)."""
    out: dict[int, list[Claimant]] = {}
    for key, raw, cluster, st, en in conn.execute(
            "SELECT job, job_raw, cluster, extract(epoch FROM start_time)::float8, "
            "extract(epoch FROM end_time)::float8 FROM job WHERE job_raw = ANY(%s)", (raws,)):
        out.setdefault(raw, []).append(Claimant(key, cluster, st, en))
    return out


def one_cluster(conn: psycopg.Connection) -> bool:
    """Whether the database knows at most one cluster (cluster_host)."""
    (one,) = conn.execute("SELECT count(*) <= 1 FROM (SELECT DISTINCT cluster "
                          "FROM cluster_host) c").fetchone() or (True,)
    return bool(one)


def node_clusters(conn: psycopg.Connection, nodes: list[str]) -> dict[str, frozenset[str]]:
    """node -> the clusters whose jobs ran on it (cluster_host), for `nodes`."""
    out: dict[str, set[str]] = {}
    for name, cluster in conn.execute(
            "SELECT h.name, c.cluster FROM cluster_host c JOIN host h USING (host_id) "
            "WHERE h.name = ANY(%s)", (nodes,)):
        out.setdefault(name, set()).add(cluster)
    return {k: frozenset(v) for k, v in out.items()}
