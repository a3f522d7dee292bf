"""A user's jobs of a period with their summary figures: the list of the web view's "My
jobs" page (slurm_io/web), served as `GET /v1/jobs` (docs/service.md).

Why not `show -u USER`: that builds every job's whole report (per target, per node,
timeline) with a `figures` call each, ~10 queries a job; a list of 500 jobs needs their
totals and quality only. Finished jobs read their stored figures (job_io) and LASSi risks in
two queries for all of them; a running job, or a finished one not attributed yet, is
computed now like `jobio show` does, at most `max_live` of them per list (the rest say their
figures are pending), so that one page view never runs attribution for hundreds of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slurm_io.jobs.info import JobInfo
from slurm_io.jobs.store import user_jobs
from slurm_io.report import joblist_sql
from slurm_io.report.jobreport import iso

if TYPE_CHECKING:
    import psycopg


RANGED = ("read_bytes", "write_bytes", "metadata_ops")


@dataclass(frozen=True, slots=True)
class JobSummary:
    """One job of the list: its record, and its figures when known."""

    info: JobInfo
    totals: dict[str, int] | None  # None: not computed (over max_live)
    quality: dict[str, Any]
    complete: bool
    revision: int | None
    risks: tuple[float, float] | None  # worst (risk_oss, risk_mds) of its LASSi hours
    now: float
    # figure -> {"least": L, "most": M} where attribution gave a range (docs/attribution.md)
    ranges: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.info.end is None and self.info.start is not None

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.info.nodes

    @property
    def elapsed(self) -> float | None:
        i = self.info
        return None if i.start is None else max(0.0, (i.end or self.now) - i.start)

    def as_json(self) -> dict[str, Any]:
        i, t, q = self.info, self.totals or {}, self.quality
        requests = t.get("read_bytes_samples", 0) + t.get("write_bytes_samples", 0)
        moved = t.get("read_bytes", 0) + t.get("write_bytes", 0)
        return {
            "jobid": i.jobid, "job": i.raw_id, "cluster": i.cluster, "run": i.run,
            "user": i.user, "uid": i.uid, "account": i.account, "partition": i.partition,
            "name": i.name, "nodes": len(i.nodes), "state": i.state,
            "start": iso(i.start), "end": iso(i.end),
            "start_epoch": i.start, "end_epoch": i.end,
            "elapsed": None if self.elapsed is None else round(self.elapsed),
            "running": self.running, "figures": self.totals is not None,
            "complete": self.complete, "revision": self.revision,
            "read_bytes": t.get("read_bytes", 0), "write_bytes": t.get("write_bytes", 0),
            "metadata_ops": q.get("metadata_ops", 0),
            "mean_request": round(moved / requests) if requests else None,
            "read_mean_size": q.get("read_mean_size"),
            "write_mean_size": q.get("write_mean_size"),
            "risk_oss": None if self.risks is None else round(self.risks[0], 3),
            "risk_mds": None if self.risks is None else round(self.risks[1], 3),
        } | {f"{k}_{end}": v[end] for k, v in (self.ranges or {}).items()
             if k in RANGED and isinstance(v, dict) for end in ("least", "most") if end in v}


def job_list(conn: psycopg.Connection, user: str, start: float, end: float, *, now: float,
             resolution: float, max_jobs: int, max_live: int
             ) -> tuple[list[JobSummary], int]:
    """(summaries, jobs in the period): `user`'s jobs that ran in [start, end] as the
    caller's role may read them, running ones first then the newest; at most `max_jobs`."""
    from slurm_io.report.figures import figures

    infos = [i for i in user_jobs(conn, user, start, end) if i.start is not None]
    infos.sort(key=lambda i: (i.end is not None, -(i.start or 0.0), -i.job))
    total = len(infos)
    infos = infos[:max_jobs]
    stored = joblist_sql.stored_summaries(conn, [i.job for i in infos if i.end is not None])
    risks = joblist_sql.worst_risks(conn, sorted({i.raw_id for i in infos}))
    out: list[JobSummary] = []
    live = 0
    for i in infos:
        s = stored.get(i.job)
        if s is not None and (s.complete or s.current):  # attribute.figures' rule
            out.append(JobSummary(i, s.totals, s.quality, s.complete, s.revision,
                                  risks.get(i.raw_id), now, s.ranges))
        elif live < max_live:
            live += 1
            r = figures(conn, i, now=now, resolution=resolution)
            out.append(JobSummary(i, r.io.totals, r.io.quality, r.complete, r.revision,
                                  risks.get(i.raw_id), now,
                                  r.io.as_json().get("ranges")))
        else:
            out.append(JobSummary(i, None, {}, False, None, risks.get(i.raw_id), now))
    return out, total
