"""Indexes of partitioned tables built without blocking writers, after a migration commits.

Why: `CREATE INDEX ... ON jobstats_delta` in a migration builds the index of every partition
inside the migration's transaction, holding a SHARE lock (ACCESS EXCLUSIVE with a DROP INDEX
before it) on the table until commit: every collector's COPY waits for the whole build, a
scan of the site's data (bench/bench_migrations.py measured it). `CREATE INDEX CONCURRENTLY`
cannot run in a transaction, and migrations run in one (migrate.py). So a migration creates
the index `ON ONLY` the parent -- an empty, invalid index, made in no time -- and
`complete(conn)`, which `migrate.upgrade` calls after the migrations, builds each partition's
index CONCURRENTLY (writers go on meanwhile) and attaches it; the parent index becomes valid
when every partition has one. Partitions created later get theirs from PostgreSQL at ATTACH.

An interrupted build (upgrade killed, a cancelled CONCURRENTLY leaving an invalid index) is
finished by the next `jobio db upgrade`: `pending` sees the invalid parent index, a matching
valid index already on a partition is attached instead of built again, an invalid one is
dropped and built again. Queries work meanwhile: they just lack that index.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import NamedTuple

import psycopg
from psycopg import sql

# " ON ONLY schema.parent USING ..." in pg_get_indexdef's text of a partitioned index
_ON_ONLY_RE = re.compile(r" ON ONLY \S+ (?=USING )")
_ON_RE = re.compile(r" ON \S+ (?=USING )")

_PENDING_SQL = """
SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid), c.oid
FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
WHERE c.relkind = 'p' AND NOT i.indisvalid AND c.relnamespace = current_schema()::regnamespace
ORDER BY 1
"""
# partitions of a table without an index attached to `parent_index`, and their indexes
_MISSING_SQL = """
SELECT p.inhrelid::regclass::text, p.inhrelid
FROM pg_inherits p
WHERE p.inhparent = %(table)s AND NOT EXISTS (
    SELECT FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
    WHERE ii.inhparent = %(index)s::regclass AND x.indrelid = p.inhrelid)
ORDER BY 1
"""
_CANDIDATES_SQL = """
SELECT x.indexrelid::regclass::text, x.indisvalid, pg_get_indexdef(x.indexrelid)
FROM pg_index x WHERE x.indrelid = %s AND NOT EXISTS (
    SELECT FROM pg_inherits ii WHERE ii.inhrelid = x.indexrelid)
"""


class Pending(NamedTuple):
    index: str  # the partitioned index, as regclass text
    definition: str  # its pg_get_indexdef
    table_oid: int


def pending(conn: psycopg.Connection) -> list[Pending]:
    """Partitioned indexes not valid yet (some partition lacks its index)."""
    return [Pending(*r) for r in conn.execute(_PENDING_SQL)]


def _body(definition: str) -> str:
    """`USING btree (a, b) WHERE ...`: an index definition without its name and table
    (`UNIQUE ` before it for a unique index: only a unique index may be attached to one)."""
    match = _ON_ONLY_RE.search(definition) or _ON_RE.search(definition)
    if match is None:
        raise ValueError(f"not an index definition: {definition}")
    unique = "UNIQUE " if definition.startswith("CREATE UNIQUE INDEX") else ""
    return unique + definition[match.end():]


def complete(conn: psycopg.Connection,
             progress: Callable[[str], None] | None = None) -> list[str]:
    """Build and attach the missing partition indexes of every pending partitioned index;
    return the partition indexes attached. `conn` must be in autocommit mode (CONCURRENTLY
    runs outside a transaction); the caller serialises concurrent upgraders. `progress` is
    told of each partition's build as it ends: on a site's data the whole can take an hour,
    and an upgrade that prints nothing meanwhile looks hung."""
    if not conn.autocommit:
        raise ValueError("complete() needs an autocommit connection")
    attached: list[str] = []
    for index, definition, table_oid in pending(conn):
        body = _body(definition)
        missing = conn.execute(_MISSING_SQL, {"table": table_oid, "index": index}).fetchall()
        for number, (partition, part_oid) in enumerate(missing, 1):
            started = time.monotonic()
            child = _matching(conn, part_oid, body)
            if child is None:
                using = body.removeprefix("UNIQUE ")
                conn.execute(sql.SQL("CREATE {}INDEX CONCURRENTLY ON {} {}").format(
                    sql.SQL("UNIQUE " if using != body else ""), sql.SQL(partition),
                    sql.SQL(using)))
                child = _matching(conn, part_oid, body)
                if child is None:  # cannot happen: the build just succeeded
                    raise RuntimeError(f"no index on {partition} after building it")
            conn.execute(sql.SQL("ALTER INDEX {} ATTACH PARTITION {}").format(
                sql.SQL(index), sql.SQL(child)))
            attached.append(child)
            if progress is not None:
                progress(f"index {index}: partition {partition} done ({number}/{len(missing)},"
                         f" {time.monotonic() - started:.1f} s; writers were not blocked)")
    return attached


def _matching(conn: psycopg.Connection, part_oid: int, body: str) -> str | None:
    """A valid unattached index of the partition with the same definition; invalid ones of
    the same columns (an interrupted CONCURRENTLY build) are dropped on the way."""
    for name, valid, definition in conn.execute(_CANDIDATES_SQL, (part_oid,)).fetchall():
        if valid and _body(definition) == body:
            return str(name)
        if not valid and (_body(definition).removeprefix("UNIQUE ")
                          == body.removeprefix("UNIQUE ")):  # serves nothing: in the way
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY {}").format(sql.SQL(name)))
    return None
