"""The reporter's decision for a claimed job (slurm_io.notify.outcome.readiness), by table."""

from __future__ import annotations

import pytest

from slurm_io.notify.outcome import Outcome, readiness
from slurm_io.notify.queue import Claimed

MAX_WAIT = 1800.0
NOW = 1_700_010_000.0
READ_PAST_END = NOW - 10  # every collector has read until here


def claimed(*, queued_ago: float = 60, has_job: bool = True, state: str | None = "COMPLETED",
            ended_ago: float | None = 120, started: bool = True,
            nodes: tuple[str, ...] = ("cn001",)) -> Claimed:
    end = None if ended_ago is None else NOW - ended_ago
    start = (NOW - 3600) if started else None
    return Claimed(job=42, queued_at=NOW - queued_ago, attempts=0, now=NOW, has_job=has_job,
                   state=state, start=start, end=end, nodes=nodes, submit=NOW - 4000)


TABLE = [
    pytest.param(claimed(has_job=False), READ_PAST_END, "wait", False,
                 id="job_without_a_record_waits_for_it"),
    pytest.param(claimed(has_job=False, queued_ago=MAX_WAIT + 1), READ_PAST_END, "fail", True,
                 id="job_without_a_record_after_max_wait_fails"),
    pytest.param(claimed(state="RUNNING", ended_ago=None), READ_PAST_END, "wait", False,
                 id="running_job_waits_for_its_final_record"),
    pytest.param(claimed(state="RUNNING", ended_ago=None, queued_ago=MAX_WAIT + 1),
                 READ_PAST_END, "send", True,
                 id="job_without_final_record_after_max_wait_is_sent_incomplete"),
    pytest.param(claimed(started=False), READ_PAST_END, "skip", False,
                 id="job_cancelled_while_pending_is_skipped"),
    pytest.param(claimed(nodes=()), READ_PAST_END, "skip", False,
                 id="job_never_given_a_node_is_skipped"),
    pytest.param(claimed(ended_ago=5), READ_PAST_END, "wait", False,
                 id="job_ended_after_what_collectors_read_waits_for_them"),
    pytest.param(claimed(), None, "wait", False,
                 id="nothing_read_by_any_collector_waits"),
    pytest.param(claimed(ended_ago=MAX_WAIT + 60), NOW - MAX_WAIT - 120, "send", True,
                 id="data_still_missing_after_max_wait_is_sent_incomplete"),
    pytest.param(claimed(), READ_PAST_END, "send", False,
                 id="finished_job_with_all_data_read_is_sent_complete"),
]


@pytest.mark.parametrize(("c", "done_until", "action", "incomplete"), TABLE)
def test_readiness_decides(c: Claimed, done_until: float | None, action: str,
                           incomplete: bool) -> None:
    outcome = readiness(c, done_until, MAX_WAIT)
    assert (outcome.action, outcome.incomplete) == (action, incomplete)
    assert (outcome.note is None) == (action == "send" and not incomplete)


def test_waiting_for_collectors_says_how_far_they_read() -> None:
    assert "never" in (readiness(claimed(), None, MAX_WAIT).note or "")
    assert readiness(claimed(ended_ago=5), READ_PAST_END, MAX_WAIT).note.startswith(
        "waiting for every collector")


def test_an_outcome_is_a_plain_value() -> None:
    assert Outcome("skip", "x") == Outcome("skip", "x", False)
