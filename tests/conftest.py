"""Shared fixtures: one real PostgreSQL per test session, a fresh database per test.

Tests talk to a real server (the project's own embedded PostgreSQL), never to mocks. The
server is started once; each test gets its own database cloned from a template that already
has every migration applied, so tests start clean without paying for migrations each time.
"""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from tests.public_dirs import public_tmp_dir

TEMPLATE_DB = "slurmio_test_template"
# `jobio` turns unexpected exceptions into one line for people (slurm_io/cli/app.py); in tests
# they propagate, also from the installed `jobio` run as a subprocess, so real bugs show.
os.environ.setdefault("SLURM_IO_TRACEBACK", "1")
_db_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def pg_base_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Session directory for embedded servers, enterable by the server's account.

    As root the server runs as `postgres`, which cannot enter pytest's own temp root
    (/tmp/pytest-of-root is mode 0700 and pytest resets it), so a directory of mode 0755 is
    made directly under /tmp instead and removed at the end. Other users run the server as
    themselves and use pytest's temp dirs.
    """
    if os.geteuid() != 0:
        yield tmp_path_factory.mktemp("pg")
        return
    with public_tmp_dir("slurm-io-tests-") as path:
        yield path


@pytest.fixture
def pg_tmp_path(pg_base_dir: Path, request: pytest.FixtureRequest) -> Path:
    """A fresh directory per test, usable as the state dir of a test's own server."""
    prefix = re.sub(r"[^\w.-]", "_", request.node.name)[:40]
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=pg_base_dir))
    os.chmod(path, 0o755)
    return path


@pytest.fixture(scope="session")
def pg_dsn(pg_base_dir: Path) -> Iterator[str]:
    """conninfo of the session's embedded server (database `slurmio`, superuser)."""
    server = EmbeddedPostgres(pg_base_dir / "session")
    conninfo = server.ensure()
    try:
        yield conninfo
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _migrated_template(pg_dsn: str) -> str:
    """A database with all migrations applied, cloned by `db_dsn`."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
    with psycopg.connect(make_conninfo(pg_dsn, dbname=TEMPLATE_DB)) as conn:
        # the testbeds' ClusterName: records without a cluster (fake sacct text) are lab's
        migrate.upgrade(conn, settings={"jobio.cluster": "lab"})
    return TEMPLATE_DB


def _fresh_database(pg_dsn: str, template: str) -> Iterator[str]:
    name = f"test_{os.getpid()}_{next(_db_numbers)}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    dsn = make_conninfo(pg_dsn, dbname=name)
    if template != "template0":
        # a clone shares its template's identity (sql/0009): each test database is its own
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT jobio_new_identity()")
    try:
        yield dsn
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def db_dsn(pg_dsn: str, _migrated_template: str) -> Iterator[str]:
    """conninfo of a new database with the current schema, dropped after the test."""
    yield from _fresh_database(pg_dsn, _migrated_template)


@pytest.fixture
def empty_db_dsn(pg_dsn: str) -> Iterator[str]:
    """conninfo of a new, never-migrated database, dropped after the test."""
    yield from _fresh_database(pg_dsn, "template0")


from tests.slurm_fixtures import (  # noqa: E402, F401
    host_slurm_cluster,
    slurm_cluster,
    slurm_release,
)

# -- skips are failures where everything can be set up ------------------------------------
# scripts/test.sh (the README's test command, and CI's) installs PostgreSQL, Slurm, Chromium
# and an SMTP server and runs as root: there a skipped test would only hide a missing set-up
# step, so it fails instead. The one exception: tests that read ../shared skip when that
# folder is absent (a fresh clone), with tests.shared.SHARED_ABSENT as their reason. A
# developer running pytest alone still gets ordinary skips.
FORBID_SKIPS = os.environ.get("SLURM_IO_FORBID_SKIPS") == "1"


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    from tests.shared import PRESENT, SHARED_ABSENT

    outcome = yield
    report = outcome.get_result()
    if FORBID_SKIPS and report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if reason.removeprefix("Skipped: ").startswith(SHARED_ABSENT) and not PRESENT:
            return
        report.outcome = "failed"
        report.longrepr = f"skipped under scripts/test.sh, where nothing may skip: {reason}"


@pytest.fixture
def shared_dir() -> Path:
    """../shared (or $SLURM_IO_SHARED); the test skips when it is absent."""
    from tests.shared import PRESENT, REASON, SHARED

    if not PRESENT:
        pytest.skip(REASON)
    return SHARED


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that needs root or a program this machine lacks fails, saying so (tests/needs.py)."""
    from tests import needs

    needs.check(item)
