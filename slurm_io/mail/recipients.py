"""Who gets a job's I/O mail. Pure, except `SlurmMailLookup`, which asks Slurm.

The address: the job's own `--mail-user` when Slurm still knows it (`scontrol show job -o`
while the job is in slurmctld's memory, MinJobAge after its end; or sacct's MailUser/MailType
fields on Slurm versions that have them), else the site's rule: `[mail] address` (a format
such as "{user}@example.org") or `[mail] domain` ("example.org" -> user@example.org), else
the bare user name, which the local MTA delivers (Slurm's own default).

Whether: the site policy (`[mail] policy`), then the user's `jobio mail off` opt-out:
- `all`: every job with a user;
- `mail_type_end`: jobs that asked for --mail-type=END (or ALL, which includes it): the
  I/O report rides along with the mail the user asked for; a job Slurm no longer knows (so
  its MailType is unknown) gets none;
- `above_size`: jobs whose read + written bytes reach `[mail] min_bytes`;
- `off`: none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from slurm_io.slurm import Slurm

POLICIES = ("all", "mail_type_end", "above_size", "off")
DEFAULT_POLICY = "above_size"
DEFAULT_MIN_BYTES = 1 << 30

# one address or user name: no spaces, quotes, brackets or commas (header safety)
_ADDRESS = re.compile(r"^[^\s@,;:<>()\[\]\"\\]+(@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*)?$")
# scontrol -o prints MailUser/MailType last; a job name or comment may contain the same text
# earlier on the line, so the last occurrence is the real one.
_SCONTROL_FIELD = re.compile(r"(?:^|\s)(MailUser|MailType|JobId|UserId)=(\S*)")


@dataclass(frozen=True)
class SlurmMail:
    """A job's mail request as Slurm reports it."""

    user: str | None  # MailUser: an address or a user name; None when not set
    types: frozenset[str]  # MailType tokens (END, FAIL, ...); empty: no mail asked for
    source: str  # scontrol, sacct

    @property
    def wants_end(self) -> bool:
        return bool(self.types & {"END", "ALL"})


def parse_scontrol(text: str) -> SlurmMail | None:
    """`scontrol show job -o JOB` output -> its mail request (None: no job record).

    Slurm 22.05 prints `MailUser=alice@example.org MailType=END,FAIL` at the end of the line
    only when the job asked for mail, and `MailUser=` is the user name when --mail-user was
    not given. A job array's line per task: the first line is taken.
    """
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    found: dict[str, str] = {}
    for m in _SCONTROL_FIELD.finditer(line):
        found[m.group(1)] = m.group(2)
    if "JobId" not in found:
        return None
    return SlurmMail(_mail_user(found.get("MailUser")), _types(found.get("MailType")),
                     "scontrol")


def parse_sacct(text: str) -> SlurmMail | None:
    """`sacct -X -n -P -o JobIDRaw,MailUser,MailType -j JOB` output (Slurm versions whose
    sacct has these fields) -> the mail request, None when there is no line."""
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 3 and parts[0].strip():
            return SlurmMail(_mail_user(parts[1]), _types(parts[2]), "sacct")
    return None


def _mail_user(value: str | None) -> str | None:
    v = (value or "").strip()
    return None if v in ("", "(null)", "None", "N/A") else v


def _types(value: str | None) -> frozenset[str]:
    v = (value or "").strip().upper()
    if v in ("", "NONE", "(NULL)", "N/A"):
        return frozenset()
    return frozenset(t.strip() for t in v.split(",") if t.strip())


def apply_rule(user: str, *, domain: str | None = None, address: str | None = None,
               uid: int | None = None) -> str:
    """The site's address of `user`: `address` format ({user}, {uid}), else user@domain,
    else the bare user name (local delivery)."""
    if address:
        return address.format(user=user, uid="" if uid is None else uid)
    if domain:
        if "{user}" in domain:
            return domain.format(user=user, uid="" if uid is None else uid)
        return f"{user}@{domain.lstrip('@')}"
    return user


def valid_address(addr: str) -> bool:
    return bool(_ADDRESS.match(addr)) and len(addr) <= 254


def address_for(user: str | None, slurm: SlurmMail | None, *, domain: str | None = None,
                address: str | None = None, uid: int | None = None) -> list[str]:
    """Where the mail goes: the job's --mail-user (user names in it get the site's rule),
    else (none given, or none valid) the site's rule for the job's user; [] when none."""
    wanted: list[str] = []
    if slurm is not None and slurm.user:
        for part in slurm.user.split(","):
            part = part.strip()
            if not part:
                continue
            wanted.append(part if "@" in part else
                          apply_rule(part, domain=domain, address=address,
                                     uid=uid if part == user else None))
    out: list[str] = []
    for a in wanted:
        if valid_address(a) and a not in out:
            out.append(a)
    if not out and user:
        own = apply_rule(user, domain=domain, address=address, uid=uid)
        out = [own] if valid_address(own) else []
    return out


class Decision(NamedTuple):
    send: bool
    to: tuple[str, ...]
    reason: str  # why (not): for logs, `jobio mail status` and the mail's footer


def decide(policy: str, *, user: str | None, total_bytes: int, min_bytes: int,
           slurm: SlurmMail | None, enabled: bool | None, to: Sequence[str]) -> Decision:
    """Whether a job gets mail. `enabled` is the user's preference (None: never set)."""
    to = tuple(to)
    if policy not in POLICIES:
        raise ValueError(f"unknown mail policy {policy!r} (one of {', '.join(POLICIES)})")
    if policy == "off":
        return Decision(False, to, "the site sends no I/O mail (policy off)")
    if enabled is False:
        return Decision(False, to, f"{user or 'the user'} turned these mails off")
    if not user and not (slurm and slurm.user):
        return Decision(False, to, "the job has no known user")
    if not to:
        return Decision(False, to, "no valid address")
    if policy == "mail_type_end":
        if slurm is None:
            return Decision(False, to, "Slurm no longer knows the job's --mail-type")
        if not slurm.wants_end:
            return Decision(False, to, "the job did not ask for --mail-type=END or ALL")
        return Decision(True, to, "your job asked for mail at its end (--mail-type)")
    if policy == "above_size":
        if total_bytes < min_bytes:
            return Decision(False, to, f"the job moved less than {_size(min_bytes)}")
        return Decision(True, to, f"your job read and wrote at least {_size(min_bytes)} on "
                        "Lustre")
    return Decision(True, to, "the site reports the I/O of every job")


def _size(n: int) -> str:
    from slurm_io.report.counters import human_bytes

    return human_bytes(n)


class SlurmMailLookup:
    """Ask Slurm (through the seam, slurm_io.slurm) for a job's MailUser/MailType: scontrol
    while the job is in slurmctld's memory, else sacct where it has the fields. None when
    neither knows (or runs)."""

    def __init__(self, scontrol: str = "/usr/bin/scontrol", sacct: str = "/usr/bin/sacct",
                 timeout: float = 15.0, *, slurm: Slurm | None = None) -> None:
        self.slurm = slurm or Slurm(sacct=sacct, scontrol=scontrol, timeout=timeout)

    def __call__(self, job: int) -> SlurmMail | None:
        out = self.slurm.show_job(job)
        found = parse_scontrol(out) if out else None
        if found is not None:
            return found
        out = self.slurm.sacct_mail(job)
        return parse_sacct(out) if out else None
