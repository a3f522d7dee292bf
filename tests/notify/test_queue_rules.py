"""The report queue's rules (slurm_io.notify.queue), apart from their statements: which
`sending` row is an orphan, and how long a failed attempt waits."""

from __future__ import annotations

from itertools import pairwise

import pytest

from slurm_io.notify.queue import MAX_BACKOFF, backoff, orphaned

LEASE = 600.0


@pytest.mark.parametrize(("alive", "age", "expected"), [
    pytest.param(False, 1.0, True, id="reporter_gone_is_an_orphan_at_once"),
    pytest.param(True, 10 * LEASE, False, id="live_reporter_keeps_its_row_however_old"),
    pytest.param(None, LEASE + 1, True, id="unknown_reporter_past_the_lease_is_an_orphan"),
    pytest.param(None, LEASE - 1, False, id="unknown_reporter_within_the_lease_is_not"),
    pytest.param(None, None, True, id="unknown_reporter_without_claim_time_is_an_orphan"),
])
def test_orphaned(alive: bool | None, age: float | None, expected: bool) -> None:
    assert orphaned(alive, age, LEASE) is expected


def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    base = 60.0
    waits = [backoff(n, base) for n in range(1, 12)]
    assert waits[0] == base
    assert all(b == min(2 * a, MAX_BACKOFF) for a, b in pairwise(waits))
    assert waits[-1] == MAX_BACKOFF
