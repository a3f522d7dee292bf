"""The database side of `jobio demo` (slurm_io/demo.py): recreating its database only when
that is safe, and the few look-ups its printout makes that no command answers (the jobs
with the most bytes over all time, one example job of each kind of attribution).

Kept apart from the commands' stores: nothing else needs these questions, and the demo
itself stays free of SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.store.db import connect

if TYPE_CHECKING:
    from psycopg import Connection

# tables whose rows make a database not "empty" (what collectors, sync and the hook write)
DATA_TABLES = ("jobstats_delta", "job", "ingest_batch")


def comment(conn: Connection) -> str | None:
    """The comment on the connected database (a demo marks its database with one)."""
    row = conn.execute("SELECT shobj_description(oid, 'pg_database') FROM pg_database"
                       " WHERE datname = current_database()").fetchone()
    return None if row is None else row[0]


def holds_data(conn: Connection) -> bool:
    """Whether any of DATA_TABLES exists and has a row."""
    for table in DATA_TABLES:
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,):
            continue
        if conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(
                sql.Identifier(table))).fetchone() == (True,):
            return True
    return False


def database_name(dsn: str) -> str:
    """The database a DSN names."""
    return str(conninfo_to_dict(dsn)["dbname"])


def recreate(dsn: str, mark: str) -> None:
    """Drop the database `dsn` names (its sessions too), create it empty and comment it
    `mark`; through the server's `postgres` database."""
    name = database_name(dsn)
    with connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(
            sql.Identifier(name), sql.Literal(mark)))


class JobBytes(NamedTuple):
    """What the deltas naming a job moved, over all time."""

    job: int
    read_bytes: int
    write_bytes: int
    nodes: int
    metadata_ops: int


def top_jobs_by_bytes(conn: Connection, limit: int = 10) -> list[JobBytes]:
    """The jobs whose own ids moved the most bytes (read + written), most first."""
    return [JobBytes(*r) for r in conn.execute(
        """SELECT job, r, w, nodes, meta FROM (
               SELECT job, sum(coalesce(read_bytes, 0)) AS r,
                      sum(coalesce(write_bytes, 0)) AS w, count(DISTINCT host_id) AS nodes,
                      sum(coalesce(op_open, 0) + coalesce(op_close, 0)
                          + coalesce(op_getattr, 0) + coalesce(op_mkdir, 0)
                          + coalesce(op_unlink, 0)) AS meta
               FROM jobstats_delta WHERE job IS NOT NULL GROUP BY job) j
           ORDER BY r + w DESC LIMIT %s""", (limit,)).fetchall()]


def most_recovered_job(conn: Connection) -> int | None:
    """The attributed job (with writes) that got the most bytes from `:uid:host` entries."""
    row = conn.execute(
        """SELECT job FROM job_io WHERE (totals->>'write_bytes')::bigint > 0
           ORDER BY coalesce((recovered->>'read_bytes')::float8, 0)
                  + coalesce((recovered->>'write_bytes')::float8, 0) DESC LIMIT 1"""
    ).fetchone()
    return None if row is None else int(row[0])


def first_ambiguous_job(conn: Connection) -> int | None:
    """The first attributed job that shared a node with another job of its user."""
    row = conn.execute("SELECT job FROM job_io WHERE ambiguous <> '{}'::jsonb "
                       "ORDER BY job LIMIT 1").fetchone()
    return None if row is None else int(row[0])


def attributed_jobs(conn: Connection) -> list[int]:
    """Every job with stored figures, in the order they ended."""
    return [r[0] for r in conn.execute(
        "SELECT job FROM job_io JOIN job USING (job) ORDER BY end_time, job")]
