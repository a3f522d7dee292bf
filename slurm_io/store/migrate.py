"""Schema migrations: apply `sql/NNNN_name.sql` files in order, each exactly once.

Why not a migration framework: the schema is a handful of plain SQL files, and the rules
needed are few -- each file runs in its own transaction together with the row recording it
(so a failed file leaves no trace and is retried next time), and concurrent upgrades (two
collectors starting together) are serialised by a transaction-scoped advisory lock.

Releases and schemas (`check`): a release knows the migrations it ships, up to its
`schema_version`. Against an older database it says "run `jobio db upgrade`" (commands that
upgrade themselves do so first); against a newer one it works if every migration it does not
know says that writers of its schema may go on (a header line `-- writers-from: N` in the
file: releases knowing migration N or later still write correctly after this one; recorded in
schema_migrations.writers_from by the release that applies it), else it refuses in one line
(SchemaMismatch; the collector spools). A migration without the line is taken as breaking
every older writer: adding a table or an index is compatible and says so, dropping or
renaming a column a writer fills is not.

Migrations on a site's data (docs/storage.md, "Migrations on a populated database"): an index
of jobstats_delta is created `ON ONLY` the parent in the migration, and `upgrade` builds the
partitions' indexes CONCURRENTLY after the migrations committed (store/online_index.py), so
collectors never wait for a scan of the table; tests/store/test_migration_rules.py holds
sql/ to the rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from psycopg import pq

from slurm_io.paths import sql_dir
from slurm_io.store import online_index

# Arbitrary constant naming "slurm-io schema migrations" in pg_advisory_xact_lock's key space.
MIGRATION_LOCK_KEY = 0x5C10_0001
_FILE_RE = re.compile(r"(\d{4})_([A-Za-z0-9_\-]+)\.sql")
_WRITERS_FROM_RE = re.compile(r"^-- writers-from: (\d+)\s*$", re.MULTILINE)

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""
# the oldest schema whose writers still work after a migration (see the module's docstring);
# NULL (recorded before this column): as breaking as can be
_ADD_WRITERS_FROM = ("ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS "
                     "writers_from integer")


class Migration(NamedTuple):
    version: int
    name: str  # file name without `.sql`, e.g. "0001_core"
    path: Path

    def writers_from(self) -> int:
        """Its `-- writers-from: N` line (in the file's leading comment), else its version."""
        head = self.path.read_text(encoding="utf-8")[:4096]
        match = _WRITERS_FROM_RE.search(head)
        return int(match.group(1)) if match else self.version


def available(directory: Path | None = None) -> list[Migration]:
    """Migration files of `directory` (default: the project's sql/), by version.

    Files not named NNNN_*.sql are ignored; two files with the same number are an error
    because their relative order would be undefined.
    """
    directory = directory or sql_dir()
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_RE.fullmatch(path.name)
        if not match:
            continue
        version = int(match.group(1))
        if version in found:
            raise ValueError(
                f"duplicate migration version {version}: {found[version].path.name}, {path.name}"
            )
        found[version] = Migration(version, path.stem, path)
    return [found[v] for v in sorted(found)]


def current_version(conn: psycopg.Connection) -> int:
    """Highest applied migration version; 0 for a database never migrated.

    Reads in a transaction block of its own (a savepoint inside a caller's transaction), so
    it never leaves an idle connection with an open transaction.
    """
    with conn.transaction():
        row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if not row or not row[0]:
            return 0
        row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0


def config_settings(cfg: Any) -> dict[str, str] | None:
    """What a migration may read from the config: the default cluster (sql/0020)."""
    cluster = getattr(cfg, "cluster", None)
    return {"jobio.cluster": cluster} if cluster else None


def upgrade(conn: psycopg.Connection, directory: Path | None = None, *,
            settings: dict[str, str] | None = None,
            progress: Callable[[str], None] | None = None) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date).

    Each migration runs in its own transaction holding the advisory lock, and re-checks
    whether it was applied after getting the lock, so a concurrent upgrader that got there
    first is simply skipped. `settings`: GUCs a migration may read (set per transaction),
    e.g. jobio.cluster, the configured default cluster (sql/0020). A failing migration
    raises after its transaction rolled back; the ones before it stay applied.
    `progress`: told each step as it starts and ends (a migration, each partition's index
    build), so that an admin watching a long upgrade sees where it is.
    """
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        raise ValueError("upgrade() needs a connection with no transaction in progress")
    migrations = available(directory)
    up_to_date = _up_to_date(conn, migrations)
    if up_to_date and not _unfinished_indexes(conn):
        return []  # no DDL at all: users and collectors without CREATE rights get here
    applied: list[str] = []
    for migration in [] if up_to_date else migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            for name, value in (settings or {}).items():
                conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            conn.execute(_CREATE_TABLE)
            conn.execute(_ADD_WRITERS_FROM)
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = %s", (migration.version,)
            ).fetchone()
            if done:
                continue
            if progress is not None:
                progress(f"applying {migration.name}")
            # No parameters: sent with the simple query protocol, so a file may hold many
            # statements and `%` needs no escaping.
            conn.execute(migration.path.read_text(encoding="utf-8"))  # type: ignore[arg-type]
            conn.execute(
                "INSERT INTO schema_migrations (version, name, writers_from) "
                "VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.writers_from()),
            )
        applied.append(migration.name)
        if progress is not None:
            progress(f"applied {migration.name}")
    _complete_indexes(conn, progress)
    return applied


def _unfinished_indexes(conn: psycopg.Connection) -> bool:
    """Whether a partitioned index created `ON ONLY` still lacks a partition's index."""
    with conn.transaction():
        return bool(online_index.pending(conn))


def _complete_indexes(conn: psycopg.Connection,
                      progress: Callable[[str], None] | None = None) -> None:
    """Build the partition indexes that migrations left to be built CONCURRENTLY
    (store/online_index.py), outside any transaction, under the migration lock held for the
    session so that concurrent upgraders do not build the same index twice."""
    if not _unfinished_indexes(conn):
        return
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            online_index.complete(conn, progress)
        except psycopg.errors.InsufficientPrivilege:
            pass  # a role that may not build indexes: the owner's `jobio db upgrade` will
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    finally:
        conn.autocommit = autocommit


def _up_to_date(conn: psycopg.Connection, migrations: list[Migration]) -> bool:
    """Whether every migration is recorded, checked read-only (no lock, no DDL)."""
    with conn.transaction():
        if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,):
            return False
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    return all(m.version in done for m in migrations)


# -- this release against the database's schema ----------------------------------------------


class SchemaMismatch(RuntimeError):
    """This release cannot work with the database's schema: one line saying what to do.

    A RuntimeError so that the collector's flush treats it as an outage: it spools and
    tries again next cycle (slurm_io/collect/daemon.py)."""


class SchemaState(NamedTuple):
    database: int  # the database's highest applied migration (0: none)
    release: int  # this release's highest migration
    needs_writers_from: int  # max writers_from of the migrations this release does not know


def schema_version(directory: Path | None = None) -> int:
    """The highest migration this release ships."""
    migrations = available(directory)
    return migrations[-1].version if migrations else 0


_STATE_SQL = ("SELECT coalesce(max(version), 0), coalesce(max(coalesce(writers_from, version)) "
              "FILTER (WHERE version > %s), 0) FROM schema_migrations")
_STATE_SQL_OLD = ("SELECT coalesce(max(version), 0), coalesce(max(version) "
                  "FILTER (WHERE version > %s), 0) FROM schema_migrations")


def read_state(conn: psycopg.Connection, directory: Path | None = None) -> SchemaState:
    """The database's schema beside this release's, in one short read.

    Why one round trip: every command reads it at connect, before a person's `jobio JOBID`
    answers (issue 25, start-up). A database with the table and its writers_from column
    (every one upgraded by a release that records writers-from) answers one pipelined
    BEGIN, SELECT, COMMIT; an older or empty one fails that and takes the careful path
    (which asks first)."""
    release = schema_version(directory)
    try:
        try:
            with conn.pipeline(), conn.transaction():
                cur = conn.execute(_STATE_SQL, (release,))
            row = cur.fetchone()
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
            row = _read_state_asking(conn, release)
            if row is None:
                return SchemaState(0, release, 0)
    except psycopg.errors.InsufficientPrivilege:  # a role the site gave no read of it
        return SchemaState(release, release, 0)  # unknown: the queries will tell
    assert row is not None
    return SchemaState(int(row[0]), release, int(row[1]))


def _read_state_asking(conn: psycopg.Connection, release: int) -> tuple[Any, ...] | None:
    """(version, writers_from) of a database that may lack the table (None) or the column."""
    with conn.transaction():
        if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,):
            return None
        has_column = conn.execute(
            "SELECT 1 FROM pg_attribute WHERE attrelid = 'schema_migrations'::regclass "
            "AND attname = 'writers_from' AND NOT attisdropped").fetchone() is not None
        return conn.execute(_STATE_SQL if has_column else _STATE_SQL_OLD,
                            (release,)).fetchone()


def mismatch(state: SchemaState, release_name: str) -> str | None:
    """Why this release cannot use the database as it is (one line), or None if it can."""
    if 0 < state.database < state.release:
        return (f"the database's schema is at version {state.database}, this jobio "
                f"{release_name} needs {state.release}: run `jobio db upgrade` (as the "
                f"database's owner)")
    if state.database > state.release and state.needs_writers_from > state.release:
        return (f"the database's schema is at version {state.database}, newer than this "
                f"jobio {release_name} can write (its schema {state.release}; a release with "
                f"schema {state.needs_writers_from} or later can): upgrade slurm-io on this "
                f"host")
    return None


def check(conn: psycopg.Connection, *, upgrade_first: bool = False,
          settings: dict[str, str] | None = None, directory: Path | None = None) -> SchemaState:
    """Compare the database's schema with this release's at connect; raise SchemaMismatch
    if they cannot work together. `upgrade_first`: bring an older schema up to date first
    (as the commands that always did), which only its owner may: anyone else is told to
    run `jobio db upgrade`, not "permission denied". A database with no schema at all is
    left to the caller (`jobio db upgrade` creates it; the CLI names it when a table is
    missing)."""
    from slurm_io import __version__

    state = read_state(conn, directory)
    if upgrade_first and state.database < state.release:
        try:
            upgrade(conn, directory, settings=settings)
        except psycopg.errors.InsufficientPrivilege:
            if state.database == 0:
                raise
        else:
            state = read_state(conn, directory)
    reason = mismatch(state, __version__)
    if reason is not None:
        raise SchemaMismatch(reason)
    return state
