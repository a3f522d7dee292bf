"""Why `jobio show` has nothing for a job (show_docs.why_missing), from the job row alone:
the states a job waits in, a job that ended unstarted, a row that has not learnt its start.
The installed command and the service print these lines: tests/site (test_users_cli,
test_service)."""

from __future__ import annotations

import pytest

from slurm_io.jobs.info import JobInfo
from slurm_io.report.show_docs import why_missing


def _row(state: str | None, end: float | None = None) -> JobInfo:
    return JobInfo(4294967300, "77", 1000, "alice", "proj", "batch", "x", (), None, end, state,
                   None, None, None)


@pytest.mark.parametrize("state", ["PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                                   "RESV_DEL_HOLD"])
def test_a_waiting_job_is_pending(state: str) -> None:
    assert why_missing("77", _row(state)) == "job 77 is pending: no I/O before it starts"


def test_ended_before_it_started_names_the_state() -> None:
    assert why_missing("77", _row("CANCELLED", end=1.0)) == \
        "job 77 ended (CANCELLED) before it started: no I/O"


@pytest.mark.parametrize("row", [_row(None), _row(None, end=1.0), _row("RUNNING")])
def test_a_row_without_its_start_says_so(row: JobInfo) -> None:
    # the 22.05 hook's record (no state, no times), or sacct's not yet synced
    assert why_missing("77", row) == \
        "job 77 has no start time recorded yet (sacct/hook not synced)"


def test_no_row_is_no_such_job() -> None:
    assert why_missing("77", None) == "job 77: no such job, or no I/O recorded for it"
