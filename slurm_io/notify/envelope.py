"""What the reporter adds to the message a MailBuilder gives it, and the envelope it sends.

Apart from slurm_io.notify.reporter (the queue and the daemon) because it is the part a
site's builder meets: which headers the reporter owns and overwrites, how the Message-ID is
made (the same for a job on every attempt, so a resent report is recognised), and who the
mail goes to (every To/Cc/Bcc address; Bcc itself never leaves). Pure.
"""

from __future__ import annotations

from email.message import Message
from email.utils import formatdate, getaddresses, parseaddr

from slurm_io.notify.queue import Claimed
from slurm_io.notify.reporter_settings import ReporterSettings


class NoRecipient(ValueError):
    """The MailBuilder's message names nobody: a bug, not worth retrying."""


def message_id(job: int, submit: float | None, domain: str) -> str:
    """Deterministic per job: the same job always gets the same Message-ID (the submit time
    tells apart jobs of the same id after a Slurm reset)."""
    return f"<jobio-{job}{'' if submit is None else f'.{int(submit)}'}@{domain}>"


def finish_message(msg: Message, c: Claimed, incomplete: bool, s: ReporterSettings
                   ) -> tuple[str, list[str], bytes, str]:
    """Headers the reporter owns (Message-ID, X-Jobio-*; Date and From where the builder
    set none; no Bcc), the envelope sender and recipients, and the bytes to send."""
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
