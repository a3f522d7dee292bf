"""The documents of `jobio show`: one per job, the same for `--json`, the tables and the
service (`GET /v1/show`, docs/service.md), so that every way in shows the same figures.

What a caller sees is whatever its database role may read (row-level security): another
user's job comes back as missing, exactly like a job that does not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import psycopg

    from slurm_io.jobs.info import JobInfo
    from slurm_io.report.jobreport import JobReport

# Job states in which a job waits to (re)start: nothing of it can have reached Lustre yet.
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                            "RESV_DEL_HOLD"})


class Missing(NamedTuple):
    """A job `jobio show` has nothing to show for, and the line that tells the user why."""

    jobid: str
    line: str  # printed after "jobio: ", the same locally and through the service


def why_missing(jobid: str, info: JobInfo | None) -> str:
    """Why a job shows nothing, from what its visible row says (None: no row the caller may
    read, so another user's job reads exactly like one that does not exist). A row without a
    start time is a job Slurm has not started, or whose start the job table has not learnt
    yet: saying which spares the user guessing between a typo and a job still queued."""
    if info is None:
        return f"job {jobid}: no such job, or no I/O recorded for it"
    if info.state in PENDING_STATES:
        return f"job {jobid} is pending: no I/O before it starts"
    if info.start is None and info.end is not None and info.state:
        return f"job {jobid} ended ({info.state}) before it started: no I/O"
    return f"job {jobid} has no start time recorded yet (sacct/hook not synced)"


class AmbiguousJob(ValueError):
    """A job id that names jobs of several clusters, given without -M/--clusters."""


def parse_clusters(text: str | None) -> list[str] | None:
    """sacct's -M/--clusters: `a,b` -> ['a', 'b']; None or `all` -> None (every cluster)."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    return None if not names or "all" in (n.lower() for n in names) else names


def show_documents(conn: psycopg.Connection, specs: list[str], user: str | None,
                   start: float | None, end: float | None, *, now: float,
                   resolution: float, clusters: list[str] | None = None,
                   all_clusters: bool = False) -> tuple[list[JobReport], list[Missing]]:
    """(reports, missing): the reports of the jobs named by `specs` (sacct -j syntax, already
    checked against JOBID_ARG) and, when `user` is given, of that user's jobs that ran in
    [start, end]; `missing` names the specs with no job and no I/O, and why (why_missing).

    `clusters` narrows to those clusters (sacct -M a,b); `all_clusters` (-M all) shows every
    cluster's. Neither, and a spec names jobs of two clusters: AmbiguousJob (the database
    serves several clusters, so there is no "local" one to prefer as sacct does). Every run
    of a requeued job is a report of its own, like `sacct -D` lists them."""
    from slurm_io.jobs.info import JobInfo as Info
    from slurm_io.jobs.store import find_jobs, user_jobs
    from slurm_io.report.figures import figures
    from slurm_io.report.show import parse_job_spec

    infos: list[tuple[Info, bool]] = []  # (job, whether a row of the job table names it)
    missing: list[Missing] = []
    for spec in specs:
        parsed = parse_job_spec(spec)
        if parsed is None:
            raise ValueError(f"not a job id: {spec!r}")
        found = find_jobs(conn, spec, clusters)
        names = sorted({i.cluster or "" for i in found})
        if clusters is None and not all_clusters and len(names) > 1:
            raise AmbiguousJob(f"job {spec} exists on clusters {', '.join(names)}: "
                               f"name one with -M/--clusters (e.g. -M {names[0]}), or -M all")
        if not found and parsed.display is None:
            # not (yet) in the job table: what the collectors stored under its id
            n = parsed.number
            infos.append((Info(n, str(n), None, None, None, None, None, (), None, None,
                               None, None, None, None), False))
            continue
        if not found:
            missing.append(Missing(spec, why_missing(spec, None)))
        infos += [(info, True) for info in found]
    if user:
        end = now if end is None else end
        infos += [(info, True) for info in
                  user_jobs(conn, user, end - 86400 if start is None else start, end)]
    reports = []
    for info, known in infos:
        r = figures(conn, info, now=now, resolution=resolution)
        if info.start is None and not r.io.totals:
            missing.append(Missing(info.jobid, why_missing(info.jobid, info if known else None)))
            continue
        reports.append(r)
    return reports, missing
