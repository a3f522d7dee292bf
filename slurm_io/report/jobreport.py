"""The typed report of one job, from attribution to its readers (CLI, mails, daily pages).

Times stay unix seconds and figures stay the attribution's own types; JSON and ISO times are
made only at the edge (`as_json`, for `jobio show --json`, the templates and the pages), so
no reader parses back what another one formatted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slurm_io.attribute.result import (  # a leaf: the client mode needs no rules
    JobIO,
    ranges_from_json,
)
from slurm_io.jobs.info import JobInfo
from slurm_io.lassi.summary import LassiSummary


def iso(t: float | None) -> str | None:
    """Local ISO time (seconds), as sacct prints it: the edge form of a time."""
    return None if t is None else datetime.fromtimestamp(t).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class JobReport:
    """A job's record and attributed I/O, and how far the figures can be trusted.

    `complete`: every collector read past the job's end; `revision`: of the stored figures
    (1 + times late data changed them), None when computed for this report (running jobs).
    Made by report.figures; rebuilt from its JSON form by `from_json` (the service's clients).
    """

    info: JobInfo
    io: JobIO
    complete: bool
    revision: int | None
    now: float
    lassi: LassiSummary | None = None
    # as the service computed it (a report rebuilt from JSON: its times are whole seconds);
    # None: from the times
    sent_elapsed: int | None = None
    # seconds the database read was behind the primary (store.standby), when read through
    # `read_dsn`; None: no standby configured (no note, no JSON field)
    replication_lag: float | None = None

    @property
    def running(self) -> bool:
        return self.info.end is None and self.info.start is not None

    @property
    def start(self) -> float | None:
        return self.info.start

    @property
    def end(self) -> float | None:
        return self.info.end

    # the figures the mail's view and advice read (mail.advice.Figures), by their own names
    @property
    def totals(self) -> dict[str, int]:
        return self.io.totals

    @property
    def quality(self) -> dict[str, Any]:
        return self.io.quality

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.info.nodes

    @property
    def elapsed(self) -> int | None:
        if self.sent_elapsed is not None:
            return self.sent_elapsed
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
            "lassi": None if self.lassi is None else self.lassi.as_json(),
        } | ({} if self.replication_lag is None
             else {"replication_lag": round(self.replication_lag, 3)})

    @classmethod
    def from_json(cls, d: dict[str, Any], *, now: float) -> JobReport:
        """The report of one of the service's documents (`as_json`), for rendering: the
        row key stays on the server (the raw id stands for it), the submit line is not sent."""
        info = JobInfo(int(d["job"]), str(d["jobid"]), d.get("uid"), d.get("user"),
                       d.get("account"), d.get("partition"), d.get("name"),
                       tuple(d.get("nodes") or ()), _epoch(d.get("start")),
                       _epoch(d.get("end")), d.get("state"), d.get("exit_code"),
                       d.get("work_dir"), None, d.get("sluid"), None, d.get("cluster"),
                       int(d.get("run") or 0))
        io = JobIO(info.job, d.get("totals") or {}, d.get("recovered") or {},
                   d.get("ambiguous") or {}, d.get("split") or {}, d.get("by_target") or {},
                   d.get("by_node") or {}, d.get("timeline") or [], d.get("quality") or {},
                   0, 0, d.get("ambiguous_evidence") or {}, d.get("ambiguous_time") or {}, {},
                   ranges_from_json(d.get("ranges")))
        return cls(info, io, bool(d.get("complete")), d.get("revision"), now,
                   LassiSummary.from_json(d.get("lassi")), d.get("elapsed"),
                   d.get("replication_lag"))


def _epoch(s: str | None) -> float | None:
    """A local ISO time (`iso`) back to unix seconds."""
    return None if s is None else datetime.fromisoformat(s).timestamp()
