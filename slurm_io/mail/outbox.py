"""Mails written as files instead of sent: `.eml` (the whole message, opens in any mail
client) and `.html` (the HTML part, opens in a browser). Used by `jobio demo`.

The files are named by what the user knows, the job as sacct shows it and its cluster
(`job-<cluster>-<jobid>[-r<run>]`, docs/mail.md "Mails as files"), not by the database's row
key (`job-4294967296`), which nobody outside the database has ever seen."""

from __future__ import annotations

from collections.abc import Iterable
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.mail.builder import MailBuilder, html_part

if TYPE_CHECKING:
    from psycopg import Connection

    from slurm_io.jobs.info import JobInfo

# Characters kept as they are in a file name; every other one is %xx (its UTF-8 bytes, in
# lower-case hex). Lower case only (a case-insensitive filesystem would fold `Lab` onto
# `lab`); `-` separates the parts, so a job id never holds one (a cluster may: the job id
# is found from the right).
_CLUSTER_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._+-")
_JOBID_SAFE = _CLUSTER_SAFE - {"-"}


class Outbox(NamedTuple):
    due: int  # jobs that the policy mails
    written: list[Path]  # the .eml files written (each with its .html beside it)


def _escape(text: str, safe: frozenset[str]) -> str:
    return "".join(c if c in safe else "".join(f"%{b:02x}" for b in c.encode("utf-8"))
                   for c in text)


def outbox_name(info: JobInfo) -> str:
    """The file name (without .eml/.html) of a job's mail: `job-<cluster>-<jobid>`, with
    `-r<run>` after the n-th requeue (docs/jobs.md): `job-lab-8200_2.html`,
    `job-lab-1234-r1.html`. One name per (cluster, job id, run), which the job table keeps
    unique: `%` is escaped like any unsafe character, so two different parts never
    escape to the same text, and the parts are found again from the right (a job id starts
    with a digit, the run with `r`)."""
    name = f"job-{_escape(info.cluster or '', _CLUSTER_SAFE)}-{_escape(info.jobid, _JOBID_SAFE)}"
    return name if not info.run else f"{name}-r{info.run}"


def write_message(msg: EmailMessage, eml: Path | None = None, html: Path | None = None) -> None:
    if eml is not None:
        eml.write_bytes(msg.as_bytes())
    if html is not None:
        html.write_text(html_part(msg), encoding="utf-8")


def write_mails(conn: Connection, builder: MailBuilder, jobs: Iterable[int],
                out: Path, *, limit: int = 20) -> Outbox:
    """Build the mail of each job (row keys) as the reporter would (policy, opt-outs) and
    write the first `limit` into `out` as <name>.eml and <name>.html (outbox_name);
    earlier mail files there are removed. Jobs past the limit are still counted.

    Should two rows ever name the same job (a job id that two raw ids claim), the second
    file gets `-k<row key>` rather than overwrite the first."""
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
            info = builder.job_info(conn, job)
            name = f"job-{job}" if info is None else outbox_name(info)
            if out / f"{name}.eml" in written:
                name = f"{name}-k{job}"
            write_message(msg, out / f"{name}.eml", out / f"{name}.html")
            written.append(out / f"{name}.eml")
    return Outbox(due, written)
