"""A command the database does not allow this user: one line, not a traceback.

Users' roles may read their own rows (docs/privacy.md); commands that write (attribute,
lassi compute, daily, db ...) are for administrators and the collector account, and the
database says no to anyone else. That refusal is an answer, not a bug: it is turned into
one line on stderr and exit status 1. psycopg is looked up in sys.modules, not imported, so
that a command that never touched the database (client mode) does not pay for it.
"""

from __future__ import annotations

import sys

import click


def as_refusal(exc: BaseException) -> click.ClickException | None:
    """The one-line error for a permission error from PostgreSQL, else None."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return None
    what = exc.diag.message_primary or str(exc).splitlines()[0]
    return click.ClickException(
        f"permission denied: this command is for administrators and the collector account "
        f"(the database said: {what})")
