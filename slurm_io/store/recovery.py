"""Queries that tell what a database restored from a backup lost (docs/deploy.md "Backups").

Why here: the collector, the hook spool and the reporter each ask one small question of the
database to tell whether it still has what they sent it; SQL lives in query modules.
"""

from __future__ import annotations

from typing import Any


def queued(conn: Any, job: int) -> bool:
    """Whether job row `job` has a report_queue row (a restored database may have neither)."""
    row = conn.execute("SELECT EXISTS (SELECT FROM report_queue WHERE job = %s)",
                       (job,)).fetchone()
    return bool(row and row[0])
