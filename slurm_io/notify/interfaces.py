"""What the reporter needs from the mail content: a `MailBuilder`.

The content (templates, charts, advice, recipients, users' opt-outs) lives in
`slurm_io.mail`; the delivery machinery (hook, queue, readiness, SMTP, exactly-once) in
`slurm_io.notify`. They meet here, so that either side can change without the other.

Contract of `MailBuilder.build(conn, job)`, called by the reporter once per job:

- when it is called, the job's record is final in sacct (or `report.max_wait` has passed)
  and its attributed I/O is stored in `job_io` with `complete` telling whether every
  collector had read past the job's end (False: the mail should say the figures may be
  incomplete); the reporter also adds the header `X-Jobio-Data-Complete: no` then;
- it runs inside the reporter's transaction, which holds the queue row's lock: read what you
  need, write nothing that must survive, never commit or roll back;
- it returns the whole message with its recipients in To (and/or Cc, Bcc), or None when no
  mail is due by policy (site policy, the user's opt-out): the row becomes `skipped`;
- an exception counts as a failed attempt (retried with back-off, then `failed`);
- the reporter sets Message-ID (deterministic per job, the key of exactly-once), adds Date
  and From when missing, the header `X-Jobio-Job`, and removes Bcc before sending.

Which builder: `$SLURM_IO_MAIL_BUILDER` (`module:attribute`, for tests and site
overrides), else `slurm_io.mail.builder.MailBuilder` when it is importable, else the plain
fallback `slurm_io.notify.plain.PlainMailBuilder`. The attribute is called with the
Config (a class taking `config` as its first argument, or a factory).
"""

from __future__ import annotations

import importlib
import logging
import os
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from psycopg import Connection

    from slurm_io.config import Config

log = logging.getLogger(__name__)

BUILDER_ENV = "SLURM_IO_MAIL_BUILDER"
SITE_BUILDER = "slurm_io.mail.builder:MailBuilder"
FALLBACK_BUILDER = "slurm_io.notify.plain:PlainMailBuilder"


@runtime_checkable
class MailBuilder(Protocol):
    """Makes the report mail of one job (see the module docstring for the contract)."""

    def build(self, conn: Connection, job: int) -> EmailMessage | None:
        """The message for job `job` (JobIDRaw), or None: no mail for this job by policy."""
        ...


def _resolve(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"{spec!r}: want module:attribute")
    return getattr(importlib.import_module(module), attr)


def load_builder(cfg: Config, spec: str | None = None) -> MailBuilder:
    """The MailBuilder to use (see the module docstring for the order)."""
    spec = spec or os.environ.get(BUILDER_ENV) or None
    if spec is None:
        try:
            factory = _resolve(SITE_BUILDER)
        except ModuleNotFoundError as e:
            # only "slurm_io.mail is not there": a broken import inside it must show
            if e.name not in ("slurm_io.mail", "slurm_io.mail.builder"):
                raise
            log.warning("slurm_io.mail is not installed: plain report mails")
            factory = _resolve(FALLBACK_BUILDER)
    else:
        factory = _resolve(spec)
    builder = factory(cfg)
    if not isinstance(builder, MailBuilder):
        raise TypeError(f"{factory!r} made {builder!r}, which has no build(conn, job)")
    return builder
