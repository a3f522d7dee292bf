"""The notify package's query module: every statement the hook, the spool ingest, the sweep,
the reporter and the plain mail builder run (report_queue, sql/0005_reports.sql, and the job
rows they read). Thin and typed: the decisions are in `queue` and `reporter`.

Times are the database server's (`now()`), so reporters on hosts with skewed clocks agree
on what is due.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import psycopg

from slurm_io.jobs.store import ACTIVE_STATES

STATES = ("queued", "sending", "sent", "skipped", "failed")


def enqueue(conn: psycopg.Connection, job: int, *, queued_at: float | None,
            source: str) -> bool:
    """Queue job `job` unless it has a row already (whatever its state); True if queued."""
    row = conn.execute(
        "INSERT INTO report_queue (job, queued_at, source, next_attempt) "
        "VALUES (%(job)s, coalesce(to_timestamp(%(t)s), now()), %(src)s, now()) "
        "ON CONFLICT (job) DO NOTHING RETURNING job",
        {"job": job, "t": queued_at, "src": source}).fetchone()
    return row is not None


class Due(NamedTuple):
    """A queued row that is due, with what its job row says (None: no job row yet)."""

    job: int
    final: bool  # sacct's record is final: a final state and an end time


def due(conn: psycopg.Connection, limit: int) -> list[Due]:
    """Queued rows whose next attempt is due, oldest first (no locks taken)."""
    rows = conn.execute(
        "SELECT q.job, (j.state IS NOT NULL AND j.end_time IS NOT NULL "
        "               AND NOT (j.state = ANY(%s::text[]))) "
        "FROM report_queue q LEFT JOIN job j USING (job) "
        "WHERE q.state = 'queued' AND q.next_attempt <= now() "
        "ORDER BY q.next_attempt, q.job LIMIT %s",
        (list(ACTIVE_STATES), limit)).fetchall()
    return [Due(r[0], bool(r[1])) for r in rows]


class Claimed(NamedTuple):
    """A queue row locked by this transaction, with its job row and the database clock."""

    job: int
    queued_at: float
    attempts: int
    now: float
    has_job: bool
    state: str | None
    start: float | None
    end: float | None
    nodes: tuple[str, ...]
    submit: float | None
    raw: int | None = None  # JobIDRaw (`job` is the row key, sql/0020)
    cluster: str | None = None

    @property
    def final(self) -> bool:
        return (self.state is not None and self.end is not None
                and self.state not in ACTIVE_STATES)

    @property
    def never_ran(self) -> bool:
        """Cancelled while pending: no start time, or no node ever allocated."""
        return self.start is None or not self.nodes


def claim(conn: psycopg.Connection, job: int) -> Claimed | None:
    """Lock job `job`'s row if it is still queued and due (SKIP LOCKED: a row another
    reporter holds is not waited for); None when it is not ours to process now."""
    r = conn.execute(
        "SELECT q.job, extract(epoch FROM q.queued_at)::float8, q.attempts, "
        "extract(epoch FROM now())::float8, j.job IS NOT NULL, j.state, "
        "extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8, "
        "j.nodes, extract(epoch FROM j.submit)::float8, j.job_raw, j.cluster "
        "FROM report_queue q LEFT JOIN job j USING (job) "
        "WHERE q.job = %s AND q.state = 'queued' AND q.next_attempt <= now() "
        "FOR UPDATE OF q SKIP LOCKED", (job,)).fetchone()
    if r is None:
        return None
    return Claimed(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], tuple(r[8] or ()), r[9],
                   r[10], r[11])


def wait(conn: psycopg.Connection, job: int, note: str, recheck: float) -> None:
    """Leave the row queued, saying what it waits for; look again in `recheck` seconds."""
    conn.execute(
        "UPDATE report_queue SET note = %s, next_attempt = now() + make_interval(secs => %s), "
        "updated_at = now() WHERE job = %s", (note, recheck, job))


def skip(conn: psycopg.Connection, job: int, note: str) -> None:
    """The job gets no report (policy or never ran), and the row says why."""
    conn.execute("UPDATE report_queue SET state = 'skipped', note = %s, updated_at = now() "
                 "WHERE job = %s", (note, job))


def mark_sending(conn: psycopg.Connection, job: int, *, claimed_by: str, message_id: str,
                 recipients: Sequence[str], incomplete: bool) -> None:
    """The durable claim taken right before the final "." of the SMTP transaction."""
    conn.execute(
        "UPDATE report_queue SET state = 'sending', attempts = attempts + 1, "
        "claimed_by = %s, claimed_at = now(), message_id = %s, recipients = %s, "
        "incomplete = %s, updated_at = now() WHERE job = %s",
        (claimed_by, message_id, list(recipients), incomplete, job))


def mark_sent(conn: psycopg.Connection, job: int, note: str | None = None) -> None:
    """The SMTP server accepted the message."""
    conn.execute(
        "UPDATE report_queue SET state = 'sent', sent_at = now(), note = coalesce(%s, note), "
        "last_error = NULL, updated_at = now() WHERE job = %s", (note, job))


def give_up(conn: psycopg.Connection, job: int, error: str, *, attempts: int) -> None:
    """The row becomes `failed` after its last allowed attempt (`queue.fail_attempt` decides)."""
    conn.execute(
        "UPDATE report_queue SET state = 'failed', attempts = %s, last_error = %s, "
        "note = %s, claimed_by = NULL, updated_at = now() WHERE job = %s",
        (attempts, error[:2000], f"gave up after {attempts} attempt(s)", job))


def retry_later(conn: psycopg.Connection, job: int, error: str, *, attempts: int,
                delay: float) -> None:
    """The row is queued again, `delay` seconds from now, with the failed attempt noted."""
    conn.execute(
        "UPDATE report_queue SET state = 'queued', attempts = %s, last_error = %s, "
        "note = %s, claimed_by = NULL, "
        "next_attempt = now() + make_interval(secs => %s), updated_at = now() WHERE job = %s",
        (attempts, error[:2000], f"attempt {attempts} failed; retrying", delay, job))


class Sending(NamedTuple):
    """A row in `sending`, locked: who claimed it and how long ago (None: no claim time)."""

    job: int
    claimed_by: str | None
    age: float | None


def sending(conn: psycopg.Connection) -> list[Sending]:
    """Rows left in `sending`, locked (SKIP LOCKED: one a live reporter holds is not ours)."""
    return [Sending(*r) for r in conn.execute(
        "SELECT job, claimed_by, extract(epoch FROM now() - claimed_at)::float8 "
        "FROM report_queue WHERE state = 'sending' FOR UPDATE SKIP LOCKED").fetchall()]


def mark_unconfirmed(conn: psycopg.Connection, job: int, claimed_by: str | None) -> None:
    """A `sending` row whose reporter stopped during the SMTP transaction: `sent`, never sent
    again (at most once), with a note saying the delivery is unconfirmed."""
    conn.execute(
        "UPDATE report_queue SET state = 'sent', sent_at = claimed_at, "
        "note = %s, updated_at = now() WHERE job = %s",
        (f"delivery unconfirmed: reporter {claimed_by} stopped during the SMTP "
         "transaction; not sent again (look for the Message-ID in the MTA log)", job))


class Swept(NamedTuple):
    """The jobs a sweep entered: queued for a report, or skipped (never ran)."""

    queued: list[int]
    skipped: list[int]


def sweep(conn: psycopg.Connection, since: float) -> Swept:
    """Queue finished jobs that ended after `since` and have no row (their hook never ran or
    was lost); jobs that never ran are entered as skipped. Jobs that ended before this
    migration was applied are never queued: no mail storm for old jobs at installation.
    Returns (queued, skipped) job ids."""
    rows = conn.execute(
        "INSERT INTO report_queue (job, queued_at, source, state, note, next_attempt) "
        "SELECT j.job, now(), 'sweep', "
        "  CASE WHEN j.start_time IS NULL OR j.nodes = '{}' THEN 'skipped' ELSE 'queued' END, "
        "  CASE WHEN j.start_time IS NULL OR j.nodes = '{}' "
        "       THEN 'never ran (cancelled while pending): no report' END, now() "
        "FROM job j "
        "WHERE j.end_time >= to_timestamp(%s) "
        "  AND j.end_time >= (SELECT applied_at FROM schema_migrations WHERE version = 5) "
        "  AND j.state IS NOT NULL AND NOT (j.state = ANY(%s::text[])) "
        "  AND NOT EXISTS (SELECT FROM report_queue q WHERE q.job = j.job) "
        "ORDER BY j.job ON CONFLICT (job) DO NOTHING RETURNING job, state",
        (since, list(ACTIVE_STATES))).fetchall()
    conn.commit()
    return Swept([j for j, s in rows if s == "queued"], [j for j, s in rows if s == "skipped"])


class Counts(NamedTuple):
    """The queue at a glance: rows per state, sends whose delivery is unconfirmed, failures
    of the last day, when the oldest queued row was queued (None: none queued)."""

    per_state: dict[str, int]
    unconfirmed: int
    failed_last_day: int
    oldest_queued: float | None


def counts(conn: psycopg.Connection) -> Counts:
    """Rows per state (every state, 0 when none), unconfirmed sends, failures of the last
    day, the oldest queued row."""
    per_state = dict.fromkeys(STATES, 0)
    for state, n in conn.execute("SELECT state, count(*) FROM report_queue GROUP BY state"):
        per_state[state] = n
    r = conn.execute(
        "SELECT count(*) FILTER (WHERE state = 'sent' AND note LIKE 'delivery unconfirmed%'), "
        "count(*) FILTER (WHERE state = 'failed' AND updated_at > now() - interval '1 day'), "
        "extract(epoch FROM min(queued_at) FILTER (WHERE state = 'queued'))::float8 "
        "FROM report_queue").fetchone()
    assert r is not None
    return Counts(per_state, *r)


class Listed(NamedTuple):
    """A queue row as `jobio reports` lists it, with its job's id and user."""

    job: int
    jobid: str | None
    user: str | None
    state: str
    source: str
    queued_at: float
    attempts: int
    sent_at: float | None
    note: str | None
    last_error: str | None
    message_id: str | None
    recipients: tuple[str, ...]


def listing(conn: psycopg.Connection, *, states: Sequence[str] = (), limit: int = 50,
            jobs: Sequence[int] = ()) -> list[Listed]:
    """The newest rows first, restricted to `states` and `jobs` when given."""
    q = ("SELECT q.job, j.jobid, j.user_name, q.state, q.source, "
         "extract(epoch FROM q.queued_at)::float8, q.attempts, "
         "extract(epoch FROM q.sent_at)::float8, q.note, q.last_error, q.message_id, "
         "q.recipients FROM report_queue q LEFT JOIN job j USING (job) WHERE true")
    args: list[Any] = []
    if states:
        q += " AND q.state = ANY(%s::text[])"
        args.append(list(states))
    if jobs:
        q += " AND q.job = ANY(%s::bigint[])"
        args.append(list(jobs))
    q += " ORDER BY q.updated_at DESC, q.job DESC LIMIT %s"
    args.append(limit)
    return [Listed(*r[:11], tuple(r[11] or ())) for r in conn.execute(q, args)]


def retry(conn: psycopg.Connection, jobs: Sequence[int]) -> list[int]:
    """Queue failed rows again, with a fresh attempt count (an admin's decision)."""
    rows = conn.execute(
        "UPDATE report_queue SET state = 'queued', attempts = 0, next_attempt = now(), "
        "note = 'queued again by an admin', updated_at = now() "
        "WHERE job = ANY(%s::bigint[]) AND state = 'failed' RETURNING job",
        (list(jobs),)).fetchall()
    conn.commit()
    return [r[0] for r in rows]


class PlainJob(NamedTuple):
    """What the plain report mail says of a job: its row and its stored figures."""

    jobid: str | None
    user: str | None
    name: str | None
    state: str | None
    exit_code: str | None
    nodes: tuple[str, ...]
    start: float | None
    end: float | None
    totals: dict[str, Any]
    complete: bool | None


def plain_job(conn: psycopg.Connection, job: int) -> PlainJob | None:
    """Job `job`'s row with its stored job_io totals (empty when none); None: no row."""
    row = conn.execute(
        "SELECT j.jobid, j.user_name, j.name, j.state, j.exit_code, j.nodes, "
        "extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8, "
        "io.totals, io.complete "
        "FROM job j LEFT JOIN job_io io USING (job) WHERE j.job = %s", (job,)).fetchone()
    if row is None:
        return None
    return PlainJob(*row[:5], tuple(row[5] or ()), row[6], row[7], row[8] or {}, row[9])
