"""Filling in uids that sacct text did not carry, from the passwd database (imperative).

An imported file may lack the UID column (older exports, `--format` without it). The uid is
what job_node rows are matched on when a Lustre job_id lost its job number (`:uid:host`), so
it is looked up by user name here, when this machine knows the user (same LDAP/NIS as the
cluster). Unknown users stay None rather than guessed.
"""

from __future__ import annotations

import pwd
from collections.abc import Callable, Iterable

from slurm_io.jobs.fields import UID_COLUMN_MAX
from slurm_io.model import JobRecord


def passwd_uid(user: str) -> int | None:
    """The uid of `user` on this machine, None when it has no such user."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except (KeyError, ValueError):  # ValueError: a name with NUL
        return None
    return uid if uid <= UID_COLUMN_MAX else None  # the uid columns are integer


def fill_uids(records: Iterable[JobRecord],
              lookup: Callable[[str], int | None] = passwd_uid) -> list[JobRecord]:
    """`records` with uid set from the user name where it was None and the user exists."""
    known: dict[str, int | None] = {}
    out = []
    for r in records:
        if r.uid is None and r.user:
            if r.user not in known:
                known[r.user] = lookup(r.user)
            if known[r.user] is not None:
                r = r._replace(uid=known[r.user])
        out.append(r)
    return out
