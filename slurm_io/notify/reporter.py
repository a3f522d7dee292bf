"""`jobio report-daemon`: mail every finished job's I/O report, exactly once.

One pass (`run_once`), every `report.interval` seconds:

1. ingest the hook's spool files the hook could not store itself (database down);
2. resolve rows a dead reporter left in `sending`: sent, unconfirmed, never again;
3. every `report.sweep_every` seconds, `jobs sync` the last `report.sweep_hours` and queue
   finished jobs that have no row (no hook ran); jobs that never ran are `skipped`;
4. `jobs sync` (sacct -j) the due jobs whose record is not final yet;
5. for each due job, under its row lock (SELECT ... FOR UPDATE SKIP LOCKED, so any number of
   reporters may run): wait until sacct's record is final and every collector has read past
   the job's end (`data_complete_until`), up to `report.max_wait` after which it is
   reported anyway, marked incomplete; skip jobs that never ran; get the job's figures
   (attribute.figures: the stored ones when complete or current, else computed, and then
   stored in `job_io`); build the mail (MailBuilder); send it.

Sending (docs/hook.md, "Exactly once"): the SMTP transaction is run up to the final "."
while the row is locked; then the row is committed as `sending` with its deterministic
Message-ID; then the "." is sent and, on 250, the row is committed as `sent`. A crash
before the `sending` commit delivers nothing and the row is still `queued`; a crash after
it leaves `sending`, which step 2 turns into `sent` (unconfirmed) -- never a second mail.
Refusals and connection failures are retried with exponential back-off (`report.
retry_base`, doubling, at most 6 h apart) and the row is `failed` after
`report.max_attempts`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_io.attribute.figures import figures
from slurm_io.attribute.stored import data_complete_until, store_job_io
from slurm_io.fsutil import pid_alive
from slurm_io.jobs.source import SacctSource, SourceError
from slurm_io.jobs.store import job_by_key, raw_ids, upsert_isolated
from slurm_io.jobs.sync import keep_refused
from slurm_io.jobs.uids import fill_uids
from slurm_io.notify import hookspool, queue, restored
from slurm_io.notify.envelope import NoRecipient, finish_message, message_id
from slurm_io.notify.interfaces import MailBuilder
from slurm_io.notify.outcome import Outcome, PassResult, readiness
from slurm_io.notify.reporter_settings import ReporterSettings, SacctJobsSource, smtp_settings
from slurm_io.notify.smtp import OutcomeUnknown, Session, SmtpSettings, Undelivered
from slurm_io.store.db import DatabaseLink
from slurm_io.store.errors import ConnectionLost

if TYPE_CHECKING:
    import psycopg

# names other modules import from here (settings and results live in their own modules)
__all__ = ["NoRecipient", "PassResult", "Reporter", "ReporterSettings", "SacctJobsSource",
           "claimer_alive", "message_id", "smtp_settings", "status"]

log = logging.getLogger("slurm_io.report")

SACCT_CHUNK = 200  # job ids per `sacct -j`


def _claimer() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claimer_alive(claimed_by: str) -> bool | None:
    """Whether the reporter named `host:pid` still runs: None when it is on another host (or
    is this very process), so that its lease decides."""
    host, _, pid_text = claimed_by.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if pid == os.getpid():
        return None
    return pid_alive(pid)


class Reporter:
    """The reporter of one process; `run_once()` is a pass, `serve()` the daemon loop."""

    def __init__(self, connect: Callable[[], psycopg.Connection], builder: MailBuilder,
                 smtp: SmtpSettings, settings: ReporterSettings, *,
                 source: Callable[[list[int]], Any] | None = None,
                 sweep_source: Callable[[], Any] | None = None) -> None:
        self._link = DatabaseLink(connect)
        self.builder = builder
        self.session = Session(smtp)
        self.settings = settings
        self.source = source or (lambda ids: SacctJobsSource(ids, settings.sacct, timeout=120))
        self.sweep_source = sweep_source or (lambda: SacctSource(settings.sacct, timeout=300))
        self._last_sweep: float | None = None
        self._stop: threading.Event | None = None
        self.ledger = restored.open_ledger(settings)
        self._pruned_at = -float("inf")

    # -- connection ------------------------------------------------------------------------
    @property
    def conn(self) -> psycopg.Connection:
        return self._link()

    def close(self) -> None:
        self.session.close()
        self._link.reset()

    # -- one pass --------------------------------------------------------------------------
    def run_once(self) -> PassResult:
        r = PassResult()
        conn = self.conn
        try:
            self._recover(conn)
            self._ingest(conn, r)
            r.orphans = len(queue.resolve_orphans(conn, lease=self.settings.lease,
                                                  alive=claimer_alive))
            if self._sweep_due():
                self._sweep(conn, r)
            due = queue.due(conn, self.settings.batch)
            conn.commit()
            self._sync(conn, [d.job for d in due if not d.final], r)
            done_until = data_complete_until(conn)
            conn.commit()
            for d in due:
                if self._stop is not None and self._stop.is_set():
                    break  # SIGTERM: between two jobs, never inside one
                try:
                    self._process(conn, d.job, done_until, r)
                except ConnectionLost:
                    raise  # the database went away: end the pass
                except Exception as e:  # one job's bug must not hold up the others
                    log.exception("job %s: unexpected error", d.job)
                    r.problems.append(f"job {d.job}: {type(e).__name__}: {e}")
                    conn.rollback()
                    self.session.close()
        except BaseException:
            with contextlib.suppress(Exception):
                conn.rollback()
            raise
        finally:
            self.session.close()
        return r

    def _recover(self, conn: psycopg.Connection) -> None:
        """Hook records a restored database lacks go back to the spool (notify.restored)."""
        self._pruned_at = restored.recover_hooks(conn, self.settings, self._pruned_at)

    def _ingest(self, conn: psycopg.Connection, r: PassResult) -> None:
        spool = str(self.settings.spool_dir)
        if not hookspool.pending(spool):
            return
        with hookspool.drain_lock(spool, wait=True) as held:
            if held:
                result = hookspool.ingest(conn, spool, source="spool")
                r.ingested, r.bad_spool = len(result.ingested), len(result.bad)
        if r.ingested:
            log.info("ingested %d spooled hook record(s)", r.ingested)

    def _sweep_due(self) -> bool:
        if self.settings.sweep_every <= 0:
            return False
        return (self._last_sweep is None
                or time.monotonic() - self._last_sweep >= self.settings.sweep_every)

    def _sweep(self, conn: psycopg.Connection, r: PassResult) -> None:
        from slurm_io.jobs.sync import sync_jobs

        now = time.time()
        since = now - self.settings.sweep_hours * 3600
        try:
            sync_jobs(conn, self.sweep_source(), since=since, until=None, now=now)
        except SourceError as e:
            r.problems.append(f"sweep: {e}")
            log.warning("sweep: %s", e)
            conn.rollback()
            return
        queued, skipped = queue.sweep(conn, since)
        self._last_sweep = time.monotonic()
        r.swept = len(queued)
        r.skipped += len(skipped)
        if queued or skipped:
            log.info("sweep: queued %d job(s) that got no hook, %d that never ran (skipped)",
                     len(queued), len(skipped))

    def _sync(self, conn: psycopg.Connection, jobs: list[int], r: PassResult) -> None:
        """sacct's current records of `jobs` (whose stored record is not final yet)."""
        raw = raw_ids(conn, jobs)  # the queue holds row keys; sacct knows raw ids
        for i in range(0, len(raw), SACCT_CHUNK):
            chunk = raw[i:i + SACCT_CHUNK]
            source = self.source(chunk)
            try:
                records = fill_uids(source.jobs(None, None))
            except SourceError as e:
                r.problems.append(f"sacct: {e}")
                log.warning("sacct for %d job(s): %s", len(chunk), e)
                return
            wanted = set(chunk)
            counts, refused = upsert_isolated(conn, [x for x in records if x.job in wanted],
                                              source="sacct")
            # a line sacct printed but could not be read, a record the database refused:
            # quarantined (once, though sacct prints it at every pass), the others stored
            keep_refused(conn, list(getattr(source, "refused", [])) + refused, new_only=True)
            r.synced += counts.written

    # -- one job ---------------------------------------------------------------------------
    def _process(self, conn: psycopg.Connection, job: int, done_until: float | None,
                 r: PassResult) -> None:
        s = self.settings
        c = queue.claim(conn, job)
        if c is None:
            conn.rollback()
            return
        if self._mailed_before(conn, c):
            return
        outcome = readiness(c, done_until, s.max_wait)
        if outcome.action != "send":
            self._apply(conn, job, outcome, r)
            return
        note, incomplete = outcome.note, outcome.incomplete
        try:
            with conn.transaction():  # a savepoint: a failing builder keeps the row lock
                self._attribute(conn, job, complete=not incomplete, now=c.now)
                msg = self.builder.build(conn, job)
        except Exception as e:
            self._failed_attempt(conn, c, f"building the mail: {type(e).__name__}: {e}", r)
            return
        if msg is None:
            self._apply(conn, job, Outcome("skip", "no mail for this job by policy (mail "
                                           "builder)"), r, said="no mail by policy")
            return
        try:
            sender, rcpts, data, mid = finish_message(msg, c, incomplete, self.settings)
        except NoRecipient as e:
            self._apply(conn, job, Outcome("fail", str(e)), r)
            return
        except Exception as e:  # a header the email package cannot serialise, ...
            self._failed_attempt(conn, c, f"making the message: {type(e).__name__}: {e}", r)
            return
        try:
            self.session.prepare(sender, rcpts, data)
        except Undelivered as e:
            self._failed_attempt(conn, c, str(e), r)
            return
        # The durable claim, as late as possible: the next step may deliver the mail.
        try:
            queue.mark_sending(conn, job, claimed_by=_claimer(), message_id=mid,
                               recipients=rcpts, incomplete=incomplete)
            conn.commit()
        except BaseException:
            self.session.abort()
            raise
        try:
            reply = self.session.commit()
        except Undelivered as e:  # refused after the whole message: nothing delivered
            self._failed_attempt(conn, c, str(e), r)
            return
        except OutcomeUnknown as e:
            self._remember(c, mid)
            self._record_sent(job, f"delivery unconfirmed: {e}; not sent again")
            r.unconfirmed += 1
            log.error("job %s: %s (Message-ID %s): not sent again", job, e, mid)
            return
        self._remember(c, mid)
        self._record_sent(job, note)
        r.sent += 1
        log.info("job %s: mailed to %s, %s (%s)%s", job, ", ".join(rcpts), mid, reply.strip(),
                 " [data may be incomplete]" if incomplete else "")

    def _mailed_before(self, conn: psycopg.Connection, c: queue.Claimed) -> bool:
        """Mailed before the database was restored: marked `sent`, not mailed again."""
        return restored.mailed_before(conn, self.ledger, c)

    def _remember(self, c: queue.Claimed, mid: str) -> None:
        restored.remember(self.ledger, c, mid)

    def _apply(self, conn: psycopg.Connection, job: int, outcome: Outcome, r: PassResult, *,
               said: str | None = None) -> None:
        """Apply a wait, skip or fail outcome: the queue row, the commit, the count, the log.

        A `fail` here is final (attempts set to the maximum): nothing a retry would change.
        """
        s = self.settings
        if outcome.action == "wait":
            queue.wait(conn, job, outcome.note or "waiting", max(1.0, s.interval))
            conn.commit()
            r.waiting += 1
        elif outcome.action == "skip":
            queue.skip(conn, job, outcome.note or "skipped")
            conn.commit()
            r.skipped += 1
            log.info("job %s: %s", job, said or f"skipped: {outcome.note}")
        elif outcome.action == "fail":
            queue.fail_attempt(conn, job, outcome.note or "failed", attempts=s.max_attempts,
                               max_attempts=s.max_attempts, base=s.retry_base)
            conn.commit()
            r.failed += 1
            log.error("job %s: report failed: %s", job, outcome.note)
        else:
            raise ValueError(f"not an outcome to apply here: {outcome.action}")

    def _attribute(self, conn: psycopg.Connection, job: int, *, complete: bool,
                   now: float) -> None:
        info = job_by_key(conn, job)
        if info is None:
            return
        f = figures(conn, info.window, now=now, resolution=self.settings.resolution)
        if f.revision is None:  # computed now (attribute.figures' rule): stored for the mail
            store_job_io(conn, info.window, f.io, complete)

    def _failed_attempt(self, conn: psycopg.Connection, c: queue.Claimed, error: str,
                        r: PassResult) -> None:
        """Count attempt c.attempts + 1 as failed (whether mark_sending counted it already
        or not: the count is set, not added) and queue the next one, or give up."""
        s = self.settings
        state = queue.fail_attempt(conn, c.job, error, attempts=c.attempts + 1,
                                   max_attempts=s.max_attempts, base=s.retry_base)
        conn.commit()
        if state == "failed":
            r.failed += 1
            log.error("job %s: report failed after %d attempt(s): %s", c.job, c.attempts + 1,
                      error)
        else:
            r.retried += 1
            log.warning("job %s: attempt %d failed (%s); retry in %.0f s", c.job,
                        c.attempts + 1, error, queue.backoff(c.attempts + 1, s.retry_base))

    def _record_sent(self, job: int, note: str | None) -> None:
        """Record `sent`; when the database went away meanwhile, try a new connection once,
        else leave the row `sending` for orphan resolution (it will not be sent again)."""
        for attempt in (1, 2):
            try:
                conn = self.conn
                queue.mark_sent(conn, job, note)
                conn.commit()
                return
            except psycopg.Error as e:
                log.warning("job %s: sent, but recording it failed (%s)%s", job, e,
                            "; retrying" if attempt == 1 else "; left as `sending`")
                self._link.reset()

    # -- the daemon ------------------------------------------------------------------------
    def serve(self, stop: threading.Event, *, on_pass: Callable[[PassResult], None] | None = None
              ) -> None:
        """Passes every `interval` seconds until `stop` is set; a database or Slurm outage is
        logged and waited out, never fatal. `stop` is also checked between two jobs."""
        self._stop = stop
        while not stop.is_set():
            self._run_cycle(on_pass)
            stop.wait(self.settings.interval)
        self._shutdown()

    def _run_cycle(self, on_pass: Callable[[PassResult], None] | None) -> None:
        """One pass; a database or Slurm outage (or a bug) is logged, never fatal."""
        try:
            result = self.run_once()
            if on_pass is not None:
                on_pass(result)
            if any((result.sent, result.failed, result.skipped, result.retried,
                    result.ingested, result.swept, result.unconfirmed)):
                log.info("pass: %s", result.summary())
        except psycopg.Error as e:
            log.warning("database unavailable: %s", e)
            self.close()
        except Exception:
            log.exception("reporter pass failed")
            self.close()

    def _shutdown(self) -> None:
        """Stopped (SIGTERM): the SMTP session and the database connection are closed."""
        self.close()


def status(conn: psycopg.Connection, spool_dir: Path) -> dict[str, Any]:
    """What `jobio report-daemon --status` prints."""
    out = queue.counts(conn)
    files = hookspool.pending(str(spool_dir))
    ages = []
    for f in files:
        with contextlib.suppress(OSError):
            ages.append(time.time() - os.stat(f).st_mtime)
    out["spool_dir"] = str(spool_dir)
    out["spool_files"] = len(files)
    out["spool_oldest_age"] = max(ages) if ages else None
    out["spool_bad"] = len(hookspool.bad_files(str(spool_dir)))
    out["data_complete_until"] = data_complete_until(conn)
    conn.commit()
    return out
