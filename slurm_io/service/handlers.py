"""The service's answers, each run as the requesting user's database role.

`as_user` opens a transaction, `SET LOCAL ROLE`s to the role of the MUNGE-verified uid and
checks that the database maps that role to the same uid; everything after is read through
that role's privileges and row-level security, exactly as the user's own `psql` would
(docs/privacy.md). Nothing here filters rows in Python. The documents are those of the
command line's `--json` (docs/service.md).
"""

from __future__ import annotations

import base64
import dataclasses
import pwd
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from slurm_io.config import Config
from slurm_io.service import sql as service_sql
from slurm_io.service.protocol import SCHEMA
from slurm_io.service.requests import (
    DailyRequest,
    JobsRequest,
    MailRequest,
    ReportRequest,
    ShowRequest,
    TopRequest,
    UsageRequest,
)
from slurm_io.store import accounts
from slurm_io.store.errors import InsufficientPrivilege
from slurm_io.store.standby import replication_lag

if TYPE_CHECKING:
    import psycopg


class Refused(Exception):
    """An answer other than 200: (status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def role_of(uid: int) -> str:
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError as e:
        raise Refused(403, f"uid {uid} has no account on the service's host") from e
    if accounts.is_project_role(name):  # an OS account named like the owner or the hook
        raise Refused(403, f"{name} (uid {uid}) is a role of slurm-io itself: the service "
                      "never acts as it")
    return name


@contextmanager
def as_user(conn: psycopg.Connection, uid: int) -> Iterator[psycopg.Connection]:
    """`conn` acting as the database role of `uid` until the block ends (then rolled back,
    unless the block committed: mail preferences)."""
    name = role_of(uid)
    try:
        row = service_sql.become(conn, name)
    except service_sql.NoRole as e:
        raise Refused(403, f"no database role for {name} (uid {uid}) that the service may "
                      f"use: an administrator runs `jobio db users {name}`") from e
    if row is not None and row[1]:  # e.g. granted by `db users` before issue 18
        conn.rollback()
        raise Refused(403, f"the database role {name} holds more than a user's rights: the "
                      "service never acts as it")
    if row is None or row[0] != uid:
        conn.rollback()
        raise Refused(403, f"the database role {name} is not mapped to uid {uid}: an "
                      f"administrator runs `jobio db users {name}`")
    try:
        yield conn
    finally:
        conn.rollback()


def show(conn: psycopg.Connection, cfg: Config, req: ShowRequest) -> dict[str, Any]:
    from slurm_io.report.show_docs import AmbiguousJob, parse_clusters, show_documents

    specs, user, clusters = list(req.jobids), req.user, req.clusters
    try:
        reports, missing = show_documents(
            conn, specs, user, req.start, req.end, now=time.time(),
            resolution=cfg.interval, clusters=parse_clusters(clusters),
            all_clusters=clusters is not None and parse_clusters(clusters) is None)
    except AmbiguousJob as e:
        raise Refused(409, str(e)) from None
    lag = replication_lag(conn) if cfg.read_dsn else None  # store.standby
    reports = [dataclasses.replace(r, replication_lag=lag) for r in reports]
    # `why` (one line per missing id) came after `missing`: an older client ignores it
    return {"schema": SCHEMA, "jobs": [r.as_json() for r in reports],
            "missing": [m.jobid for m in missing], "why": [m.line for m in missing]}


def report(conn: psycopg.Connection, cfg: Config, req: ReportRequest) -> dict[str, Any]:
    from slurm_io.jobs.store import find_jobs
    from slurm_io.mail.builder import MailBuilder, html_part, text_part
    from slurm_io.report.show_docs import parse_clusters

    spec, clusters = req.jobid, req.clusters
    builder = MailBuilder(cfg)
    messages = []
    infos = find_jobs(conn, spec, parse_clusters(clusters))
    names = sorted({i.cluster or "" for i in infos})
    if clusters is None and len(names) > 1:
        raise Refused(409, f"job {spec} exists on clusters {', '.join(names)}: name one with "
                      f"-M/--clusters (e.g. -M {names[0]})")
    for info in infos:
        m = builder.render(conn, info)
        messages.append({"jobid": info.jobid, "subject": str(m["Subject"]),
                         "text": text_part(m), "html": html_part(m),
                         "eml_base64": base64.b64encode(m.as_bytes()).decode("ascii")})
    return {"schema": SCHEMA, "messages": messages}


def mail(conn: psycopg.Connection, cfg: Config, req: MailRequest, uid: int
         ) -> dict[str, Any]:
    """A user's mail choice (GET) or its change (POST). Another user's choice is refused
    alike both ways unless the database lets the caller read it: row-level security hides
    the row, which read as "not set" (a false answer) before."""
    from slurm_io.mail import preferences
    from slurm_io.mail.status import status_document

    try:
        target = preferences.resolve_uid(conn, req.user)
    except preferences.NoUidError as e:
        raise Refused(400, str(e)) from e
    if req.user is not None and req.user.isdigit():
        try:
            pwd.getpwuid(target)
        except KeyError:
            raise Refused(400, f"no such user: uid {target}") from None
    if req.enabled is not None:
        try:
            preferences.set_enabled(conn, target, req.enabled)  # commits
        except InsufficientPrivilege as e:
            raise Refused(403, "the database refused: you may change your own choice "
                          f"only [{e.diag.message_primary}]") from e
        return {"schema": SCHEMA, "uid": target, "enabled": req.enabled}
    if target != uid and not service_sql.may_read_every_mail_choice(conn):
        raise Refused(403, "the database refused: you may read your own choice only")
    try:
        return {"schema": SCHEMA, **status_document(conn, cfg, req.user)}
    except preferences.NoUidError as e:
        raise Refused(400, str(e)) from e


def usage(conn: psycopg.Connection, cfg: Config, req: UsageRequest) -> dict[str, Any]:
    from slurm_io.report import unattributed
    from slurm_io.report import usage as usage_view

    now = time.time()
    end = req.end or now
    start = req.start or end - 86400
    result = usage_view.usage(conn, start, end).as_json()
    if req.attribution:
        result["attribution"] = unattributed.split(conn, start, end, now=now).as_json()
    return {"schema": SCHEMA, "usage": result}


# /v1/jobs: at most this many jobs per answer (running first, then the newest), and at most
# this many of them computed now (running, or not attributed yet): docs/service.md Limits
MAX_JOBS = 5000
MAX_LIVE = 20


def jobs(conn: psycopg.Connection, cfg: Config, req: JobsRequest, uid: int | None
         ) -> dict[str, Any]:
    """A user's jobs of a period with their summary figures and the titles of the advice
    their mail would give (the web view's "My jobs"). `user` defaults to the caller's own
    account (the uid's); naming another is answered by row-level security: an admin gets
    that user's jobs, anyone else an empty list, as `jobio show -u OTHER` does."""
    from slurm_io.mail.advice import advice
    from slurm_io.mail.view_model import Thresholds
    from slurm_io.report.joblist import job_list
    from slurm_io.service.requests import MAX_PERIOD

    now = time.time()
    end = now if req.end is None else req.end
    start = end - 7 * 86400 if req.start is None else req.start
    if start > end or end - start > MAX_PERIOD:
        raise Refused(400, f"a period of at most {MAX_PERIOD / 86400:.0f} days, start before "
                      "end")
    user = req.user or (role_of(uid) if uid is not None else None)
    if user is None:
        raise Refused(400, "give user=...")
    t = Thresholds(kb_ops=cfg.mail_advice_kb_ops, small_share=cfg.mail_advice_small_share,
                   min_requests=cfg.mail_advice_min_requests,
                   metadata_per_node_hour=cfg.mail_advice_metadata_per_node_hour,
                   min_metadata_ops=cfg.mail_advice_min_metadata_ops)
    rows, total = job_list(conn, user, start, end, now=now, resolution=cfg.interval,
                           max_jobs=MAX_JOBS, max_live=MAX_LIVE)
    docs = []
    for r in rows:
        d = r.as_json()
        d["advice"] = [a.title for a in advice(r, t)] if r.totals is not None else []  # type: ignore[arg-type]
        docs.append(d)
    return {"schema": SCHEMA, "user": user, "start": start, "end": end, "now": now,
            "jobs": docs, "total": total, "truncated": total > len(rows)}


def top(conn: psycopg.Connection, cfg: Config, req: TopRequest) -> dict[str, Any]:
    """The newest interval's top 50 (`jobio top --once --json`), as the caller's role reads
    the deltas: an admin sees everyone, a user only their own load."""
    from slurm_io.report import top as top_mod

    t = top_mod.top(conn, interval=cfg.interval, by=req.by, sort=req.sort, limit=50)
    return {"schema": SCHEMA, "top": top_mod.as_json(t)}


def daily(conn: psycopg.Connection, req: DailyRequest) -> dict[str, Any]:
    """The tables of a day's report from the stored LASSi hours the caller's role reads."""
    from datetime import date

    from slurm_io.report.daily import day_tables

    return {"schema": SCHEMA, **day_tables(conn, date.fromisoformat(req.day))}
