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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_io.report import sql as q
from slurm_io.store.sqlutil import has_tables
from slurm_io.store.sqlutil import ts as _ts

if TYPE_CHECKING:
    from psycopg import Connection

HOUR = 3600.0


@dataclass
class RunRisk:
    """One run of a user's job and the LASSi risk around it: the filesystem's mean risks
    during the run (weighted by overlap), the job's own highest, and which share of the run
    stored hours cover."""

    job: int
    jobid: str
    name: str | None
    submit_line: str | None
    start: float
    end: float
    elapsed: float
    nodes: int
    state: str | None
    fs: list[str] = field(default_factory=list)
    fs_risk_oss: float | None = None
    fs_risk_mds: float | None = None
    job_risk_oss: float | None = None
    job_risk_mds: float | None = None
    covered: float = 0.0


@dataclass
class RunGroup:
    """Runs of the same job name (or submit line), by start."""

    key: str
    by: str  # "name" or "submit line"
    jobs: list[RunRisk]


def analyse(conn: Connection, user: str, *, start: float, end: float,
            name: str | None = None, by_submit_line: bool = False) -> list[RunGroup]:
    """Groups of runs, the largest first; runs sorted by start."""
    jobs = [RunRisk(r.job, r.jobid, r.name, r.submit_line, r.start, r.end, r.end - r.start,
                    r.nodes, r.state)
            for r in q.finished_runs(conn, user, _ts(start), _ts(end), name)]
    if not jobs:
        return []
    if has_tables(conn):
        own = q.job_risks(conn, [j.job for j in jobs])
        hours = q.fs_hours(conn, _ts(min(j.start for j in jobs) - HOUR),
                           _ts(max(j.end for j in jobs)))
        _risks(jobs, own, hours)
    groups: dict[str, list[RunRisk]] = defaultdict(list)
    for j in jobs:
        groups[(j.submit_line if by_submit_line else j.name) or "-"].append(j)
    out = [RunGroup(k, "submit line" if by_submit_line else "name", v)
           for k, v in groups.items()]
    out.sort(key=lambda g: (-len(g.jobs), g.key))
    return out


def _risks(jobs: list[RunRisk], own: dict[int, q.JobRisk], fs_hours: list[q.FsHour]) -> None:
    """Fill in each run's risks from its own LASSi hours and the filesystems' hours."""
    hours: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for h in fs_hours:
        hours[h.fs].append((h.hour, h.risk_oss, h.risk_mds))
    for j in jobs:
        if j.job in own:
            o = own[j.job]
            j.fs, j.job_risk_oss, j.job_risk_mds = o.fs, o.risk_oss, o.risk_mds
        use = j.fs or sorted(hours)
        w_sum = ro_sum = rm_sum = 0.0
        best_cover = 0.0
        for fs in use:
            cover = 0.0
            for h, ro, rm in hours.get(fs, []):
                w = max(0.0, min(h + HOUR, j.end) - max(h, j.start))
                if w > 0:
                    w_sum += w
                    ro_sum += w * ro
                    rm_sum += w * rm
                    cover += w
            best_cover = max(best_cover, cover)
        if w_sum > 0:
            j.fs_risk_oss = ro_sum / w_sum
            j.fs_risk_mds = rm_sum / w_sum
        j.covered = min(1.0, best_cover / j.elapsed) if j.elapsed else 0.0


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


def render(user: str, groups: list[RunGroup]) -> str:
    if not groups:
        return f"no finished jobs of {user} in that period"
    out = []
    for g in groups:
        jobs = g.jobs
        el = [j.elapsed for j in jobs]
        out.append(f"user {user}, jobs with {g.by} {g.key!r}: {len(jobs)} run(s), "
                   f"{_ts(jobs[0].start):%Y-%m-%d} .. {_ts(jobs[-1].start):%Y-%m-%d}")
        out.append(f"  {'JOBID':<14}{'START (UTC)':<18}{'ELAPSED':>12}{'NODES':>6}  "
                   f"{'STATE':<11}{'FS_RISK_OSS':>12}{'FS_RISK_MDS':>12}{'JOB_RISK_OSS':>13}"
                   f"{'JOB_RISK_MDS':>13}{'COVERED':>9}")
        for j in jobs:
            out.append(f"  {j.jobid:<14}{_ts(j.start):%Y-%m-%d %H:%M}  "
                       f"{_elapsed(j.elapsed):>12}{j.nodes:>6}  "
                       f"{(j.state or '-')[:10]:<11}"
                       f"{_r(j.fs_risk_oss):>12}{_r(j.fs_risk_mds):>12}"
                       f"{_r(j.job_risk_oss):>13}{_r(j.job_risk_mds):>13}"
                       f"{100 * j.covered:>8.0f}%")
        line = (f"  run time: min {_elapsed(min(el))}, median {_elapsed(statistics.median(el))},"
                f" max {_elapsed(max(el))}")
        if min(el) > 0 and len(el) > 1:
            line += f" (slowest {max(el) / min(el):.1f}x the fastest)"
        out.append(line)
        pts = [j for j in jobs if j.fs_risk_oss is not None and j.fs_risk_mds is not None]
        if pts:
            ro = pearson([j.fs_risk_oss for j in pts if j.fs_risk_oss is not None],
                         [j.elapsed for j in pts])
            rm = pearson([j.fs_risk_mds for j in pts if j.fs_risk_mds is not None],
                         [j.elapsed for j in pts])
            out.append(f"  correlation of run time with the filesystem's risk over {len(pts)} "
                       f"run(s): risk_oss {_r(ro)}, risk_mds {_r(rm)}")
        if any(j.covered < 0.99 for j in jobs):
            out.append("  (COVERED < 100 %: LASSi hours missing for part of the run; "
                       "`jobio lassi compute -S ... -E ...` fills them)")
        out.append("")
    return "\n".join(out).rstrip()


def plot(path: Path, user: str, group: RunGroup) -> Path:
    """The scatter plot of a group's run times against the filesystem's risks."""
    from slurm_io.report import plots

    title = (f"{user}: {len(group.jobs)} runs with {group.by} {group.key!r}: "
             "run time vs filesystem risk")
    return plots.slowdown(path, title, group.jobs)


def as_json(groups: list[RunGroup]) -> list[dict[str, Any]]:
    """The JSON document of `jobio slowdown --json` (NaN, which JSON has not, as null)."""
    def clean(v: Any) -> Any:
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{"key": g.key, "by": g.by,
             "jobs": [{k: clean(v) for k, v in asdict(j).items()} for j in g.jobs]}
            for g in groups]
