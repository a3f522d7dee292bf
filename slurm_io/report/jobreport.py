"""The typed report of one job, from attribution to its readers (CLI, mails, daily pages).

Times stay unix seconds and figures stay the attribution's own types; JSON and ISO times are
made only at the edge (`as_json`, for `jobio show --json`, the templates and the pages), so
no reader parses back what another one formatted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # neither attribution (its rules, the psycopg adapter) is needed to
    # render a report: client mode (slurm_io/client) renders the service's documents
    from slurm_io.attribute.core import JobIO
    from slurm_io.attribute.sql import JobInfo


def iso(t: float | None) -> str | None:
    """Local ISO time (seconds), as sacct prints it: the edge form of a time."""
    return None if t is None else datetime.fromtimestamp(t).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class JobReport:
    """A job's record and attributed I/O, and how far the figures can be trusted.

    `complete`: every collector read past the job's end; `revision`: of the stored figures
    (1 + times late data changed them), None when computed for this report (running jobs).
    """

    info: JobInfo
    io: JobIO
    complete: bool
    revision: int | None
    now: float
    lassi: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.info.end is None and self.info.start is not None

    @property
    def start(self) -> float | None:
        return self.info.start

    @property
    def end(self) -> float | None:
        return self.info.end

    @property
    def elapsed(self) -> int | None:
        i = self.info
        return None if i.start is None else round((i.end or self.now) - i.start)

    def as_json(self) -> dict[str, Any]:
        i = self.info
        return {
            "jobid": i.jobid,
            "job": i.raw_id,  # JobIDRaw (the row key stays internal)
            "cluster": i.cluster,
            "run": i.run,  # 0, or n after the n-th requeue (sacct -D lists each)
            "sluid": i.sluid,
            "user": i.user,
            "uid": i.uid,
            "account": i.account,
            "partition": i.partition,
            "name": i.name,
            "nodes": list(i.nodes),
            "start": iso(i.start),
            "end": iso(i.end),
            "elapsed": self.elapsed,
            "state": i.state,
            "exit_code": i.exit_code,
            "work_dir": i.work_dir,
            "running": self.running,
            "complete": self.complete,
            "revision": self.revision,  # of the stored figures; None: computed now
            **self.io.as_json(),
            "lassi": self.lassi,
        }
