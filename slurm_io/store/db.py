"""Opening database connections: a configured server, or the embedded default.

Every command goes through `connect()` so that "no DSN configured" consistently means "the
private PostgreSQL in the state directory" (started on demand), and a site's own server is
one `--dsn` / `SLURM_IO_DSN` away.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.paths import default_state_dir

DSN_ENV = "SLURM_IO_DSN"
APPLICATION_NAME = "slurm-io"
# A daemon's connection must not hang on a link that died under it (an interface down, a
# cable pulled: no reset ever comes): data unacknowledged for TCP_USER_TIMEOUT gives the
# connection up, and keepalives probe an idle one, so the collector's next cycle reads lctl
# and spools instead of waiting for the kernel's ~15 min of retransmissions. Well inside the
# default 120 s interval. Settings in the DSN win; libpq ignores them on unix sockets.
DAEMON_TCP = {"tcp_user_timeout": "30000", "keepalives": "1", "keepalives_idle": "30",
              "keepalives_interval": "10", "keepalives_count": "3"}


def resolve_dsn(flag_value: str | None) -> str | None:
    """The DSN to use: the command-line flag, else $SLURM_IO_DSN, else None (embedded).

    An empty string counts as unset, so `SLURM_IO_DSN=` in a unit file selects the embedded
    server rather than libpq's environment defaults.
    """
    if flag_value:
        return flag_value
    return os.environ.get(DSN_ENV) or None


def connect(
    dsn: str | None,
    *,
    state_dir: Path | None = None,
    autocommit: bool = False,
) -> psycopg.Connection:
    """Connect to `dsn` (libpq conninfo or URI), or to the embedded server when it is None.

    The embedded server is initialised/started on demand (`EmbeddedPostgres.ensure`), in
    `state_dir` or the default state directory. The application name is only a fallback so
    that one given in the DSN wins.
    """
    if dsn is None:
        # here, not at import: a configured server (every login node's `jobio show`) never
        # needs the embedded server's set-up modules (subprocess, pwd, shutil)
        from slurm_io.store.embedded import EmbeddedPostgres

        dsn = EmbeddedPostgres(state_dir or default_state_dir()).ensure()
    return psycopg.connect(
        dsn, autocommit=autocommit, fallback_application_name=APPLICATION_NAME
    )


def upgrading_factory(dsn: str | None, *, state_dir: Path | None = None
                      ) -> Callable[[], psycopg.Connection]:
    """A connection factory for daemons: the schema is brought up to date on the first
    connection only; every connection compares this release with the database's schema
    (migrate.check), so a database upgraded during an outage by a newer, incompatible release
    is refused (migrate.SchemaMismatch, a RuntimeError: the collector spools) in one line."""
    from slurm_io.store import migrate

    upgraded = False
    if dsn is not None:
        dsn = with_dead_link_bounds(dsn)

    def factory() -> psycopg.Connection:
        nonlocal upgraded
        conn = connect(dsn, state_dir=state_dir)
        try:
            migrate.check(conn, upgrade_first=not upgraded)
        except BaseException:
            conn.close()
            raise
        upgraded = True
        return conn

    return factory


def with_dead_link_bounds(dsn: str) -> str:
    """`dsn` with DAEMON_TCP's settings for those it does not set itself."""
    try:
        given = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return dsn  # malformed: connect() says so, as it would have without these
    return make_conninfo(dsn, **{k: v for k, v in DAEMON_TCP.items() if k not in given})


class DatabaseLink:
    """A lazily (re)opened connection: an outage is a state, not an exception."""

    def __init__(self, factory: Callable[[], psycopg.Connection]) -> None:
        self._factory = factory
        self._conn: psycopg.Connection | None = None

    def __call__(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = None
            self._conn = self._factory()
        return self._conn

    def reset(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a dead connection may fail anyhow
                self._conn.close()
        self._conn = None


def as_user(conninfo: str, user: str) -> str:
    """`conninfo` connecting as `user` (peer authentication as the caller's OS account)."""
    return make_conninfo(conninfo, user=user)


def connect_once(dsn: str, *, timeout: float, application: str) -> psycopg.Connection:
    """One plain connection to `dsn`, given up after `timeout` seconds (libpq counts whole
    seconds, at least 2): for short-lived callers such as the hook's background child."""
    return psycopg.connect(dsn, connect_timeout=max(2, int(timeout)),
                           fallback_application_name=application)
