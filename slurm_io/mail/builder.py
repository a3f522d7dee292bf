"""The per-job I/O mail as an `email.message.EmailMessage` (multipart/alternative).

`MailBuilder(config).build(conn, job)` is what the mail reporter calls (the MailBuilder
protocol of slurm_io/notify/interfaces.py): the message, or None when the site policy or the
user's opt-out says no mail. `render` makes the message whatever the policy (`jobio report`).

The reporter's contract (slurm_io/notify/interfaces.py): build() runs inside its
transaction, so it only reads; it leaves Message-ID to the reporter.

Templates: `job_report.txt.j2` (text part) and `job_report.html.j2` (HTML part), looked up in
`[mail] template_dir` first, then in the project's `templates/`, so a site overrides one by
dropping a file of the same name there. They get `v` (slurm_io.mail.view.JobView), `mail`
(to, reason, sender) and `report` (the JSON form of the report.jobreport.JobReport).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from slurm_io.config import Config, ConfigError
from slurm_io.jobs.info import JobInfo
from slurm_io.jobs.store import job_by_key
from slurm_io.mail import preferences
from slurm_io.mail.recipients import (
    Decision,
    SlurmMail,
    SlurmMailLookup,
    address_for,
    apply_rule,
    decide,
)
from slurm_io.mail.view import JobView, Thresholds, build_view
from slurm_io.paths import templates_dir
from slurm_io.report.figures import figures as build_report
from slurm_io.report.jobreport import JobReport
from slurm_io.slurm import Slurm

if TYPE_CHECKING:  # the connection is only passed on
    import psycopg

TEXT_TEMPLATE = "job_report.txt.j2"
HTML_TEMPLATE = "job_report.html.j2"


@dataclass(frozen=True)
class MailSettings:
    """The `[mail]` part of the configuration."""

    policy: str = "above_size"
    min_bytes: int = 1 << 30
    domain: str | None = None
    address: str | None = None
    sender: str | None = None
    template_dir: Path | None = None
    slurm_lookup: bool = True
    thresholds: Thresholds = field(default_factory=Thresholds)
    resolution: float = 120.0

    @classmethod
    def from_config(cls, cfg: Config) -> MailSettings:
        s = cls(
            policy=cfg.mail_policy, min_bytes=cfg.mail_min_bytes, domain=cfg.mail_domain,
            address=cfg.mail_address, sender=cfg.mail_from,
            template_dir=cfg.mail_template_dir, slurm_lookup=cfg.mail_slurm_lookup,
            thresholds=Thresholds(
                kb_ops=cfg.mail_advice_kb_ops, small_share=cfg.mail_advice_small_share,
                min_requests=cfg.mail_advice_min_requests,
                metadata_per_node_hour=cfg.mail_advice_metadata_per_node_hour,
                min_metadata_ops=cfg.mail_advice_min_metadata_ops),
            resolution=cfg.interval)
        for key, fmt in (("mail.address", s.address), ("mail.domain", s.domain)):
            try:
                apply_rule("user", **{key.split(".")[1]: fmt}, uid=1000)
            except (KeyError, IndexError, ValueError) as e:
                raise ConfigError(f"{key} = {fmt!r}: only {{user}} and {{uid}} may be used "
                                  f"({e})") from e
        if s.template_dir is not None and not s.template_dir.is_dir():
            raise ConfigError(f"mail.template_dir {s.template_dir} is not a directory")
        return s

    @property
    def from_address(self) -> str:
        return self.sender or f"slurm-io@{socket.gethostname()}"


def template_env(template_dir: Path | None = None) -> jinja2.Environment:
    """Site templates first (`template_dir`), then the packaged ones; HTML autoescaped."""
    loaders: list[jinja2.BaseLoader] = []
    if template_dir is not None:
        loaders.append(jinja2.FileSystemLoader(str(template_dir)))
    loaders.append(jinja2.FileSystemLoader(str(templates_dir())))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"),
                                            default_for_string=False, default=False),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)
    return env


class MailBuilder:
    """Builds the I/O mail of a job; see the module docstring."""

    def __init__(self, config: Config, *,
                 lookup: Callable[[int], SlurmMail | None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = MailSettings.from_config(config)
        if lookup is None:
            lookup = (SlurmMailLookup(slurm=Slurm.from_config(config, timeout=15.0))
                      if self.settings.slurm_lookup else (lambda job: None))
        self.lookup = lookup
        self.clock = clock
        self.env = template_env(self.settings.template_dir)

    # -- the protocol ------------------------------------------------------------------------
    def build(self, conn: psycopg.Connection, job: int) -> EmailMessage | None:
        """The mail for job row `job` (the row key, as report_queue holds it; sql/0020), or
        None when no mail is due."""
        s = self.settings
        if s.policy == "off":
            return None
        info = self.job_info(conn, job)
        if info is None:
            return None
        if preferences.enabled(conn, info.uid) is False:
            return None
        report = build_report(conn, info, now=self.clock(), resolution=s.resolution)
        decision = self.decide(conn, info, report)
        if not decision.send:
            return None
        return self.message(report, to=decision.to, reason=decision.reason)

    # -- parts -------------------------------------------------------------------------------
    @staticmethod
    def job_info(conn: psycopg.Connection, job: int) -> JobInfo | None:
        return job_by_key(conn, int(job))

    def decide(self, conn: psycopg.Connection, info: JobInfo, report: JobReport) -> Decision:
        s = self.settings
        t = report.totals or {}
        total = int(t.get("read_bytes", 0)) + int(t.get("write_bytes", 0))
        small = s.policy == "above_size" and total < s.min_bytes
        slurm = None if s.policy == "off" or small else self.lookup(info.raw_id)
        return decide(s.policy, user=info.user, slurm=slurm, total_bytes=total,
                      min_bytes=s.min_bytes, enabled=preferences.enabled(conn, info.uid),
                      to=address_for(info.user, slurm, domain=s.domain, address=s.address,
                                     uid=info.uid))

    def render(self, conn: psycopg.Connection, info: JobInfo) -> EmailMessage:
        """The mail of a job whatever the policy (for `jobio report`): addressed by the
        site's rule, without asking Slurm."""
        report = build_report(conn, info, now=self.clock(),
                              resolution=self.settings.resolution)
        s = self.settings
        to = address_for(info.user, None, domain=s.domain, address=s.address, uid=info.uid)
        return self.message(report, to=to, reason=None)

    def view(self, report: JobReport) -> JobView:
        return build_view(report, self.settings.thresholds,
                          resolution=self.settings.resolution)

    def render_parts(self, report: JobReport, *,
                     to: tuple[str, ...] | list[str] = (),
                     reason: str | None = None) -> tuple[str, str, JobView]:
        """(text part, HTML part, view) of a job report (the templates' `report` is its
        JSON form, made here at the templates' edge)."""
        v = self.view(report)
        ctx = {"v": v, "report": report.as_json(),
               "mail": {"to": list(to), "reason": reason, "sender": self.settings.from_address,
                        "policy": self.settings.policy}}
        text = self.env.get_template(TEXT_TEMPLATE).render(ctx)
        html = self.env.get_template(HTML_TEMPLATE).render(ctx)
        return text, html, v

    def message(self, report: JobReport, *, to: tuple[str, ...] | list[str] = (),
                reason: str | None = None) -> EmailMessage:
        text, html, v = self.render_parts(report, to=to, reason=reason)
        sender = self.settings.from_address
        msg = EmailMessage()
        msg["Subject"] = v.subject
        msg["From"] = sender
        if to:
            msg["To"] = ", ".join(to)
        msg["Date"] = formatdate(self.clock(), localtime=True)
        msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies
        # Message-ID is the reporter's (deterministic per job: its exactly-once key)
        msg.set_content(text, subtype="plain", charset="utf-8")
        msg.add_alternative(html, subtype="html", charset="utf-8")
        return msg


def html_part(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("html",))
    assert part is not None
    return part.get_content()  # type: ignore[no-any-return]


def text_part(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain",))
    assert part is not None
    return part.get_content()  # type: ignore[no-any-return]
