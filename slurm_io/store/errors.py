"""The database's exceptions, named once in the store layer, so that commands and daemons
catch them without importing the driver: `except errors.DatabaseError` reads as what it is,
and a change of driver is one file.

Importing this module imports psycopg: callers that must stay light (the hook's spool
ingest, a client rendering a server's answer) import it lazily, where they catch.
"""

from __future__ import annotations

import psycopg
from psycopg import errors as _errors

DatabaseError = psycopg.Error
"""Anything the database or the link to it raised."""
ConnectionLost = (psycopg.OperationalError, psycopg.InterfaceError)
"""The link is gone or unusable: reconnect and try again."""
InsufficientPrivilege = _errors.InsufficientPrivilege
"""A role's grants refused the statement (docs/privacy.md)."""
UniqueViolation = _errors.UniqueViolation
"""Another transaction stored the same key first."""

__all__ = ["ConnectionLost", "DatabaseError", "InsufficientPrivilege", "UniqueViolation",
           "about_the_record"]


def about_the_record(error: BaseException) -> bool:
    """Whether `error`, raised while storing one record, is about that record (a value the
    database cannot hold, a constraint it breaks) rather than about the database being
    unavailable. Any error that is not the database's is about the record."""
    if isinstance(error, psycopg.Error):
        return isinstance(error, psycopg.DataError | psycopg.IntegrityError)
    return isinstance(error, Exception)
