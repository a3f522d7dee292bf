"""A job's report, for every reader: its record, its figures, its LASSi summary.

`figures` is what `jobio show`, the mails and the reporter, the daily pages and the service
call; the stored-or-computed rule lives in attribute.figures (LASSi, below report, uses that
one directly). The readers take the typed JobReport; JSON is made at the edges (`as_json`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from slurm_io.attribute import figures as attribute_figures
from slurm_io.jobs.info import JobInfo
from slurm_io.lassi.days import job_lassi
from slurm_io.report.jobreport import JobReport

if TYPE_CHECKING:
    import psycopg


def figures(conn: psycopg.Connection, info: JobInfo, *, now: float | None = None,
            resolution: float = 120.0) -> JobReport:
    """The typed report of a job: stored figures for a finished job (computed when there
    are none yet, or new data came since they were computed incomplete), computed ones for
    a running job; with the job's LASSi summary when `jobio lassi compute` covered it."""
    now = time.time() if now is None else now
    f = attribute_figures.figures(conn, info.window, now=now, resolution=resolution)
    return JobReport(info, f.io, f.complete, f.revision, now, job_lassi(conn, info.raw_id))
