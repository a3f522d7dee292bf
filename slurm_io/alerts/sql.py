"""The queries of `jobio alerts`: running jobs' window figures and the alert log."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from slurm_io.alerts.rules import JobWindow, lassi_values
from slurm_io.lassi import sql as lassi_sql
from slurm_io.report.counters import SUM_COLUMNS
from slurm_io.store import tiers
from slurm_io.store.sqlutil import has_tables, no_jit
from slurm_io.store.sqlutil import ts as _ts

_SUMS = ", ".join(f"coalesce(sum(d.{col}), 0)::float8" for col in SUM_COLUMNS.values())

# The jobs running at the moment (started, not ended before it), with their own deltas of the
# window summed per filesystem and target kind. The BRIN index on ts_end finds the window.
WINDOW_SQL = (
    "WITH running AS (SELECT job_raw AS job FROM job WHERE start_time <= %(hi)s "
    "  AND (end_time IS NULL OR end_time > %(hi)s)) "
    "SELECT d.job, t.fs, t.kind, "
    "count(DISTINCT d.ts_end) FILTER (WHERE d.write_bytes_samples > 0), "
    "extract(epoch FROM max(d.ts_end))::float8, " + _SUMS + " "
    f"FROM {tiers.window('%(lo)s', '%(hi)s')} d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s AND d.job IN (SELECT job FROM running) "
    "GROUP BY 1, 2, 3"
)


def running_windows(conn: psycopg.Connection, lo: float, hi: float) -> list[JobWindow]:
    """The running jobs' figures over (lo, hi]."""
    no_jit(conn)
    per: dict[int, dict[str, dict[str, dict[str, float]]]] = {}
    wins: dict[int, JobWindow] = {}
    names = list(SUM_COLUMNS)
    rows = conn.execute(WINDOW_SQL, {"lo": _ts(lo), "hi": _ts(hi)}).fetchall()
    jobs = sorted({r[0] for r in rows})
    meta = {r[0]: r[1:] for r in conn.execute(
        # deltas name raw ids; alert_log keeps them (a raw id two clusters share: the
        # latest row's job record is shown)
        "SELECT job_raw, jobid, uid, user_name, account, name, nodes, "
        "extract(epoch FROM start_time)::float8 FROM job WHERE job_raw = ANY(%s) "
        "ORDER BY start_time NULLS FIRST", (jobs,))}
    for job, fs, kind, n_write, until, *vals in rows:
        if job not in wins:
            jobid, uid, user, account, name, nodes, start = meta[job]
            wins[job] = JobWindow(job, jobid, uid, user, account, name, tuple(nodes or ()),
                                  start)
        w = wins[job]
        counters = dict(zip(names, vals, strict=True))
        for k, v in counters.items():
            if v:
                w.totals[k] = w.totals.get(k, 0.0) + v
        w.write_intervals = max(w.write_intervals, n_write)
        w.data_until = max(w.data_until or 0.0, until)
        per.setdefault(job, {}).setdefault(fs, {})[kind] = counters
    for job, by_fs in per.items():
        wins[job].lassi = {fs: lassi_values(by_kind) for fs, by_kind in by_fs.items()}
    return [wins[j] for j in sorted(wins)]


def baseline(conn: psycopg.Connection, at: float, days: int
             ) -> dict[str, dict[str, float | None]]:
    """fs -> the job-hour averages of the stored LASSi hours of the `days` UTC days before the
    day of `at` (the baseline `jobio lassi compute` uses for that day)."""
    if not has_tables(conn):
        return {}
    day = at - at % 86400
    return {fs: job_avg for fs, (_n, job_avg, _fs_avg) in
            lassi_sql.baseline(conn, day - days * 86400, day).items()
            if any(v for v in job_avg.values())}


def already(conn: psycopg.Connection, jobs: list[int]) -> set[tuple[int, str]]:
    """(job, kind) pairs that were alerted (or capped, or are being sent)."""
    return {(j, k) for j, k in conn.execute(
        "SELECT job, kind FROM alert_log WHERE job = ANY(%s) AND state <> 'failed'", (jobs,))}


def failed_before(conn: psycopg.Connection, job: int, error: str) -> bool:
    """Whether an attempt of this job already failed with this error (recorded once)."""
    return conn.execute("SELECT 1 FROM alert_log WHERE job = %s AND state = 'failed' "
                        "AND error = %s LIMIT 1", (job, error)).fetchone() is not None


def mails_today(conn: psycopg.Connection, user: str, day_start: float) -> int:
    """Alert mails of the user since the start of the (UTC) day: one per message."""
    row = conn.execute(
        "SELECT count(DISTINCT message_id) FROM alert_log WHERE user_name = %s "
        "AND created_at >= %s AND state IN ('sending', 'sent')",
        (user, _ts(day_start))).fetchone()
    return int(row[0]) if row else 0


def log(conn: psycopg.Connection, w: JobWindow, kinds: Iterable[tuple[str, dict[str, Any]]],
        state: str, *, recipients: list[str], message_id: str | None,
        error: str | None = None) -> None:
    """One row per kind (a failed attempt replaces nothing: the next run tries again)."""
    for kind, figures in kinds:
        conn.execute(
            "INSERT INTO alert_log (job, jobid, uid, user_name, kind, state, data_until, "
            "recipients, message_id, figures, error) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (w.job, w.jobid, w.uid, w.user, kind, state,
             _ts(w.data_until) if w.data_until else None, recipients, message_id,
             Jsonb(figures), error))


def mark(conn: psycopg.Connection, message_id: str, state: str, error: str | None = None
         ) -> None:
    conn.execute("UPDATE alert_log SET state = %s, error = %s, "
                 "sent_at = CASE WHEN %s = 'sent' THEN now() END WHERE message_id = %s "
                 "AND state = 'sending'", (state, error, state, message_id))


class Logged(NamedTuple):
    """An alert_log row: one kind of alert of one job, and what became of its mail."""

    created: float
    jobid: str | None
    user: str | None
    kind: str
    state: str
    recipients: list[str] | None
    error: str | None
    figures: dict[str, Any] | None
    latency: float | None  # from the data's end to the mail's sending


def listing(conn: psycopg.Connection, since: float) -> list[Logged]:
    """The alert log since `since`, oldest first."""
    return [Logged(*r) for r in conn.execute(
        "SELECT extract(epoch FROM created_at)::float8, jobid, user_name, kind, state, "
        "recipients, error, figures, extract(epoch FROM sent_at - data_until)::float8 "
        "FROM alert_log WHERE created_at >= %s ORDER BY created_at, id", (_ts(since),)
    ).fetchall()]
