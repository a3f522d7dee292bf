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
   reported anyway, marked incomplete; skip jobs that never ran; attribute the job and
   store `job_io`; build the mail (MailBuilder); send it.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from email.message import Message
from email.utils import formatdate, getaddresses, parseaddr
from pathlib import Path
from typing import Any

import psycopg

from slurm_io.attribute.sql import (
    attribute_job,
    data_complete_until,
    job_by_key,
    raw_ids,
    store_job_io,
)
from slurm_io.config import Config
from slurm_io.fsutil import pid_alive
from slurm_io.jobs.source import DEFAULT_SACCT, SacctSource, SourceError
from slurm_io.jobs.store import upsert_isolated
from slurm_io.jobs.sync import keep_refused
from slurm_io.jobs.uids import fill_uids
from slurm_io.notify import hookspool, queue
from slurm_io.notify.interfaces import MailBuilder
from slurm_io.notify.smtp import OutcomeUnknown, Session, SmtpSettings, Undelivered
from slurm_io.store.db import DatabaseLink

log = logging.getLogger("slurm_io.report")

SACCT_CHUNK = 200  # job ids per `sacct -j`


class NoRecipient(ValueError):
    """The MailBuilder's message names nobody: a bug, not worth retrying."""


class SacctJobsSource(SacctSource):
    """`sacct ... -j IDS`: the records of given jobs, whenever they ran."""

    def __init__(self, jobs: Iterable[int], sacct: str = DEFAULT_SACCT, **kw: Any) -> None:
        super().__init__(sacct, **kw)
        self.job_ids = list(jobs)

    def command(self, since: float | None, until: float | None) -> list[str]:
        return [*super().command(since, until), "-j", ",".join(map(str, self.job_ids))]

    def text(self, since: float | None, until: float | None) -> str:
        return self.slurm.sacct_jobs(self.window(since, until), self.job_ids,
                                     timeout=self.timeout)


@dataclass(frozen=True)
class ReporterSettings:
    spool_dir: Path = Path("/var/spool/slurm-io/hook")
    interval: float = 30.0
    max_wait: float = 1800.0
    sweep_every: float = 900.0
    sweep_hours: float = 6.0
    max_attempts: int = 8
    retry_base: float = 60.0
    resolution: float = 120.0  # the collectors' interval (attribution)
    sender: str = "slurm-io@localhost"
    message_id_domain: str = "localhost"
    sacct: str = DEFAULT_SACCT
    batch: int = 500  # due rows looked at per pass
    lease: float = 180.0  # a `sending` row older than this, of a reporter elsewhere, is orphaned

    @classmethod
    def from_config(cls, cfg: Config, **overrides: Any) -> ReporterSettings:
        sender = cfg.mail_from or f"slurm-io@{socket.getfqdn()}"
        domain = parseaddr(sender)[1].rpartition("@")[2] or socket.getfqdn()
        s = cls(spool_dir=cfg.hook_spool_dir, interval=cfg.report_interval,
                max_wait=cfg.report_max_wait, sweep_every=cfg.report_sweep_every,
                sweep_hours=cfg.report_sweep_hours, max_attempts=cfg.report_max_attempts,
                retry_base=cfg.report_retry_base, resolution=cfg.interval, sender=sender,
                message_id_domain=domain, lease=2 * cfg.mail_timeout + 120,
                sacct=cfg.sacct or DEFAULT_SACCT)
        return replace(s, **{k: v for k, v in overrides.items() if v is not None})


def smtp_settings(cfg: Config) -> SmtpSettings:
    password = None
    if cfg.mail_password_file is not None:
        password = cfg.mail_password_file.read_text().strip()
    return SmtpSettings(cfg.mail_host, cfg.mail_port, cfg.mail_starttls, cfg.mail_ssl,
                        cfg.mail_user, password, cfg.mail_timeout)


@dataclass
class PassResult:
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


def message_id(job: int, submit: float | None, domain: str) -> str:
    """Deterministic per job: the same job always gets the same Message-ID (the submit time
    tells apart jobs of the same id after a Slurm reset)."""
    return f"<jobio-{job}{'' if submit is None else f'.{int(submit)}'}@{domain}>"


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
                except (psycopg.OperationalError, psycopg.InterfaceError):
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
    def _readiness(self, c: queue.Claimed, done_until: float | None
                   ) -> tuple[str, str | None, bool]:
        """("wait" | "skip" | "send", note, incomplete) for a claimed row."""
        s = self.settings
        if not c.has_job:
            if c.now - c.queued_at < s.max_wait:
                return "wait", "waiting for the job's record", False
            return "fail", "no job record after report.max_wait", True
        incomplete = False
        if not c.final:
            if c.now - c.queued_at < s.max_wait:
                return "wait", "waiting for sacct's final record of the job", False
            incomplete = True
        elif c.never_ran:
            return "skip", "never ran (cancelled while pending): no report", False
        end = c.end if c.end is not None else c.queued_at
        if done_until is None or done_until < end:
            if c.now - end < s.max_wait:
                last = "never" if done_until is None else time.strftime(
                    "%Y-%m-%dT%H:%M:%S", time.localtime(done_until))
                return ("wait", f"waiting for every collector to read past the job's end "
                        f"(all read until {last})", False)
            incomplete = True
        return "send", ("sent before all data was in (report.max_wait)" if incomplete
                        else None), incomplete

    def _process(self, conn: psycopg.Connection, job: int, done_until: float | None,
                 r: PassResult) -> None:
        s = self.settings
        c = queue.claim(conn, job)
        if c is None:
            conn.rollback()
            return
        action, note, incomplete = self._readiness(c, done_until)
        if action == "wait":
            queue.wait(conn, job, note or "waiting", max(1.0, s.interval))
            conn.commit()
            r.waiting += 1
            return
        if action == "skip":
            queue.skip(conn, job, note or "skipped")
            conn.commit()
            r.skipped += 1
            log.info("job %s: skipped: %s", job, note)
            return
        if action == "fail":
            queue.fail_attempt(conn, job, note or "failed", attempts=s.max_attempts,
                               max_attempts=s.max_attempts, base=s.retry_base)
            conn.commit()
            r.failed += 1
            log.error("job %s: report failed: %s", job, note)
            return
        try:
            with conn.transaction():  # a savepoint: a failing builder keeps the row lock
                self._attribute(conn, job, complete=not incomplete, now=c.now)
                msg = self.builder.build(conn, job)
        except Exception as e:
            self._failed_attempt(conn, c, f"building the mail: {type(e).__name__}: {e}", r)
            return
        if msg is None:
            queue.skip(conn, job, "no mail for this job by policy (mail builder)")
            conn.commit()
            r.skipped += 1
            log.info("job %s: no mail by policy", job)
            return
        try:
            sender, rcpts, data, mid = self._finish_message(msg, c, incomplete)
        except NoRecipient as e:
            queue.fail_attempt(conn, job, str(e), attempts=s.max_attempts,
                               max_attempts=s.max_attempts, base=s.retry_base)
            conn.commit()
            r.failed += 1
            log.error("job %s: report failed: %s", job, e)
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
            self._record_sent(job, f"delivery unconfirmed: {e}; not sent again")
            r.unconfirmed += 1
            log.error("job %s: %s (Message-ID %s): not sent again", job, e, mid)
            return
        self._record_sent(job, note)
        r.sent += 1
        log.info("job %s: mailed to %s, %s (%s)%s", job, ", ".join(rcpts), mid, reply.strip(),
                 " [data may be incomplete]" if incomplete else "")

    def _attribute(self, conn: psycopg.Connection, job: int, *, complete: bool,
                   now: float) -> None:
        info = job_by_key(conn, job)
        if info is None:
            return
        io = attribute_job(conn, info.window, now=now, resolution=self.settings.resolution)
        store_job_io(conn, info.window, io, complete)

    def _finish_message(self, msg: Message, c: queue.Claimed, incomplete: bool
                        ) -> tuple[str, list[str], bytes, str]:
        """Headers the reporter owns, the envelope and the bytes to send."""
        s = self.settings
        fields = [v for h in ("To", "Cc", "Bcc") for v in (msg.get_all(h) or [])]
        rcpts = list(dict.fromkeys(a for _, a in getaddresses(fields) if a))
        if not rcpts:
            raise NoRecipient("the mail builder gave a message without recipients")
        del msg["Bcc"]
        mid = message_id(c.job, c.submit, s.message_id_domain)
        del msg["Message-ID"]
        msg["Message-ID"] = mid
        if msg["Date"] is None:
            msg["Date"] = formatdate(localtime=True)
        if msg["From"] is None:
            msg["From"] = s.sender
        del msg["X-Jobio-Job"]
        msg["X-Jobio-Job"] = str(c.raw if c.raw is not None else c.job)  # what Slurm calls it
        if c.cluster:
            msg["X-Jobio-Cluster"] = c.cluster
        if incomplete:
            msg["X-Jobio-Data-Complete"] = "no"
        data = msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))
        sender = parseaddr(s.sender)[1] or parseaddr(str(msg["From"]))[1]
        return sender, rcpts, data, mid

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
            stop.wait(self.settings.interval)
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
