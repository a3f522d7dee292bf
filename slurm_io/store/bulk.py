"""Bulk inserts by COPY that also work where row-level security applies.

PostgreSQL refuses `COPY ... FROM` into a table whose row-level security applies to the
current role. The result tables (job_io_hour, the LASSi hours) FORCE it, so that is the case
for the documented site-server owner (not a superuser, docs/privacy.md) and for collector
roles. There the rows go by COPY into a temporary table and on with one INSERT ... SELECT,
which the writer's policy allows; elsewhere (a superuser) they go straight in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql


def copy_rows(cur: psycopg.Cursor, table: str, cols: Sequence[str],
              rows: Iterable[Sequence[Any]]) -> None:
    """Insert `rows` (values in `cols` order) into `table` by COPY, through a temporary
    table where row-level security applies to the current role."""
    rows = list(rows)
    if not rows:
        return
    cols_sql = sql.SQL(", ").join(map(sql.Identifier, cols))
    (under_rls,) = cur.execute("SELECT row_security_active(%s::regclass)", (table,)
                               ).fetchone() or (True,)
    target = sql.Identifier(f"_jobio_load_{table}" if under_rls else table)
    if under_rls:
        cur.execute(sql.SQL("CREATE TEMP TABLE {} AS SELECT {} FROM {} WITH NO DATA").format(
            target, cols_sql, sql.Identifier(table)))
    with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(target, cols_sql)) as cp:
        for r in rows:
            cp.write_row(r)
    if under_rls:
        cur.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(
            sql.Identifier(table), cols_sql, cols_sql, target))
        cur.execute(sql.SQL("DROP TABLE {}").format(target))
