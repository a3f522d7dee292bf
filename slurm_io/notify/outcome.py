"""What the reporter does with a claimed job: a pure decision, apart from the I/O applying it.

Why apart: the decision (wait for data, skip, give up, or send) has a handful of inputs (the
job's queue row, its Slurm record, how far the collectors have read) and is easiest to trust
when a table of cases checks it (tests/notify/test_outcome.py); the reporter
(slurm_io.notify.reporter) applies an Outcome in one place: the queue call, the commit, the
pass counter and the log line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from slurm_io.notify.queue import Claimed

Action = Literal["wait", "skip", "fail", "send"]


class Outcome(NamedTuple):
    """The reporter's decision for one claimed job.

    `note` is stored on the queue row (and, for `send`, on the sent row); `incomplete`:
    the mail goes out before every collector read past the job's end (report.max_wait).
    """

    action: Action
    note: str | None = None
    incomplete: bool = False


@dataclass
class PassResult:
    """What one reporter pass did, counted by outcome."""

    ingested: int = 0
    bad_spool: int = 0
    orphans: int = 0
    swept: int = 0
    synced: int = 0
    sent: int = 0
    unconfirmed: int = 0
    skipped: int = 0
    waiting: int = 0
    retried: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.__dict__.items() if k != "problems")


def readiness(c: Claimed, done_until: float | None, max_wait: float) -> Outcome:
    """Whether a claimed job can be reported now.

    Wait for the job's record, then for sacct's final record, then for every collector to
    read past the job's end; after `max_wait` a job without a record fails, and one without
    a final record or complete data is sent marked incomplete. Jobs that never ran (cancelled
    while pending) are skipped: there is nothing to report.
    """
    if not c.has_job:
        if c.now - c.queued_at < max_wait:
            return Outcome("wait", "waiting for the job's record")
        return Outcome("fail", "no job record after report.max_wait", True)
    incomplete = False
    if not c.final:
        if c.now - c.queued_at < max_wait:
            return Outcome("wait", "waiting for sacct's final record of the job")
        incomplete = True
    elif c.never_ran:
        return Outcome("skip", "never ran (cancelled while pending): no report")
    end = c.end if c.end is not None else c.queued_at
    if done_until is None or done_until < end:
        if c.now - end < max_wait:
            last = "never" if done_until is None else time.strftime(
                "%Y-%m-%dT%H:%M:%S", time.localtime(done_until))
            return Outcome("wait", f"waiting for every collector to read past the job's end "
                                   f"(all read until {last})")
        incomplete = True
    return Outcome("send", "sent before all data was in (report.max_wait)" if incomplete
                   else None, incomplete)
