"""Schema migrations: apply `sql/NNNN_name.sql` files in order, each exactly once.

Why not a migration framework: the schema is a handful of plain SQL files, and the rules
needed are few -- each file runs in its own transaction together with the row recording it
(so a failed file leaves no trace and is retried next time), and concurrent upgrades (two
collectors starting together) are serialised by a transaction-scoped advisory lock.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from psycopg import pq

from slurm_io.paths import sql_dir

# Arbitrary constant naming "slurm-io schema migrations" in pg_advisory_xact_lock's key space.
MIGRATION_LOCK_KEY = 0x5C10_0001
_FILE_RE = re.compile(r"(\d{4})_([A-Za-z0-9_\-]+)\.sql")

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


class Migration(NamedTuple):
    version: int
    name: str  # file name without `.sql`, e.g. "0001_core"
    path: Path


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
            settings: dict[str, str] | None = None) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date).

    Each migration runs in its own transaction holding the advisory lock, and re-checks
    whether it was applied after getting the lock, so a concurrent upgrader that got there
    first is simply skipped. `settings`: GUCs a migration may read (set per transaction),
    e.g. jobio.cluster, the configured default cluster (sql/0020). A failing migration
    raises after its transaction rolled back; the ones before it stay applied.
    """
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        raise ValueError("upgrade() needs a connection with no transaction in progress")
    migrations = available(directory)
    if _up_to_date(conn, migrations):
        return []  # no DDL at all: users and collectors without CREATE rights get here
    applied: list[str] = []
    for migration in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            for name, value in (settings or {}).items():
                conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            conn.execute(_CREATE_TABLE)
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = %s", (migration.version,)
            ).fetchone()
            if done:
                continue
            # No parameters: sent with the simple query protocol, so a file may hold many
            # statements and `%` needs no escaping.
            conn.execute(migration.path.read_text(encoding="utf-8"))  # type: ignore[arg-type]
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
        applied.append(migration.name)
    return applied


def _up_to_date(conn: psycopg.Connection, migrations: list[Migration]) -> bool:
    """Whether every migration is recorded, checked read-only (no lock, no DDL)."""
    with conn.transaction():
        if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,):
            return False
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    return all(m.version in done for m in migrations)
