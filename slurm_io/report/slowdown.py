"""`jobio slowdown`: did the same job run slower when the filesystem was at risk? (LASSi §4.2)

A user's finished jobs are grouped by name (or by submit line); for every run: its run time
and the filesystem's mean LASSi risk_oss and risk_mds during the run (stored hours of
lassi_fs_hour weighted by their overlap with the run, on the filesystems the job used, or on
all filesystems when the job has no LASSi hours), plus the job's own maximum risks.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg

from slurm_io.store.sqlutil import has_tables
from slurm_io.store.sqlutil import ts as _ts

HOUR = 3600.0


def analyse(conn: psycopg.Connection, user: str, *, start: float, end: float,
            name: str | None = None, by_submit_line: bool = False) -> list[dict[str, Any]]:
    """Groups [{key, by, jobs: [...]}], the largest first; jobs sorted by start."""
    q = ("SELECT job_raw, jobid, name, submit_line, extract(epoch FROM start_time)::float8, "
         "extract(epoch FROM end_time)::float8, nodes, state FROM job WHERE user_name = %s "
         "AND start_time IS NOT NULL AND end_time IS NOT NULL AND end_time > start_time "
         "AND start_time >= %s AND start_time <= %s")
    args: list[Any] = [user, _ts(start), _ts(end)]
    if name is not None:
        q += " AND name = %s"
        args.append(name)
    jobs = [{"job": r[0], "jobid": r[1], "name": r[2], "submit_line": r[3], "start": r[4],
             "end": r[5], "elapsed": r[5] - r[4], "nodes": len(r[6] or ()), "state": r[7]}
            for r in conn.execute(q + " ORDER BY start_time, job", args)]
    if not jobs:
        return []
    _risks(conn, jobs)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in jobs:
        groups[(j["submit_line"] if by_submit_line else j["name"]) or "-"].append(j)
    out = [{"key": k, "by": "submit line" if by_submit_line else "name", "jobs": v}
           for k, v in groups.items()]
    out.sort(key=lambda g: (-len(g["jobs"]), g["key"]))
    return out


def _risks(conn: psycopg.Connection, jobs: list[dict[str, Any]]) -> None:
    for j in jobs:
        j.update(fs=[], fs_risk_oss=None, fs_risk_mds=None, job_risk_oss=None,
                 job_risk_mds=None, covered=0.0)
    if not has_tables(conn):
        return
    ids = [j["job"] for j in jobs]
    own = {r[0]: r[1:] for r in conn.execute(
        "SELECT job, array_agg(DISTINCT fs), max(risk_oss), max(risk_mds) FROM lassi_job_hour "
        "WHERE job = ANY(%s) GROUP BY job", (ids,))}
    lo = min(j["start"] for j in jobs) - HOUR
    hi = max(j["end"] for j in jobs)
    hours: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for h, fs, ro, rm in conn.execute(
            "SELECT extract(epoch FROM hour)::float8, fs, risk_oss, risk_mds FROM lassi_fs_hour "
            "WHERE hour >= %s AND hour < %s ORDER BY hour", (_ts(lo), _ts(hi))):
        hours[fs].append((h, ro, rm))
    for j in jobs:
        if j["job"] in own:
            fss, jro, jrm = own[j["job"]]
            j.update(fs=sorted(fss), job_risk_oss=jro, job_risk_mds=jrm)
        use = j["fs"] or sorted(hours)
        w_sum = ro_sum = rm_sum = 0.0
        best_cover = 0.0
        for fs in use:
            cover = 0.0
            for h, ro, rm in hours.get(fs, []):
                w = max(0.0, min(h + HOUR, j["end"]) - max(h, j["start"]))
                if w > 0:
                    w_sum += w
                    ro_sum += w * ro
                    rm_sum += w * rm
                    cover += w
            best_cover = max(best_cover, cover)
        if w_sum > 0:
            j["fs_risk_oss"] = ro_sum / w_sum
            j["fs_risk_mds"] = rm_sum / w_sum
        j["covered"] = min(1.0, best_cover / j["elapsed"]) if j["elapsed"] else 0.0


def pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None  # a constant series


def _elapsed(s: float) -> str:
    d, rem = divmod(round(s), 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{sec:02d}"


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(user: str, groups: list[dict[str, Any]]) -> str:
    if not groups:
        return f"no finished jobs of {user} in that period"
    out = []
    for g in groups:
        jobs = g["jobs"]
        el = [j["elapsed"] for j in jobs]
        out.append(f"user {user}, jobs with {g['by']} {g['key']!r}: {len(jobs)} run(s), "
                   f"{_ts(jobs[0]['start']):%Y-%m-%d} .. {_ts(jobs[-1]['start']):%Y-%m-%d}")
        out.append(f"  {'JOBID':<14}{'START (UTC)':<18}{'ELAPSED':>12}{'NODES':>6}  "
                   f"{'STATE':<11}{'FS_RISK_OSS':>12}{'FS_RISK_MDS':>12}{'JOB_RISK_OSS':>13}"
                   f"{'JOB_RISK_MDS':>13}{'COVERED':>9}")
        for j in jobs:
            out.append(f"  {j['jobid']:<14}{_ts(j['start']):%Y-%m-%d %H:%M}  "
                       f"{_elapsed(j['elapsed']):>12}{j['nodes']:>6}  "
                       f"{(j['state'] or '-')[:10]:<11}"
                       f"{_r(j['fs_risk_oss']):>12}{_r(j['fs_risk_mds']):>12}"
                       f"{_r(j['job_risk_oss']):>13}{_r(j['job_risk_mds']):>13}"
                       f"{100 * j['covered']:>8.0f}%")
        line = (f"  run time: min {_elapsed(min(el))}, median {_elapsed(statistics.median(el))},"
                f" max {_elapsed(max(el))}")
        if min(el) > 0 and len(el) > 1:
            line += f" (slowest {max(el) / min(el):.1f}x the fastest)"
        out.append(line)
        pts = [j for j in jobs if j["fs_risk_oss"] is not None]
        if pts:
            ro = pearson([j["fs_risk_oss"] for j in pts], [j["elapsed"] for j in pts])
            rm = pearson([j["fs_risk_mds"] for j in pts], [j["elapsed"] for j in pts])
            out.append(f"  correlation of run time with the filesystem's risk over {len(pts)} "
                       f"run(s): risk_oss {_r(ro)}, risk_mds {_r(rm)}")
        if any(j["covered"] < 0.99 for j in jobs):
            out.append("  (COVERED < 100 %: LASSi hours missing for part of the run; "
                       "`jobio lassi compute -S ... -E ...` fills them)")
        out.append("")
    return "\n".join(out).rstrip()


def plot(path: Path, user: str, group: dict[str, Any]) -> Path:
    from slurm_io.report import plots

    title = (f"{user}: {len(group['jobs'])} runs with {group['by']} {group['key']!r}: "
             "run time vs filesystem risk")
    return plots.slowdown(path, title, group["jobs"])


def as_json(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def clean(v: Any) -> Any:
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{"key": g["key"], "by": g["by"],
             "jobs": [{k: clean(v) for k, v in j.items()} for j in g["jobs"]]} for g in groups]
