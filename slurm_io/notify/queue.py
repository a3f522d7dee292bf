"""The report queue's rules: when a failed attempt is retried and when given up, how long the
back-off is, which `sending` rows are orphans. The statements are in `notify.sql`; the ones
with no decision of their own are named here too, so the reporter reads one module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slurm_io.notify import sql
from slurm_io.notify.sql import (
    STATES,
    Claimed,
    Due,
    Listed,
    Swept,
    claim,
    due,
    enqueue,
    listing,
    mark_sending,
    mark_sent,
    retry,
    skip,
    sweep,
    wait,
)

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["MAX_BACKOFF", "STATES", "Claimed", "Due", "Listed", "Swept", "backoff", "claim",
           "counts", "due", "enqueue", "fail_attempt", "listing", "mark_sending", "mark_sent",
           "resolve_orphans", "retry", "skip", "sweep", "wait"]

MAX_BACKOFF = 6 * 3600.0


def backoff(attempts: int, base: float) -> float:
    """Seconds before the next attempt after `attempts` failed ones: base, 2 base, 4 base..."""
    return min(base * 2 ** max(0, attempts - 1), MAX_BACKOFF)


def fail_attempt(conn: Connection, job: int, error: str, *, attempts: int,
                 max_attempts: int, base: float) -> str:
    """Record a failed attempt (`attempts` counts it); queue the next one with back-off, or
    give up after `max_attempts`. Returns the new state."""
    if attempts >= max_attempts:
        sql.give_up(conn, job, error, attempts=attempts)
        return "failed"
    sql.retry_later(conn, job, error, attempts=attempts, delay=backoff(attempts, base))
    return "queued"


def orphaned(alive: bool | None, age: float | None, lease: float) -> bool:
    """A `sending` row is orphaned when its reporter is gone (`alive` False), or, when that
    cannot be told (another host: None), when its claim is older than `lease`."""
    return alive is False or (alive is None and (age is None or age > lease))


def resolve_orphans(conn: Connection, *, lease: float,
                    alive: Callable[[str], bool | None]) -> list[int]:
    """Rows left in `sending` by a reporter that died (or lost its database connection)
    between the durable claim and recording the outcome. The SMTP server may or may not have
    accepted the message; it is never sent again (at most once): the row becomes `sent` with
    a note saying delivery is unconfirmed (the MTA log has the Message-ID).

    A row is orphaned when `alive(claimed_by)` says its reporter process is gone (False), or,
    when that cannot be told (another host: None), when its claim is older than `lease`.
    """
    done = []
    for row in sql.sending(conn):
        if orphaned(alive(row.claimed_by or ""), row.age, lease):
            sql.mark_unconfirmed(conn, row.job, row.claimed_by)
            done.append(row.job)
    conn.commit()
    return done


def counts(conn: Connection) -> dict[str, Any]:
    """Rows per state, unconfirmed sends, failures of the last day, the oldest queued row:
    the status document's keys (`jobio report-daemon --status`)."""
    c = sql.counts(conn)
    return {**c.per_state, "unconfirmed": c.unconfirmed, "failed_last_day": c.failed_last_day,
            "oldest_queued": c.oldest_queued}
