"""What a job is for the readers: its record as the job table holds it (JobInfo) and the
part of it attribution needs (JobWindow). Plain types, a leaf of the jobs package.

They lived in attribute (core, sql), which made every reader of a job record import the
attribution adapter; now attribution, LASSi, the reports and the mails import them from here,
below all of them.
"""

from __future__ import annotations

from typing import NamedTuple


class JobWindow(NamedTuple):
    """A job as attribution sees it: its row key, uid, nodes and run (unix seconds)."""

    job: int  # the row key (sql/0020)
    uid: int | None
    nodes: tuple[str, ...]
    start: float | None
    end: float | None  # None: still running
    raw: int | None = None  # JobIDRaw, what deltas name; None: the key is the raw id
    cluster: str | None = None

    @property
    def raw_id(self) -> int:
        return self.job if self.raw is None else self.raw


class JobInfo(NamedTuple):
    """A job record as `show` prints it (from the job table)."""

    job: int
    jobid: str
    uid: int | None
    user: str | None
    account: str | None
    partition: str | None
    name: str | None
    nodes: tuple[str, ...]
    start: float | None
    end: float | None
    state: str | None
    exit_code: str | None
    work_dir: str | None
    submit_line: str | None
    sluid: str | None = None  # Slurm 24.11+ (sacct), 25.11+ (hook env)
    raw: int | None = None  # JobIDRaw (job is the row key, sql/0020); None: same as job
    cluster: str | None = None
    run: int = 0  # 0: first run, n: after the n-th requeue

    @property
    def raw_id(self) -> int:
        return self.job if self.raw is None else self.raw

    @property
    def window(self) -> JobWindow:
        return JobWindow(self.job, self.uid, self.nodes, self.start, self.end, self.raw_id,
                         self.cluster)
