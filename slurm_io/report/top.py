"""`jobio top`: who does the most I/O right now (or at a past moment), like lltop/glljobstat.

From the database only: the attributed load of the newest collector interval at or before a
moment (slurm_io.report.load: jobs, with `:uid:host` deltas shared among the jobs of that user
on that node; what no job claims is the user's unattributed load, shown on the user's line
with the login-node `%e.%u` load; system ids as load of their host; unrecoverable and empty
ids as "nobody"), grouped by job, user, account, host or filesystem, ranked by any counter,
as totals over the interval or as rates per second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from slurm_io.report.load import (
    ALIASES,
    COUNTERS,
    DERIVED,
    GROUPS,
    SORT_KEYS,
    Group,
    Load,
    group,
    load,
    owner,
    rank,
    total,
)
from slurm_io.text import display

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["GROUPS", "SORT_KEYS", "Top", "as_json", "render", "top"]
MB = 1_000_000  # like the daily plots (and lltop's columns, in SI units)
WINDOW = 0.9


@dataclass
class Top:
    at: float | None  # end of the interval shown (None: no data at all)
    lo: float
    rows: list[Group]
    total: Group
    n_jobs: int
    n_other: int
    fs: str | None
    kind: str | None
    by: str = "job"
    sort: str = "write"
    rates: bool = False
    interval: float = 120.0


def top(conn: Connection, *, at: float | None = None, interval: float = 120.0,
        fs: str | None = None, kind: str | None = None, user: str | None = None,
        sort: str = "write", limit: int | None = 20, now: float | None = None,
        by: str = "job", rates: bool = False, minrate: float | None = None) -> Top:
    """The lines of the newest interval at or before `at` (default now). `minrate` (per
    second, in the unit of `sort`) hides the lines below it."""
    now = time.time() if now is None else now
    ld = load(conn, at=now if at is None else at, interval=interval, fs=fs, kind=kind, now=now,
              per_host=by == "host")
    return view(ld, fs=fs, kind=kind, user=user, sort=sort, limit=limit, by=by, rates=rates,
                minrate=minrate)


def view(ld: Load, *, fs: str | None = None, kind: str | None = None,
         user: str | None = None, sort: str = "write", limit: int | None = 20,
         by: str = "job", rates: bool = False, minrate: float | None = None) -> Top:
    """Group and rank a loaded interval (pure: the interactive mode re-sorts without asking
    the database again)."""
    if ld.at is None:
        return Top(None, ld.lo, [], Group("total", None, "total", ""), 0, 0, fs, kind, by,
                   sort, rates, ld.interval)
    everything = total(ld.parts)
    if by == "job" and user is None:
        groups = group(ld, "job")
        n_jobs = sum(1 for g in groups if g.kind == "job")
        n_other = sum(1 for g in groups if g.kind in ("user", "system"))
    else:  # the lines of the view by job counted without adding them up (group's keys)
        n_jobs = len({p.job for p in ld.parts if p.kind == "job"})
        n_other = len({(p.kind, p.host_id if p.kind == "system" else p.uid)
                       for p in ld.parts if p.kind in ("user", "system")})
        if user is not None:  # only the user's parts (their jobs and their load outside jobs)
            ld = replace(ld, parts=[p for p in ld.parts if p.kind in ("job", "user")
                                    and owner(ld, p) == user])
        groups = group(ld, by)
    minimum = None if minrate is None else minrate * ld.interval
    rows = rank(groups, sort, minimum=minimum, limit=limit)
    return Top(ld.at, ld.lo, rows, everything, n_jobs, n_other, fs, kind, by, sort,
               rates, ld.interval)


# -- rendering ---------------------------------------------------------------------------------
FIRST = {"job": "JOBID", "user": "USER", "account": "ACCOUNT", "host": "HOST", "fs": "FS"}


def _columns(t: Top) -> list[str]:
    """The counters shown: the usual four, plus the sort key when it is another counter."""
    cols = ["write_bytes", "read_bytes", "meta_ops", "reqs"]
    key = ALIASES.get(t.sort, t.sort)
    if key not in cols:
        cols.append(key)
    return cols


def _head(name: str, rates: bool) -> str:
    short = {"write_bytes": "WRITE_MB", "read_bytes": "READ_MB", "meta_ops": "META_OPS",
             "reqs": "REQS"}.get(name, name.upper())
    return short + ("/s" if rates else "")


def _fmt(g: Group, name: str, t: Top) -> str:
    v = g.get(name) / (t.interval if t.rates else 1.0)
    if name.endswith("_bytes"):
        return f"{v / MB:.1f}"
    return f"{v:.1f}" if t.rates and v < 100 else f"{v:.0f}"


def header(t: Top) -> list[str]:
    """The two summary lines (or one saying there is nothing)."""
    if t.at is None:
        where = " ".join(x for x in (t.fs or "", t.kind or "") if x)
        return [f"jobio top: no I/O stored{' for ' + where if where else ''} at or before "
                f"{datetime.fromtimestamp(t.lo).isoformat(timespec='seconds')}"]
    secs = t.interval
    tot = t.total
    by = "" if t.by == "job" else f"  by {t.by}"
    head = (f"jobio top  {t.fs or 'all filesystems'}{' ' + t.kind if t.kind else ''}  "
            f"{datetime.fromtimestamp(t.at).isoformat(timespec='seconds')}  "
            f"(interval {secs:.0f} s)  {t.n_jobs} jobs, {t.n_other} users/hosts outside jobs, "
            f"{len(tot.hosts)} nodes{by}  sort {t.sort}{', rates' if t.rates else ''}")
    rates = (f"  total: write {tot.write_bytes / MB / secs:.1f} MB/s, read "
             f"{tot.read_bytes / MB / secs:.1f} MB/s, {tot.meta_ops / secs:.0f} metadata ops/s, "
             f"{tot.reqs / secs:.0f} requests/s   (MB = 10^6 bytes, "
             f"{'per second' if t.rates else 'moved in the interval'})")
    return [head, rates]


def table(t: Top) -> list[str]:
    """The column header and one line per row."""
    cols = _columns(t)
    last = "WORK_DIR" if t.by == "job" else ""
    lines = [f"{FIRST[t.by]:<14}{'USER' if t.by == 'job' else 'JOBS':<12}"
             + "".join(f"{_head(c, t.rates):>11}" for c in cols) + f"{'NODES':>7}  {last}"]
    for g in t.rows:
        nodes = g.nodes if g.nodes is not None else (len(g.hosts) or "-")
        second = g.user if t.by == "job" else str(len(g.jobs))
        lines.append(f"{display(g.label)[:13]:<14}{display(second)[:11]:<12}"
                     + "".join(f"{_fmt(g, c, t):>11}" for c in cols)
                     + f"{nodes:>7}  " + (display(g.work_dir or "-") if t.by == "job" else ""))
    return [ln.rstrip() for ln in lines]


def render(t: Top, *, width: int | None = None) -> str:
    lines = header(t)
    if t.at is not None:
        lines += ["", *table(t)]
    if width:
        lines = [ln[:width] for ln in lines]
    return "\n".join(lines)


def as_json(t: Top) -> dict[str, Any]:
    def counters(g: Group) -> dict[str, Any]:
        d = {k: round(g.get(k)) for k in (*COUNTERS, *DERIVED) if g.get(k)}
        for k in ("write_bytes", "read_bytes", "meta_ops", "reqs"):
            d[k] = round(g.get(k))
        return d

    return {
        "at": t.at, "from": t.lo, "fs": t.fs, "kind": t.kind, "by": t.by, "sort": t.sort,
        "interval": t.interval,
        "rows": [{"kind": g.kind, "jobid": g.label if g.kind == "job" else None,
                  "key": g.label, "user": g.user if t.by == "job" else None,
                  "account": g.account or None, "name": g.name or None,
                  **counters(g),
                  "rates": {k: g.get(k) / t.interval for k in
                            ("write_bytes", "read_bytes", "meta_ops", "reqs")},
                  "jobs": len(g.jobs),
                  "nodes": g.nodes if g.nodes is not None else len(g.hosts),
                  "work_dir": g.work_dir or None} for g in t.rows],
        "total": {k: round(t.total.get(k)) for k in
                  ("write_bytes", "read_bytes", "meta_ops", "reqs")},
    }
