"""A job's figures, for every reader: the one rule for stored or computed.

Readers (`jobio show`, the mails and the reporter, LASSi, the daily pages, the service) all
get a job's figures here; report.figures adds the job record and the LASSi summary.

The rule: a finished job's stored figures (job_io) are used when they are **complete** (every
collector had read past the job's end when they were computed) **or current** (no batch was
ingested since: computing them again would give the same); else they are computed now.
- Complete figures are final until re-attribution revises them: late data (a spooled
  batch, a collector back from an outage) is found by attribute.stored.stale_jobs and
  recomputed by `jobio attribute`, which counts the revision. Every reader therefore shows
  the same figures and the same revision number; recomputing a complete job whenever any
  batch came in (the reporter's former `complete and current`) would redo almost every job
  (collectors ingest every interval) to find late data that the stale check finds exactly.
  Readers cannot run that check themselves: users may not read ingest_batch (sql/0017).
- Incomplete figures are only as good as the data then: used while nothing new came in.
- A running job, or a finished one without stored figures, is computed now.
Whoever may store (the reporter) stores what was computed (attribute.stored.store_job_io);
readers do not write (users may not write job_io), LASSi uses what is computed for the hour
and leaves storing to `jobio attribute`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.attribute import stored
from slurm_io.attribute.core import JobIO
from slurm_io.jobs.info import JobWindow

if TYPE_CHECKING:
    import psycopg


class Figures(NamedTuple):
    """A job's figures and how far they can be trusted."""

    io: JobIO  # computed now: with its hours (io.hours); stored: without (job_io_hour)
    complete: bool  # every collector read past the job's end
    revision: int | None  # of the stored figures; None: computed now, not stored


def use_stored(s: stored.StoredIO | None) -> bool:
    """The rule (module docstring): stored figures are used when complete or current."""
    return s is not None and (s.complete or s.current)


def figures(conn: psycopg.Connection, job: JobWindow, *, now: float | None = None,
            resolution: float = 120.0) -> Figures:
    """The figures of `job` (by the rule of this module)."""
    now = time.time() if now is None else now
    s = stored.stored_job_io(conn, job.job) if job.end is not None else None
    if s is not None and use_stored(s):
        return Figures(s.io, s.complete, s.revision)
    # imported here: a job whose stored figures hold (`jobio JOBID` of a finished job)
    # needs none of the attribution's queries (issue 25: start-up)
    from slurm_io.attribute.batch import attribute_job

    io = attribute_job(conn, job, now=now, resolution=resolution)
    done_until = stored.data_complete_until(conn)
    complete = job.end is not None and done_until is not None and done_until >= job.end
    return Figures(io, complete, None)
