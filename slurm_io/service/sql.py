"""The service's own queries (the answers' queries live with the commands they serve)."""

from __future__ import annotations

import psycopg


def may_read_every_mail_choice(conn: psycopg.Connection) -> bool:
    """Whether the current role reads every user's mail choice (the roles whose row-level
    policy on mail_preference is `USING (true)` for SELECT: admins, the collector)."""
    row = conn.execute("SELECT pg_has_role('jobio_admin', 'USAGE') "
                       "OR pg_has_role('jobio_collector', 'USAGE')").fetchone()
    return bool(row and row[0])
