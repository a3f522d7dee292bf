"""Mails written as files instead of sent: `.eml` (the whole message, opens in any mail
client) and `.html` (the HTML part, opens in a browser). Used by `jobio demo`."""

from __future__ import annotations

from collections.abc import Iterable
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.mail.builder import MailBuilder, html_part

if TYPE_CHECKING:
    from psycopg import Connection


class Outbox(NamedTuple):
    due: int  # jobs that the policy mails
    written: list[Path]  # the .eml files written (each with its .html beside it)


def write_message(msg: EmailMessage, eml: Path | None = None, html: Path | None = None) -> None:
    if eml is not None:
        eml.write_bytes(msg.as_bytes())
    if html is not None:
        html.write_text(html_part(msg), encoding="utf-8")


def write_mails(conn: Connection, builder: MailBuilder, jobs: Iterable[int],
                out: Path, *, limit: int = 20) -> Outbox:
    """Build the mail of each job as the reporter would (policy, opt-outs) and write the first
    `limit` into `out` as job-<id>.eml and job-<id>.html; earlier mail files there are
    removed. Jobs past the limit are still counted."""
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("job-*.eml"), *out.glob("job-*.html")]:
        old.unlink()
    due = 0
    written: list[Path] = []
    for job in jobs:
        msg = builder.build(conn, job)
        if msg is None:
            continue
        due += 1
        if len(written) < limit:
            name = f"job-{job}"
            write_message(msg, out / f"{name}.eml", out / f"{name}.html")
            written.append(out / f"{name}.eml")
    return Outbox(due, written)
