"""`jobio mail status`: the document (also the service's `GET /v1/mail`) and its lines."""

from __future__ import annotations

import pwd
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Connection

    from slurm_io.config import Config

POLICY_TEXT = {"all": "every job", "off": "no job (mails are off for everyone)",
               "mail_type_end": "jobs submitted with --mail-type=END or ALL"}


def status_document(conn: Connection, cfg: Config, user: str | None
                    ) -> dict[str, Any]:
    """Whether `user`'s jobs (default: the connected role's) get I/O mails, and the policy.
    Raises preferences.NoUidError and config.ConfigError."""
    from slurm_io.mail import preferences
    from slurm_io.mail.builder import MailSettings
    from slurm_io.mail.recipients import apply_rule
    from slurm_io.report.counters import human_bytes

    s = MailSettings.from_config(cfg)
    uid = preferences.resolve_uid(conn, user)
    pref = preferences.get(conn, uid)
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    policy = POLICY_TEXT.get(s.policy) or (
        f"jobs that read and wrote {human_bytes(s.min_bytes)} or more"
        if s.policy == "above_size" else s.policy)
    return {"user": name, "uid": uid, "enabled": pref.enabled,
            "changed_at": pref.changed_at.isoformat() if pref.changed_at else None,
            "policy": s.policy, "policy_text": policy,
            "address": apply_rule(name, domain=s.domain, address=s.address, uid=uid)}


def status_lines(doc: dict[str, Any]) -> list[str]:
    if doc["enabled"] is None:
        choice = "not set: the site policy applies"
    else:
        when = (doc["changed_at"] or "?")[:16].replace("T", " ")
        choice = f"{'on' if doc['enabled'] else 'off'} (since {when})"
    return [f"user:    {doc['user']} (uid {doc['uid']})",
            f"mails:   {choice}",
            f"policy:  {doc['policy']}: {doc['policy_text']}",
            f"address: {doc['address']} (a job's --mail-user goes first)"]
