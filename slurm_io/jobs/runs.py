"""Which records of one job id are the same run (pure; the SQL twin is store.RUN_MATCH).

A job id repeats across clusters (each numbers its jobs from 1) and across the runs of a
requeued job (same id, new SLUID on 25.11+, new start time everywhere). Two records are the
same run when they are of the same cluster and raw id and their SLUIDs agree when both have
one, else their start times agree when both have one; a record with neither (a pending job,
22.05's hook without times) is the latest run's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (annotations only: `jobio JOBID` does without model; issue 25)
    from slurm_io.model import JobRecord


def same_run(a: JobRecord, b: JobRecord) -> bool:
    """Whether records `a` and `b` describe the same run of the same job."""
    if (a.cluster, a.job) != (b.cluster, b.job):
        return False
    if a.sluid is not None and b.sluid is not None:
        return a.sluid == b.sluid
    if a.start is not None and b.start is not None:
        return a.start == b.start
    return True


def latest_per_run(records: list[JobRecord]) -> list[JobRecord]:
    """One record per run, the last one given winning (a file or a sacct -D listing with
    repeated lines), first-seen order kept."""
    runs: dict[tuple[str | None, int], list[JobRecord]] = {}
    order: list[tuple[tuple[str | None, int], int]] = []
    for r in records:
        known = runs.setdefault((r.cluster, r.job), [])
        for i in range(len(known) - 1, -1, -1):
            if same_run(known[i], r):
                known[i] = r
                break
        else:
            known.append(r)
            order.append(((r.cluster, r.job), len(known) - 1))
    return [runs[k][i] for k, i in order]
