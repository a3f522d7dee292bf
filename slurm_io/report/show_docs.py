"""The documents of `jobio show`: one per job, the same for `--json`, the tables and the
service (`GET /v1/show`, docs/service.md), so that every way in shows the same figures.

What a caller sees is whatever its database role may read (row-level security): another
user's job comes back as missing, exactly like a job that does not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

    from slurm_io.report.jobreport import JobReport


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
                   all_clusters: bool = False) -> tuple[list[JobReport], list[str]]:
    """(reports, missing): the reports of the jobs named by `specs` (sacct -j syntax, already
    checked against JOBID_ARG) and, when `user` is given, of that user's jobs that ran in
    [start, end]; `missing` names the specs with no job and no I/O.

    `clusters` narrows to those clusters (sacct -M a,b); `all_clusters` (-M all) shows every
    cluster's. Neither, and a spec names jobs of two clusters: AmbiguousJob (the database
    serves several clusters, so there is no "local" one to prefer as sacct does). Every run
    of a requeued job is a report of its own, like `sacct -D` lists them."""
    from slurm_io.jobs.info import JobInfo
    from slurm_io.jobs.store import find_jobs, user_jobs
    from slurm_io.report.figures import figures
    from slurm_io.report.show import parse_job_spec

    infos: list[JobInfo] = []
    missing: list[str] = []
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
            found = [JobInfo(n, str(n), None, None, None, None, None, (), None, None,
                             None, None, None, None)]
        if not found:
            missing.append(spec)
        infos += found
    if user:
        end = now if end is None else end
        infos += user_jobs(conn, user, end - 86400 if start is None else start, end)
    reports = []
    for info in infos:
        r = figures(conn, info, now=now, resolution=resolution)
        if info.start is None and not r.io.totals:
            missing.append(info.jobid)
            continue
        reports.append(r)
    return reports, missing
