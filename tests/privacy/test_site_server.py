"""The site-server set-up of docs/privacy.md, done as the document says, on the session's
PostgreSQL: a non-superuser owner role and its database made with the document's own SQL,
then every command an operator runs, as that owner (a real OS account, peer authentication),
with the installed `jobio`.

The document names the owner and the database `slurmio`; on the test server that name is the
superuser's, so the test takes the statements from the document and only renames them.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests import needs
from tests.cli.installed import JOBIO, command_for
from tests.privacy.privacy_db import RUNUSER, _ensure_os_user

pytestmark = [
    pytest.mark.pg,
    needs.root("runs jobio as another OS user: root"),
]

DOC = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"
OWNER = "jobio_siteowner"  # the OS account and role playing the document's `slurmio`
START = "1795000000"  # 2026-11-18T07:46:40Z
DAY = "2026-11-18"


def documented_sql() -> str:
    """The owner/database statements of "Site server", step 1, as written in the doc."""
    text = DOC.read_text()
    site = text[text.index("## Site server"):]
    m = re.search(r"`(CREATE ROLE [^`]*?;)\s*(CREATE DATABASE [^`]*?;)`", site, re.S)
    assert m, "docs/privacy.md no longer shows the owner's CREATE ROLE / CREATE DATABASE"
    return " ".join(f"{m.group(1)} {m.group(2)}".split())


def documented_dsn() -> str:
    m = re.search(r'as `slurmio`,\s*`jobio --dsn "([^"]+)" db upgrade`', DOC.read_text())
    assert m, "docs/privacy.md no longer shows the owner's `jobio --dsn ... db upgrade`"
    return m.group(1)


@pytest.fixture(scope="module")
def site(pg_dsn: str, pg_base_dir: Path):
    """The owner's OS account, its role and database (the doc's SQL), and a home for its
    files; yields (database name, run-as-owner function)."""
    _ensure_os_user(OWNER)
    database = f"site_{os.getpid()}"
    statements = re.sub(r"\bslurmio\b", OWNER, documented_sql())
    statements = re.sub(rf"(CREATE DATABASE ){OWNER}\b", rf"\g<1>{database}", statements)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'DROP OWNED BY "{OWNER}"' if conn.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", (OWNER,)).fetchone() else "SELECT 1")
        conn.execute(f'DROP ROLE IF EXISTS "{OWNER}"')
        for stmt in statements.split(";"):
            if stmt.strip():
                conn.execute(stmt)
        assert conn.execute("SELECT rolsuper, rolcreaterole, rolbypassrls FROM pg_roles "
                            "WHERE rolname = %s", (OWNER,)).fetchone() == (False, True, False)
    home = Path(tempfile.mkdtemp(prefix="site-", dir=pg_base_dir))  # others may enter
    os.chmod(home, 0o755)
    work = home / "owner"
    work.mkdir()
    account = pwd.getpwnam(OWNER)
    os.chown(work, account.pw_uid, account.pw_gid)
    (home / "config.toml").write_text("")
    os.chmod(home / "config.toml", 0o644)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work),
           "PGHOST": conninfo_to_dict(pg_dsn)["host"], "LANG": "C.UTF-8",
           "SLURM_IO_CONFIG": str(home / "config.toml"), "SLURM_IO_TRACEBACK": "1"}
    dsn = re.sub(r"\buser=slurmio\b", f"user={OWNER}",
                 re.sub(r"\bdbname=slurmio\b", f"dbname={database}", documented_dsn()))
    assert "slurmio" not in dsn, dsn
    argv, extra = command_for(OWNER, RUNUSER)
    env.update(extra)

    def as_owner(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [RUNUSER, "-u", OWNER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
               *argv, "--dsn", dsn, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False,
                              cwd=work)

    yield database, as_owner, home, work
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args[-3:]}: {proc.stderr}"
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_every_command_works_for_the_documented_non_superuser_owner(site, pg_dsn) -> None:
    database, as_owner, home, work = site
    first = ok(as_owner("db", "upgrade"))
    assert "schema at version" in first
    with psycopg.connect(pg_dsn, dbname=database) as conn:
        assert conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database "
                            "WHERE datname = current_database()").fetchone() == (OWNER,)
        assert conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'job'"
                            ).fetchone() == (OWNER,)
    sim = home / "cluster"
    subprocess.run([JOBIO, "simulate", str(sim), "--hours", "2", "--nodes", "8", "--oss", "1",
                    "--users", "4", "--jobs-per-hour", "12", "--start", START, "--no-outage"],
                   check=True, capture_output=True)
    shutil.chown(sim, OWNER)
    ok(as_owner("--state-dir", str(work / "state"), "collect", "--from", str(sim)))
    imported = as_owner("jobs", "import", "--tz", "UTC", str(sim / "sacct.txt"))
    ok(imported)
    attributed = ok(as_owner("attribute", "--since", "2026-11-01"))
    assert re.search(r"attributed [1-9]\d* job", attributed), attributed
    lassi = ok(as_owner("lassi", "compute", "--date", DAY))
    assert re.search(r"[1-9]\d* job hours", lassi), lassi
    daily = ok(as_owner("daily", "--date", DAY, "--out", str(work / "daily")))
    assert (work / "daily" / "index.html").is_file(), daily
    usage = json.loads(ok(as_owner("usage", "-S", DAY, "-E", "2026-11-19", "--json")))
    assert usage["totals"]["write_bytes"] > 0
    assert "jobio top" in ok(as_owner("top", "--once", "--at", f"{DAY}T09:00:00+00:00"))
    with psycopg.connect(pg_dsn, dbname=database) as conn:
        (job,) = conn.execute("SELECT j.job_raw FROM job_io JOIN job j USING (job) "
                              "ORDER BY job LIMIT 1").fetchone()
    assert f"Job {job}" in ok(as_owner(str(job)))
    assert "problem" in ok(as_owner("problems")).lower()
