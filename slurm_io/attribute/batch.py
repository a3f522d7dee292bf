"""Fetching the inputs of attribution for one job or many, and attributing them.

The inputs of a job are its direct deltas, the `:uid:host` deltas on its nodes, the jobs of
its uid there and what those did by their own id. They are fetched for a set of jobs at once
(one job for `jobio show` and the reporter, a chunk of CHUNK for `jobio attribute`) by the
set-based questions of attribute.sql and handed to each job by its own bounds here: three to
four round trips per job were most of the batch's time (bench/bench_show.py batch), and one
fetch for every path keeps single and batch figures the same by construction. The rules are
applied by attribute.core.attribute; attribute.stored stores the results.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

from slurm_io.attribute import sql, stored
from slurm_io.attribute.core import JobIO, attribute
from slurm_io.attribute.evidence import WINDOWS
from slurm_io.attribute.rows import DeltaRow
from slurm_io.attribute.shared_ids import Owners
from slurm_io.attribute.sql import MARGIN
from slurm_io.jobs.info import JobInfo, JobWindow

if TYPE_CHECKING:
    import psycopg

CHUNK = 250  # jobs per round of queries: bounds the rows held at once
_EVIDENCE_MARGIN = MARGIN / 24  # deltas naming a competitor may come an hour late


class Inputs(NamedTuple):
    """What attribute.core.attribute takes for one job, as fetched."""

    direct: list[DeltaRow]  # naming the job's raw id, those attribute.owners gives it
    recovered: list[DeltaRow]  # `:uid:host` on its nodes (widened by WINDOWS[-1] w/ evidence)
    competitors: list[JobWindow]  # the jobs of its uid on its nodes then (itself included)
    evidence: list[DeltaRow]  # what the competitors did by their own id around them


def _us(t: float) -> float:
    """`t` on the server's microsecond grid, as the queries compare it."""
    return round(t * 1e6) / 1e6


def _run_end(j: JobWindow, now: float) -> float:
    return j.end if j.end is not None else now


def _widen(windows: dict[Any, list[float]], key: Any, lo: float, hi: float) -> None:
    w = windows.get(key)
    if w is None:
        windows[key] = [lo, hi]
    else:
        w[0], w[1] = min(w[0], lo), max(w[1], hi)


def _frozen(windows: dict[Any, list[float]]) -> dict[Any, tuple[float, float]]:
    return {k: (v[0], v[1]) for k, v in windows.items()}


def _direct_window(j: JobWindow, now: float) -> tuple[float, float]:
    """Deltas naming a job may come up to a day late or early (clock skew, late collectors);
    a job that never started: whenever they were read."""
    if j.start is None:
        return sql.EVER
    return j.start - MARGIN, _run_end(j, now) + MARGIN


def fetch_chunk(conn: psycopg.Connection, jobs: Sequence[JobWindow], now: float
                ) -> dict[int, Inputs]:
    """job (row key) -> its Inputs."""
    # -- direct: deltas naming the job's raw id within a day of its run (rows sharing a raw
    # id -- another cluster, another run -- keep only the deltas attribute.owners gives them)
    spans: dict[int, list[float]] = {}
    for j in jobs:
        _widen(spans, j.raw_id, *_direct_window(j, now))
    direct = sql.deltas_by_job(conn, _frozen(spans))
    owned = Owners(conn, sorted(spans))
    out: dict[int, Inputs] = {}
    for j in jobs:
        lo, hi = _direct_window(j, now)
        a, b = _us(lo), _us(hi)
        mine = [d for d in direct.get(j.raw_id, ()) if a <= d.ts_end <= b]
        out[j.job] = Inputs(owned.of(j, mine, now), [], [], [])
    # -- recovered: `:uid:host` deltas on the job's nodes, widened by the evidence window
    w = WINDOWS[-1]
    rec_jobs = [j for j in jobs if j.uid is not None and j.nodes and j.start is not None]
    windows: dict[tuple[str, int], list[float]] = {}
    for j in rec_jobs:
        assert j.start is not None and j.uid is not None
        for n in j.nodes:
            _widen(windows, (n, j.uid), j.start - w, _run_end(j, now) + w)
    if not windows:
        return out
    by_pair: dict[tuple[str | None, int | None], list[DeltaRow]] = defaultdict(list)
    for d in sql.deltas_by_pair(conn, _frozen(windows), MARGIN):
        by_pair[(d.node, d.uid)].append(d)
    rec: dict[int, tuple[list[DeltaRow], list[DeltaRow]]] = {}
    comp_windows: dict[tuple[str, int], list[float]] = {}
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
            for n in j.nodes:
                if j.uid is not None:
                    _widen(comp_windows, (n, j.uid), j.start - w, end + w)
    # -- competitors: the jobs of the uid on the job's nodes while its deltas ran, and
    # within WINDOWS[-1] of its run (which `:uid:host` deltas one job alone can own:
    # attribute.core.sole_deltas); evidence is fetched for the first only
    node_jobs: dict[tuple[str, int], list[sql.NodeJob]] = defaultdict(list)
    for nj in sql.jobs_by_pair(conn, _frozen(comp_windows)):
        node_jobs[(nj.node, nj.uid)].append(nj)
    ev_windows: dict[int, list[float]] = {}
    plans: dict[int, tuple[list[JobWindow], list[int], float, float]] = {}  # others: raw ids
    for j in rec_jobs:
        narrow, wide = rec[j.job]
        if not narrow:
            continue
        lo, hi = min(d.ts_start for d in narrow), max(d.ts_end for d in narrow)
        lo_us, hi_us = _us(lo), _us(hi)
        assert j.start is not None
        around = _us(j.start - w), _us(_run_end(j, now) + w)
        comp: dict[int, JobWindow] = {}
        then: set[int] = set()  # the competitors that ran while its deltas did
        for n in j.nodes:
            for nj in node_jobs.get((n, j.uid), ()):  # type: ignore[call-overload]
                if (nj.start is not None and nj.start < around[1]
                        and (nj.end is None or nj.end > around[0])):
                    comp[nj.job.job] = nj.job
                    if nj.start < hi_us and (nj.end is None or nj.end > lo_us):
                        then.add(nj.job.job)
        others = sorted({c.raw_id for c in comp.values()
                         if c.job != j.job and c.job in then})  # raw ids
        plans[j.job] = (list(comp.values()), others, lo, hi)
        for o in others:
            _widen(ev_windows, o, lo - w, hi + w + _EVIDENCE_MARGIN)
    # -- evidence: what the competitors did by their own id around the job's deltas
    ev_rows = sql.deltas_by_job(conn, _frozen(ev_windows))
    for j in rec_jobs:
        narrow, wide = rec[j.job]
        plan = plans.get(j.job)
        direct_j = out[j.job].direct
        if plan is None:
            out[j.job] = Inputs(direct_j, narrow, [], [])
            continue
        comp_list, others, lo, hi = plan
        if not others:
            out[j.job] = Inputs(direct_j, narrow, comp_list, [])
            continue
        a, b = _us(lo - w), _us(hi + w + _EVIDENCE_MARGIN)
        ev = [d for o in others for d in ev_rows.get(o, ()) if a <= d.ts_end <= b]
        out[j.job] = Inputs(direct_j, wide, comp_list, ev)
    return out


def attribute_job(conn: psycopg.Connection, j: JobWindow, *, now: float | None = None,
                  resolution: float = 120.0, splits: dict[Any, Any] | None = None) -> JobIO:
    """Fetch and attribute one job's I/O (`splits`: a batch's cache, core.attribute); not
    stored. Readers get a job's figures through attribute.figures, which decides whether
    to compute them."""
    now = time.time() if now is None else now
    i = fetch_chunk(conn, [j], now)[j.job]
    return attribute(j, i.direct, i.recovered, i.competitors, now=now, resolution=resolution,
                     evidence=i.evidence, splits=splits)


def attribute_jobs(conn: psycopg.Connection, jobs: list[JobInfo], *, now: float | None = None,
                   resolution: float = 120.0) -> tuple[int, int]:
    """Attribute and store many jobs, committed chunk by chunk; returns (stored, complete).

    `conn` must have no transaction of the caller's in progress: each chunk's COMMIT would
    commit it."""
    chunks = (jobs[i:i + CHUNK] for i in range(0, len(jobs), CHUNK))
    ordered = all(_order(a) <= _order(b) for a, b in pairwise(jobs))
    return _run(conn, chunks, now=now, resolution=resolution, ordered=ordered)


def attribute_pending(conn: psycopg.Connection, since: float, limit: int | None = None, *,
                      now: float | None = None, resolution: float = 120.0) -> tuple[int, int]:
    """`jobio attribute`: the pending jobs (attribute.stored.pending_jobs) attributed in
    order of their end, read a page at a time and committed chunk by chunk.

    Why per chunk: one transaction for a day's backlog of a site (~24,000 jobs, ~10 minutes)
    kept every result invisible until the end, lost them all when the run was stopped, and
    held VACUUM back for the whole run. Now a run that is killed keeps the chunks it
    committed, and the next run finds only the rest pending. Why pages: the backlog is never
    held whole, so the client's memory is the same for a day's or a week's backlog."""
    stale = stored.stale_jobs(conn, since)
    pages = stored.pending_pages(conn, since, stale, limit, page=4 * CHUNK)
    chunks = (page[i:i + CHUNK] for page in pages for i in range(0, len(page), CHUNK))
    return _run(conn, chunks, now=now, resolution=resolution, ordered=True)


def _order(info: JobInfo) -> tuple[float, int]:
    """The order pending jobs are attributed in (end, then row key)."""
    return (info.end if info.end is not None else float("inf"), info.job)


def _run(conn: psycopg.Connection, chunks: Iterable[list[JobInfo]], *, now: float | None,
         resolution: float, ordered: bool) -> tuple[int, int]:
    """Attribute, store and commit each chunk. The splits cache (core.attribute: a delta
    two jobs share is weighed once, the same for both) outlives a chunk so that figures do
    not depend on where the chunks fall; with `ordered` chunks (by _order) an entry is
    dropped once every job it names ended before the chunk just done, since no job still to
    come can use it: the cache then holds the splits of the jobs around the current end
    time, not of the whole run."""
    now = time.time() if now is None else now
    if conn.info.transaction_status.name != "IDLE":
        conn.commit()  # what the caller read (the pending jobs): each chunk commits anyway
    done_until = stored.data_complete_until(conn)
    newest = stored.newest_ingest(conn)
    n = n_complete = 0
    splits: dict[Any, Any] = {}
    expires: dict[Any, float] = {}  # cache key -> the newest end of the jobs it names
    for chunk in chunks:
        inputs = fetch_chunk(conn, [info.window for info in chunk], now)
        results = []
        for info in chunk:
            j = info.window
            x = inputs[j.job]
            io = attribute(j, x.direct, x.recovered, x.competitors, now=now,
                           resolution=resolution, evidence=x.evidence, splits=splits)
            complete = info.end is not None and done_until is not None and done_until >= info.end
            results.append((j, io, complete))
            n += 1
            n_complete += complete
        stored.store_many(conn, results, newest)
        conn.commit()
        if ordered and chunk:
            _forget_settled(splits, expires, chunk, inputs, _order(chunk[-1])[0])
    return n, n_complete


def _forget_settled(splits: dict[Any, Any], expires: dict[Any, float], chunk: list[JobInfo],
                    inputs: dict[int, Inputs], until: float) -> None:
    """Drop the cached splits no job after `until` (an end time) can ask for: those whose
    jobs (the key's last item, the candidates' row keys) all ended before it. A candidate
    still running (no end) is never attributed by this run and does not hold an entry."""
    ends = {info.job: _order(info)[0] for info in chunk}
    for x in inputs.values():
        for c in x.competitors:
            ends[c.job] = c.end if c.end is not None else float("-inf")
    for key in splits.keys() - expires.keys():
        expires[key] = max((ends.get(i, float("inf")) for i in key[-1]), default=float("inf"))
    for key in [k for k, e in expires.items() if e < until]:
        del splits[key], expires[key]
