"""One pass of `jobio alerts`: find, decide, write and send (the imperative shell).

Per job with findings whose (job, kind) was never alerted: the user's address by the report
mails' rule (slurm_io.mail.recipients), a copy to `alerts.admin`, the text from the site's or
the packaged `alert.txt.j2` (templates/; `[mail] template_dir` overrides it, as for the
reports). Sending uses the reporter's SMTP seam (slurm_io.notify.smtp): the transaction is
prepared up to the final ".", the log rows are committed as `sending`, then the "." is sent
and the rows become `sent` -- a crash in between never sends the same alert twice. A refusal
or an unreachable server leaves `failed` rows, and the next pass tries again.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import TYPE_CHECKING, Any

from slurm_io.alerts import rules as R
from slurm_io.alerts import sql as q
from slurm_io.config import Config
from slurm_io.mail import view
from slurm_io.mail.builder import MailSettings, template_env
from slurm_io.mail.recipients import address_for, valid_address
from slurm_io.notify.reporter import smtp_settings
from slurm_io.notify.smtp import OutcomeUnknown, Session, Undelivered
from slurm_io.store import problems
from slurm_io.store.errors import DatabaseError, UniqueViolation
from slurm_io.text import header

if TYPE_CHECKING:
    from psycopg import Connection

log = logging.getLogger("slurm_io.alerts")
TEMPLATE = "alert.txt.j2"


@dataclass
class Outcome:
    job: str
    user: str | None
    kinds: list[str]
    state: str  # sent, capped, failed, dry-run, no-address
    to: list[str] = field(default_factory=list)
    message: EmailMessage | None = None
    error: str | None = None


def rules_of(cfg: Config) -> R.Rules:
    return R.Rules(window=cfg.alerts_window, interval=cfg.interval, risk=cfg.alerts_risk,
                   metadata_ops=cfg.alerts_metadata_ops, small_writes=cfg.alerts_small_writes,
                   small_write_size=cfg.alerts_small_write_size,
                   sustained=cfg.alerts_sustained, a=cfg.lassi_a)


def render(cfg: Config, w: R.JobWindow, findings: list[R.Finding], rules: R.Rules, *,
           to: list[str], at: float) -> EmailMessage:
    """The alert mail of one job."""
    env = template_env(cfg.mail_template_dir)
    link = cfg.alerts_link.format(jobid=w.jobid, job=w.job, user=w.user or "")
    text = env.get_template(TEMPLATE).render(
        job=w, findings=findings, link=link,
        advice=R.advice(w, findings, rules, MailSettings.from_config(cfg).thresholds),
        window=R.span(rules.window), at=time.strftime(
            "%Y-%m-%d %H:%M UTC", time.gmtime(at)),
        read=view.fmt_size(w.totals.get("read_bytes", 0)),
        written=view.fmt_size(w.totals.get("write_bytes", 0)),
        admin=cfg.alerts_admin)
    sender = header(cfg.mail_from or f"slurm-io@{socket.getfqdn()}", 998)
    msg = EmailMessage()
    # every header through the mail header rule (slurm_io.text.header): the job name is the
    # user's text, and one raw newline in it used to stop every other user's alert
    msg["From"] = sender
    msg["To"] = header(", ".join(to), 998)
    if cfg.alerts_admin and valid_address(cfg.alerts_admin):
        msg["Cc"] = header(cfg.alerts_admin, 998)
    name = f" ({header(w.name, 60)})" if w.name and header(w.name, 60) else ""
    msg["Subject"] = header(f"Your running job {header(w.jobid, 40)}{name} is straining the "
                            "file system: " + "; ".join(f.kind.replace("_", " ")
                                                        for f in findings), 400)
    msg["Date"] = formatdate(localtime=False)
    domain = header(sender.rpartition("@")[2].strip(">"), 253).replace(" ", "") or "localhost"
    msg["Message-ID"] = make_msgid(f"jobio-alert-{int(w.job)}", domain=domain)
    msg["Auto-Submitted"] = "auto-generated"
    msg["X-Jobio-Job"] = str(int(w.job))
    msg["X-Jobio-Alert"] = header(",".join(f.kind for f in findings))
    msg.set_content(text)
    return msg


def check(conn: Connection, cfg: Config, *, at: float | None = None,
          dry_run: bool = False, session: Session | None = None) -> list[Outcome]:
    """Check the running jobs at `at` (default now) and mail the new findings."""
    at = time.time() if at is None else at
    rules = rules_of(cfg)
    wins = q.running_windows(conn, at - rules.window, at)
    base = q.baseline(conn, at, cfg.lassi_baseline_days)
    done = q.already(conn, [w.job for w in wins])
    conn.commit()
    day_start = at - at % 86400
    out: list[Outcome] = []
    own = session is None and not dry_run
    if own:
        session = Session(smtp_settings(cfg))
    try:
        for w in wins:
            findings = [f for f in R.check(w, rules, base) if (w.job, f.kind) not in done]
            if findings:
                out.append(_isolated(conn, cfg, w, findings, rules, at, day_start, dry_run,
                                     session))
    finally:
        if own and session is not None:
            session.close()
    return out


def _isolated(conn: Connection, cfg: Config, w: R.JobWindow,
              findings: list[R.Finding], rules: R.Rules, at: float, day_start: float,
              dry_run: bool, session: Session | None) -> Outcome:
    """One job's alert, whatever goes wrong with it: an error of this job (its text, a site
    template, a row the database refuses) is logged as a `failed` attempt (the next pass tries
    again), recorded once in the quarantine (`jobio problems`, source `alerts`) and never
    stops the alerts of the other jobs of the pass."""
    try:
        return _alert(conn, cfg, w, findings, rules, at, day_start, dry_run, session)
    except Exception as e:  # per-job isolation is the point
        reason = header(f"{type(e).__name__}: {e}", 1000)
        conn.rollback()
        if session is not None:
            session.abort()
        names = [f.kind for f in findings]
        if not dry_run:
            _record_problem(conn, w, findings, reason)
        return Outcome(w.jobid, w.user, names, "problem", error=reason)


def _record_problem(conn: Connection, w: R.JobWindow, findings: list[R.Finding],
                    reason: str) -> None:
    """A `failed` row per kind (shown by --list, retried next pass) and, the first time this
    job fails for this reason, a row in the quarantine: a job that fails on every pass is one
    problem, not one per pass."""
    try:
        first = not q.failed_before(conn, w.job, reason)
        q.log(conn, w, [(f.kind, {"summary": f.summary}) for f in findings], "failed",
              recipients=[], message_id=None, error=reason)
        if first:
            problems.record(conn, [problems.Problem(
                "alerts", reason, f"job {w.jobid}",
                f"job {w.jobid} user {w.user} name {w.name!r}",
                lost=f"the alert of job {w.jobid} ({', '.join(f.kind for f in findings)})")])
        conn.commit()
    except DatabaseError as e:  # the database itself refused: the log line is what is left
        conn.rollback()
        log.error("alert for job %s: could not record the problem: %s", header(w.jobid),
                  header(str(e)))


def _alert(conn: Connection, cfg: Config, w: R.JobWindow, findings: list[R.Finding],
           rules: R.Rules, at: float, day_start: float, dry_run: bool,
           session: Session | None) -> Outcome:
    kinds = [(f.kind, {"summary": f.summary, **f.figures}) for f in findings]
    names = [f.kind for f in findings]
    to = address_for(w.user, None, domain=cfg.mail_domain, address=cfg.mail_address, uid=w.uid)
    if not to:
        return Outcome(w.jobid, w.user, names, "no-address")
    msg = render(cfg, w, findings, rules, to=to, at=at)
    if dry_run:
        return Outcome(w.jobid, w.user, names, "dry-run", to, msg)
    if w.user and q.mails_today(conn, w.user, day_start) >= cfg.alerts_daily_cap:
        q.log(conn, w, kinds, "capped", recipients=to, message_id=None)
        conn.commit()
        return Outcome(w.jobid, w.user, names, "capped", to, msg)
    rcpts = to + ([cfg.alerts_admin] if cfg.alerts_admin and valid_address(cfg.alerts_admin)
                  else [])
    assert session is not None
    mid = str(msg["Message-ID"])
    try:
        session.prepare(str(msg["From"]), rcpts, msg.as_bytes())
    except Undelivered as e:
        q.log(conn, w, kinds, "failed", recipients=rcpts, message_id=mid, error=str(e))
        conn.commit()
        return Outcome(w.jobid, w.user, names, "failed", rcpts, msg, str(e))
    try:
        q.log(conn, w, kinds, "sending", recipients=rcpts, message_id=mid)
        conn.commit()
    except UniqueViolation:  # another pass got there first
        conn.rollback()
        session.abort()
        return Outcome(w.jobid, w.user, names, "already", rcpts, msg)
    try:
        session.commit()
    except Undelivered as e:
        q.mark(conn, mid, "failed", str(e))
        conn.commit()
        return Outcome(w.jobid, w.user, names, "failed", rcpts, msg, str(e))
    except OutcomeUnknown as e:  # maybe delivered: stays `sending`, never again
        log.warning("alert for job %s: %s", w.jobid, e)
        return Outcome(w.jobid, w.user, names, "sending", rcpts, msg, str(e))
    q.mark(conn, mid, "sent")
    conn.commit()
    return Outcome(w.jobid, w.user, names, "sent", rcpts, msg)


def listing_rows(conn: Connection, since: float) -> list[dict[str, Any]]:
    return [{"created": created, "jobid": jobid, "user": user, "kind": kind, "state": state,
             "recipients": list(rcpts or ()), "error": error,
             "summary": (figures or {}).get("summary"), "latency": latency}
            for created, jobid, user, kind, state, rcpts, error, figures, latency
            in q.listing(conn, since)]
