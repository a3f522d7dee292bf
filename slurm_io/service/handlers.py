"""The service's answers, each run as the requesting user's database role.

`as_user` opens a transaction, `SET LOCAL ROLE`s to the role of the MUNGE-verified uid and
checks that the database maps that role to the same uid; everything after is read through
that role's privileges and row-level security, exactly as the user's own `psql` would
(docs/privacy.md). Nothing here filters rows in Python. The documents are those of the
command line's `--json` (docs/service.md).
"""

from __future__ import annotations

import base64
import pwd
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors, sql

from slurm_io.config import Config
from slurm_io.jobs.spec import JOBID_ARG
from slurm_io.service.protocol import SCHEMA


class Refused(Exception):
    """An answer other than 200: (status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def role_of(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError as e:
        raise Refused(403, f"uid {uid} has no account on the service's host") from e


@contextmanager
def as_user(conn: psycopg.Connection, uid: int) -> Iterator[psycopg.Connection]:
    """`conn` acting as the database role of `uid` until the block ends (then rolled back,
    unless the block committed: mail preferences)."""
    name = role_of(uid)
    try:
        # BEGIN, SET LOCAL ROLE and the check in one round trip (pipeline mode): on a
        # service's request this was three of its eight round trips to PostgreSQL
        with conn.pipeline():
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(name)))
            cur = conn.execute(
                "SELECT jobio_current_uid(), rolsuper OR rolbypassrls FROM pg_roles "
                "WHERE rolname = current_user")
        row = cur.fetchone()
    except (errors.InsufficientPrivilege, errors.InvalidParameterValue,
            errors.UndefinedObject) as e:
        conn.rollback()
        raise Refused(403, f"no database role for {name} (uid {uid}) that the service may "
                      f"use: an administrator runs `jobio db users {name}`") from e
    if row is None or row[0] != uid or row[1]:
        conn.rollback()
        raise Refused(403, f"the database role {name} is not mapped to uid {uid}: an "
                      f"administrator runs `jobio db users {name}`")
    try:
        yield conn
    finally:
        conn.rollback()


def _float(params: dict[str, list[str]], key: str) -> float | None:
    v = params.get(key)
    if not v:
        return None
    try:
        return float(v[0])
    except ValueError as e:
        raise Refused(400, f"{key}: not a number of seconds since the epoch: {v[0]!r}") from e


def show(conn: psycopg.Connection, cfg: Config, params: dict[str, list[str]]
         ) -> dict[str, Any]:
    from slurm_io.report.show_docs import AmbiguousJob, parse_clusters, show_documents

    specs = params.get("jobid", [])
    for spec in specs:
        if not JOBID_ARG.match(spec):
            raise Refused(400, f"not a job id: {spec!r}")
    user = (params.get("user") or [None])[0]
    if not specs and not user:
        raise Refused(400, "give jobid=..., or user=...")
    clusters = (params.get("clusters") or [None])[0]
    try:
        reports, missing = show_documents(
            conn, specs, user, _float(params, "start"), _float(params, "end"), now=time.time(),
            resolution=cfg.interval, clusters=parse_clusters(clusters),
            all_clusters=clusters is not None and parse_clusters(clusters) is None)
    except AmbiguousJob as e:
        raise Refused(409, str(e)) from None
    return {"schema": SCHEMA, "jobs": [r.as_json() for r in reports], "missing": missing}


def report(conn: psycopg.Connection, cfg: Config, params: dict[str, list[str]]
           ) -> dict[str, Any]:
    from slurm_io.jobs.store import find_jobs
    from slurm_io.mail.builder import MailBuilder, html_part, text_part
    from slurm_io.report.show_docs import parse_clusters

    spec = (params.get("jobid") or [""])[0]
    if not JOBID_ARG.match(spec):
        raise Refused(400, f"not a job id: {spec!r}")
    builder = MailBuilder(cfg)
    messages = []
    clusters = (params.get("clusters") or [None])[0]
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


def mail(conn: psycopg.Connection, cfg: Config, params: dict[str, list[str]],
         uid: int, method: str) -> dict[str, Any]:
    from slurm_io.mail import preferences
    from slurm_io.mail.status import status_document

    user = (params.get("user") or [None])[0]
    if method == "POST":
        value = (params.get("enabled") or [""])[0]
        if value not in ("true", "false"):
            raise Refused(400, "enabled=true or enabled=false")
        try:
            target = preferences.resolve_uid(conn, user)
            preferences.set_enabled(conn, target, value == "true")  # commits
        except preferences.NoUidError as e:
            raise Refused(400, str(e)) from e
        except errors.InsufficientPrivilege as e:
            raise Refused(403, "the database refused: you may change your own choice "
                          f"only [{e.diag.message_primary}]") from e
        return {"schema": SCHEMA, "uid": target, "enabled": value == "true"}
    try:
        return {"schema": SCHEMA, **status_document(conn, cfg, user)}
    except preferences.NoUidError as e:
        raise Refused(400, str(e)) from e


def usage(conn: psycopg.Connection, cfg: Config, params: dict[str, list[str]]
          ) -> dict[str, Any]:
    from slurm_io.report import unattributed
    from slurm_io.report import usage as usage_view

    now = time.time()
    end = _float(params, "end") or now
    start = _float(params, "start") or end - 86400
    result = usage_view.usage(conn, start, end)
    if params.get("attribution") == ["1"]:
        result["attribution"] = unattributed.split(conn, start, end, now=now)
    return {"schema": SCHEMA, "usage": result}
