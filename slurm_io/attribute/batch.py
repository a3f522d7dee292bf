"""Attributing many finished jobs at once: what `jobio attribute` and the demo run.

The inputs of each job are exactly those attribute.sql.attribute_job fetches for it alone
(its direct deltas, the `:uid:host` deltas on its nodes, the jobs of its uid there, what
those did by their own id), but fetched for a chunk of jobs by four set-based queries and
handed to each job by the same bounds in Python: three to four round trips per job were
most of the batch's time (bench/bench_show.py batch). The results go back by one COPY per
chunk into a temporary table and one INSERT ... ON CONFLICT, the hours by one COPY.
The rules are applied by attribute.core.attribute, as for a single job.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from slurm_io.attribute.core import DeltaRow, JobIO, JobWindow, attribute
from slurm_io.attribute.evidence import WINDOWS
from slurm_io.attribute.shared_ids import Owners
from slurm_io.attribute.sql import (
    DELTA_COLUMNS,
    MARGIN,
    UPSERT_JOB_IO,
    JobInfo,
    _hour_rows,
    _ts,
    data_complete_until,
    delta_rows,
    direct_deltas,
    store_hours,
)
from slurm_io.model import IdClass

# the names of a delta's target and host
_JOIN_NAMES = (" JOIN fs_target t ON t.target_id = d.target_id "
               "LEFT JOIN host h ON h.host_id = d.host_id")
CHUNK = 250  # jobs per round of queries: bounds the rows held at once
_EVIDENCE_MARGIN = MARGIN / 24  # attribute_job's: deltas naming a competitor, an hour late

# Each job's own window (a day around its run) in the join, the chunk's bounds for pruning.
_DIRECT_SQL = (
    DELTA_COLUMNS + " FROM unnest(%s::bigint[], %s::timestamptz[], %s::timestamptz[])"
    " AS w(job, lo, hi)"
    " JOIN jobstats_delta d ON d.job = w.job AND d.ts_end >= w.lo AND d.ts_end <= w.hi"
    + _JOIN_NAMES
    + " WHERE d.ts_end >= %s AND d.ts_end <= %s"
)
# One row per (host, uid) with the union of the chunk's windows there; jobstats_delta_host_ts
# holds only JOB_MISSING rows (sql/0008), hence the constant id class.
_RECOVERED_SQL = (
    DELTA_COLUMNS + " FROM unnest(%s::int[], %s::int[], %s::timestamptz[], %s::timestamptz[])"
    " AS w(host_id, uid, lo, hi)"
    " JOIN jobstats_delta d ON d.host_id = w.host_id AND d.uid = w.uid"
    f" AND d.id_class = {int(IdClass.JOB_MISSING)}"
    " AND d.ts_end > w.lo AND d.ts_start < w.hi AND d.ts_end < w.hi + make_interval(secs => %s)"
    + _JOIN_NAMES
    + " WHERE d.ts_end > %s AND d.ts_end < %s"
)
_COMPETITORS_SQL = (
    "SELECT h.name, jn.uid, jn.job, extract(epoch FROM jn.start_time)::float8,"
    " extract(epoch FROM jn.end_time)::float8, j.uid, j.nodes,"
    " extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8,"
    " j.job_raw, j.cluster"
    " FROM unnest(%s::int[], %s::int[], %s::timestamptz[], %s::timestamptz[])"
    " AS w(host_id, uid, lo, hi)"
    " JOIN job_node jn ON jn.host_id = w.host_id AND jn.uid = w.uid"
    " AND jn.start_time < w.hi AND coalesce(jn.end_time, 'infinity') > w.lo"
    " JOIN host h ON h.host_id = jn.host_id JOIN job j ON j.job = jn.job"
)
_EVIDENCE_SQL = (
    DELTA_COLUMNS + " FROM unnest(%s::bigint[], %s::timestamptz[], %s::timestamptz[])"
    " AS w(job, lo, hi)"
    " JOIN jobstats_delta d ON d.job = w.job AND d.ts_end >= w.lo AND d.ts_end <= w.hi"
    + _JOIN_NAMES
    + " WHERE d.ts_end >= %s AND d.ts_end <= %s"
)


def _us(t: float) -> float:
    """`t` on the server's microsecond grid, as the per-job queries compare it."""
    return round(t * 1e6) / 1e6


def _run_end(j: JobWindow, now: float) -> float:
    return j.end if j.end is not None else now


def _pairs(windows: dict[tuple[int, int], list[float]]) -> list[list[Any]]:
    """Columns (host ids, uids, lo, hi) for the unnest of _RECOVERED_SQL/_COMPETITORS_SQL."""
    keys = sorted(windows)
    return [[k[0] for k in keys], [k[1] for k in keys],
            [_ts(windows[k][0]) for k in keys], [_ts(windows[k][1]) for k in keys]]


def _widen(windows: dict[Any, list[float]], key: Any, lo: float, hi: float) -> None:
    w = windows.get(key)
    if w is None:
        windows[key] = [lo, hi]
    else:
        w[0], w[1] = min(w[0], lo), max(w[1], hi)


def fetch_chunk(conn: psycopg.Connection, jobs: Sequence[JobWindow], now: float
                ) -> dict[int, tuple[list[DeltaRow], list[DeltaRow], list[JobWindow],
                                     list[DeltaRow]]]:
    """job -> (direct, recovered, competitors, evidence) as attribute_job fetches them."""
    out: dict[int, Any] = {}
    # -- direct: deltas naming the job's raw id within a day of its run (rows sharing a raw
    # id -- another cluster, another run -- keep only the deltas attribute.owners gives them)
    spans: dict[int, list[float]] = {}
    for j in jobs:
        if j.start is not None:
            _widen(spans, j.raw_id, j.start - MARGIN, _run_end(j, now) + MARGIN)
    direct: dict[int, list[DeltaRow]] = defaultdict(list)
    if spans:
        keys = sorted(spans)
        with conn.cursor(binary=True) as cur:
            cur.execute(_DIRECT_SQL, (
                keys, [_ts(spans[k][0]) for k in keys], [_ts(spans[k][1]) for k in keys],
                _ts(min(a for a, _ in spans.values())), _ts(max(b for _, b in spans.values()))))
            for d in delta_rows(cur):
                if d.job is not None:
                    direct[d.job].append(d)
    owned = Owners(conn, sorted(spans))
    for j in jobs:
        if j.start is None:
            out[j.job] = (direct_deltas(conn, j, now), [], [], [])
        else:
            a, b = _us(j.start - MARGIN), _us(_run_end(j, now) + MARGIN)
            mine = [d for d in direct.get(j.raw_id, ()) if a <= d.ts_end <= b]
            out[j.job] = (owned.of(j, mine, now), [], [], [])
    # -- recovered: `:uid:host` deltas on the job's nodes, widened by the evidence window
    w = WINDOWS[-1]
    host_ids = _host_ids(conn, {n for j in jobs for n in j.nodes})
    rec_jobs = [j for j in jobs if j.uid is not None and j.nodes and j.start is not None]
    windows: dict[tuple[int, int], list[float]] = {}
    for j in rec_jobs:
        assert j.start is not None and j.uid is not None
        for n in j.nodes:
            if n in host_ids:
                _widen(windows, (host_ids[n], j.uid), j.start - w, _run_end(j, now) + w)
    if not windows:
        return out
    by_pair: dict[tuple[str | None, int | None], list[DeltaRow]] = defaultdict(list)
    glo = min(v[0] for v in windows.values())
    ghi = max(v[1] for v in windows.values()) + MARGIN
    with conn.cursor(binary=True) as cur:
        cur.execute(_RECOVERED_SQL, (*_pairs(windows), MARGIN, _ts(glo), _ts(ghi)))
        for d in delta_rows(cur):
            by_pair[(d.node, d.uid)].append(d)
    rec: dict[int, tuple[list[DeltaRow], list[DeltaRow]]] = {}
    comp_windows: dict[tuple[int, int], list[float]] = {}
    for j in rec_jobs:
        assert j.start is not None
        end = _run_end(j, now)
        narrow, wide = [], []
        a0, b0, c0 = _us(j.start), _us(end), _us(end + MARGIN)
        a1, b1, c1 = _us(j.start - w), _us(end + w), _us(end + w + MARGIN)
        for n in j.nodes:
            for d in by_pair.get((n, j.uid), ()):
                if d.ts_end > a1 and d.ts_start < b1 and d.ts_end < c1:
                    wide.append(d)
                    if d.ts_end > a0 and d.ts_start < b0 and d.ts_end < c0:
                        narrow.append(d)
        rec[j.job] = (narrow, wide)
        if narrow:
            lo, hi = min(d.ts_start for d in narrow), max(d.ts_end for d in narrow)
            for n in j.nodes:
                if n in host_ids and j.uid is not None:
                    _widen(comp_windows, (host_ids[n], j.uid), lo, hi)
    # -- competitors: the jobs of the uid on the job's nodes while its deltas ran
    node_jobs: dict[tuple[str, int], list[tuple[float | None, float | None, JobWindow]]] = \
        defaultdict(list)
    if comp_windows:
        for name, uid, job, st, en, juid, nodes, jst, jen, raw, cluster in conn.execute(
                _COMPETITORS_SQL, _pairs(comp_windows)):
            node_jobs[(name, uid)].append(
                (st, en, JobWindow(job, juid, tuple(nodes or ()), jst, jen, raw, cluster)))
    ev_windows: dict[int, list[float]] = {}
    plans: dict[int, tuple[list[JobWindow], list[int], float, float]] = {}  # others: raw ids
    for j in rec_jobs:
        narrow, wide = rec[j.job]
        if not narrow:
            continue
        lo, hi = min(d.ts_start for d in narrow), max(d.ts_end for d in narrow)
        lo_us, hi_us = _us(lo), _us(hi)
        comp: dict[int, JobWindow] = {}
        for n in j.nodes:
            for st, en, c in node_jobs.get((n, j.uid), ()):  # type: ignore[call-overload]
                if (st is not None and st < hi_us
                        and (en is None or en > lo_us) and c.job not in comp):
                    comp[c.job] = c
        others = sorted({c.raw_id for c in comp.values() if c.job != j.job})  # raw ids
        plans[j.job] = (list(comp.values()), others, lo, hi)
        if others:
            for o in others:
                _widen(ev_windows, o, lo - w, hi + w + _EVIDENCE_MARGIN)
    # -- evidence: what the competitors did by their own id around the job's deltas
    ev_rows: dict[int, list[DeltaRow]] = defaultdict(list)
    if ev_windows:
        keys = sorted(ev_windows)
        with conn.cursor(binary=True) as cur:
            cur.execute(_EVIDENCE_SQL, (
                keys, [_ts(ev_windows[k][0]) for k in keys],
                [_ts(ev_windows[k][1]) for k in keys],
                _ts(min(v[0] for v in ev_windows.values())),
                _ts(max(v[1] for v in ev_windows.values()))))
            for d in delta_rows(cur):
                if d.job is not None:
                    ev_rows[d.job].append(d)
    for j in rec_jobs:
        narrow, wide = rec[j.job]
        plan = plans.get(j.job)
        if plan is None:
            out[j.job] = (out[j.job][0], narrow, [], [])
            continue
        comp_list, others, lo, hi = plan
        if not others:
            out[j.job] = (out[j.job][0], narrow, comp_list, [])
            continue
        a, b = _us(lo - w), _us(hi + w + _EVIDENCE_MARGIN)
        ev = [d for o in others for d in ev_rows.get(o, ()) if a <= d.ts_end <= b]
        out[j.job] = (out[j.job][0], wide, comp_list, ev)
    return out


def _host_ids(conn: psycopg.Connection, names: set[str]) -> dict[str, int]:
    if not names:
        return {}
    return dict(conn.execute("SELECT name, host_id FROM host WHERE name = ANY(%s)",
                             (sorted(names),)).fetchall())


_STAGE_COLS = ("job", "uid", "complete", "totals", "recovered", "ambiguous", "by_target",
               "by_node", "timeline", "quality", "split", "by_evidence", "by_time",
               "n_direct", "n_recovered")


def store_many(conn: psycopg.Connection, results: Sequence[tuple[JobWindow, JobIO, bool]],
               data_until: datetime | None) -> None:
    """Store (replace) many jobs' figures: one COPY into a temporary table, one upsert (the
    revision rule of attribute.sql.store_job_io), and their hours by one COPY."""
    if not results:
        return
    last = {j.job: (j, io, c) for j, io, c in results}  # a job given twice: its last figures
    d = json.dumps
    with conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _jobio_io_stage "
                    "(LIKE job_io INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
        cur.execute("TRUNCATE _jobio_io_stage")
        with cur.copy(f"COPY _jobio_io_stage ({', '.join(_STAGE_COLS)}) FROM STDIN") as cp:
            for j, io, complete in last.values():
                cp.write_row((j.job, j.uid, complete, d(io.totals), d(io.recovered),
                              d(io.ambiguous), d(io.by_target), d(io.by_node),
                              d(io.timeline), d(io.quality), d(io.split), d(io.by_evidence),
                              d(io.by_time), io.n_direct, io.n_recovered))
        cols = ", ".join(_STAGE_COLS)
        cur.execute(
            f"INSERT INTO job_io ({cols}, computed_at, revision, data_until) "
            f"SELECT {cols}, now(), 1, %s FROM _jobio_io_stage " + UPSERT_JOB_IO, (data_until,))
        cur.execute("TRUNCATE _jobio_io_stage")
    store_hours(conn, list(last), [r for j, io, _ in last.values() for r in _hour_rows(j, io)])


def attribute_jobs(conn: psycopg.Connection, jobs: list[JobInfo], *, now: float | None = None,
                   resolution: float = 120.0) -> tuple[int, int]:
    """Attribute and store many jobs; returns (stored, complete)."""
    now = time.time() if now is None else now
    done_until = data_complete_until(conn)
    (newest,) = conn.execute("SELECT jobio_newest_ingest()").fetchone() or (None,)
    n = n_complete = 0
    splits: dict[Any, Any] = {}
    for i in range(0, len(jobs), CHUNK):
        chunk = jobs[i:i + CHUNK]
        inputs = fetch_chunk(conn, [info.window for info in chunk], now)
        results = []
        for info in chunk:
            j = info.window
            direct, rec, comp, ev = inputs[j.job]
            io = attribute(j, direct, rec, comp, now=now, resolution=resolution, evidence=ev,
                           splits=splits)
            complete = info.end is not None and done_until is not None and done_until >= info.end
            results.append((j, io, complete))
            n += 1
            n_complete += complete
        store_many(conn, results, newest)
    conn.commit()
    return n, n_complete
