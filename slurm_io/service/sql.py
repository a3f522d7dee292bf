"""The service's own queries (the answers' queries live with the commands they serve)."""

from __future__ import annotations

import psycopg
from psycopg import errors, sql

from slurm_io.store import accounts


class NoRole(Exception):
    """The role does not exist, or the service may not take it."""


def become(conn: psycopg.Connection, role: str) -> tuple[int | None, bool] | None:
    """Start a transaction acting as `role` and say who it is: (the uid it maps to, whether
    it holds more than a user's rights), or None when it maps to nobody. BEGIN, SET LOCAL
    ROLE and the check go in one round trip (pipeline mode): on a service's request this was
    three of its eight round trips to PostgreSQL."""
    try:
        with conn.pipeline():
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
            cur = conn.execute(accounts.CURRENT_ROLE_CHECK_SQL)
        row = cur.fetchone()
    except (errors.InsufficientPrivilege, errors.InvalidParameterValue,
            errors.UndefinedObject) as e:
        conn.rollback()
        raise NoRole(str(e)) from e
    return None if row is None else (row[0], bool(row[1]))


def may_read_every_mail_choice(conn: psycopg.Connection) -> bool:
    """Whether the current role reads every user's mail choice (the roles whose row-level
    policy on mail_preference is `USING (true)` for SELECT: admins, the collector)."""
    row = conn.execute("SELECT pg_has_role('jobio_admin', 'USAGE') "
                       "OR pg_has_role('jobio_collector', 'USAGE')").fetchone()
    return bool(row and row[0])
