"""A command's database connection, checked against this release's schema, without click.

Its own module so that `jobio JOBID` (cli/entry.py's path without click) and the click
commands (cli/app.py, which turns SchemaMismatch into its one line) open it the same way.
"""

from __future__ import annotations

from typing import Any

from slurm_io.config import Config


def connect_db(cfg: Config, *, upgrade: bool = True) -> Any:
    """A connection to `cfg.dsn` whose schema this release can use (upgraded first when
    `upgrade`); store.migrate.SchemaMismatch when it cannot."""
    from slurm_io.store import db, migrate

    conn = db.connect(cfg.dsn, state_dir=cfg.state_dir)
    try:  # this release against the database's schema: upgraded, usable, or one line
        migrate.check(conn, upgrade_first=upgrade, settings=migrate.config_settings(cfg))
    except BaseException:
        conn.close()
        raise
    return conn


def connect_read(cfg: Config) -> Any:
    """A reader's connection: the standby of `read_dsn` when configured (never upgraded
    from there: a standby takes no writes; the schema it replays is the primary's), else
    `connect_db` without upgrading, as the readers always did."""
    if not cfg.read_dsn:
        return connect_db(cfg, upgrade=False)
    return connect_db(cfg.replace(dsn=cfg.read_dsn), upgrade=False)


def read_lag(cfg: Config, conn: Any) -> float | None:
    """The replication lag a reader reports (store.standby): None without `read_dsn`, so
    that a site without a standby sees its outputs unchanged."""
    if not cfg.read_dsn:
        return None
    from slurm_io.store.standby import replication_lag

    return replication_lag(conn)
