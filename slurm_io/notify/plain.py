"""A plain-text report mail: the fallback MailBuilder when slurm_io.mail is absent, and the
deterministic one the delivery tests use (`SLURM_IO_MAIL_BUILDER=
slurm_io.notify.plain:PlainMailBuilder`).

Recipient rule: `user@[mail] domain` (default: this host's FQDN). Every job with a user gets
a mail; only a job without a user name gets none.
"""

from __future__ import annotations

import socket
from email.message import EmailMessage
from typing import TYPE_CHECKING

from slurm_io.config import Config
from slurm_io.notify.sql import plain_job

if TYPE_CHECKING:
    from psycopg import Connection


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class PlainMailBuilder:
    """MailBuilder (slurm_io.notify.interfaces) with a few lines of text."""

    def __init__(self, config: Config) -> None:
        self.domain = config.mail_domain or socket.getfqdn()
        self.sender = config.mail_from or f"slurm-io@{socket.getfqdn()}"

    def build(self, conn: Connection, job: int) -> EmailMessage | None:
        row = plain_job(conn, job)
        if row is None or not row.user:
            return None
        jobid, user, name, state, exit_code, nodes, start, end, totals, complete = row
        read, written = int(totals.get("read_bytes", 0)), int(totals.get("write_bytes", 0))
        msg = EmailMessage()
        msg["From"] = self.sender
        msg["To"] = f"{user}@{self.domain}"
        msg["Subject"] = (f"Slurm job {jobid} ({name or 'no name'}) {state or 'ended'}: "
                          f"{human_bytes(read)} read, {human_bytes(written)} written")
        msg["Auto-Submitted"] = "auto-generated"
        lines = [
            f"Job {jobid} ({name or 'no name'}) of {user}: {state or 'unknown state'}, "
            f"exit code {exit_code or '?'}",
            f"Nodes: {', '.join(nodes or ()) or '-'}",
            f"Run time: {_duration(start, end)}",
            "",
            f"Read:    {human_bytes(read)}",
            f"Written: {human_bytes(written)}",
            f"Opens:   {int(totals.get('open', 0))}",
        ]
        if not complete:
            lines += ["", "Not every Lustre server had been read after the job ended when "
                          "this mail was made: the figures may be incomplete."]
        lines += ["", f"Details: jobio show {jobid}"]
        msg.set_content("\n".join(lines) + "\n")
        return msg


def _duration(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "unknown"
    s = max(0, int(end - start))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
