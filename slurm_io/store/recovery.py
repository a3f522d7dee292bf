"""Queries that tell what a database restored from a backup lost (docs/deploy.md "Backups").

Why here: the collector, the hook spool and the reporter each ask one small question of the
database to tell whether it still has what they sent it; SQL lives in query modules.
"""

from __future__ import annotations

from typing import Any


def newest_stored(conn: Any, collector: str) -> tuple[int, float | None]:
    """(seq, read time) of `collector`'s newest batch in the database; (0, None) for none.

    One probe of ingest_batch's primary key (collector, seq): cheap enough for every flush.
    """
    with conn.transaction():
        row = conn.execute(
            "SELECT seq, extract(epoch FROM read_time)::float8 FROM ingest_batch"
            " WHERE collector = %s ORDER BY seq DESC LIMIT 1", (collector,)).fetchone()
    return (int(row[0]), float(row[1])) if row else (0, None)


def queued(conn: Any, job: int) -> bool:
    """Whether job row `job` has a report_queue row (a restored database may have neither)."""
    row = conn.execute("SELECT EXISTS (SELECT FROM report_queue WHERE job = %s)",
                       (job,)).fetchone()
    return bool(row and row[0])
