"""`jobio problems` with the installed `jobio`: the quarantine, newest first, filtered, one
record's bytes escaped, and nothing for someone who is not an admin."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from slurm_io.store.problems import Problem, record
from tests import needs
from tests.cli.installed import assert_one_line_error, command_for, jobio

EVIL = b"JobID|Name\n7|x\x1b[2J\xff\xfe\x00end"


@pytest.fixture
def quarantine(db_dsn: str, tmp_path: Path) -> Iterator[tuple[list[str], dict[str, int]]]:
    """Three problems in three transactions (so that they are seen one after the other)."""
    ids = {}
    for source, reason, origin, rec in (
            ("sacct", "line 2: 2 fields, the header has 3", "sacct.txt:2", EVIL),
            ("jobstats", "entry without job_id", "oss01", b"- snapshot_time: 1"),
            ("sacct", "line 9: not a job id '12x'", "sacct.txt:9", "12x|y")):
        with psycopg.connect(db_dsn) as conn:
            record(conn, [Problem(source, reason, origin, rec, lost="one job record")])
            ids[reason] = conn.execute("SELECT max(id) FROM problem").fetchone()[0]
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    yield ["--config", str(cfg), "--dsn", db_dsn], ids


def test_problems_are_listed_newest_first_and_filtered(quarantine) -> None:
    site, ids = quarantine
    proc = jobio(*site, "problems")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    order = [int(ln.split()[0]) for ln in lines[1:4]]
    assert order == sorted(ids.values(), reverse=True)
    assert "problems per source: jobstats 1, sacct 2" in proc.stdout
    only = json.loads(jobio(*site, "problems", "--source", "sacct", "--json").stdout)
    assert [p["id"] for p in only] == sorted((ids["line 2: 2 fields, the header has 3"],
                                               ids["line 9: not a job id '12x'"]), reverse=True)
    assert {p["origin"] for p in only} == {"sacct.txt:2", "sacct.txt:9"}
    limited = json.loads(jobio(*site, "problems", "--limit", "1", "--json").stdout)
    assert [p["id"] for p in limited] == [max(ids.values())]
    assert json.loads(jobio(*site, "problems", "-S", "now+1hour", "--json").stdout) == []
    assert len(json.loads(jobio(*site, "problems", "-S", "now-1hour", "--json").stdout)) == 3


def test_show_prints_one_records_bytes_escaped(quarantine) -> None:
    site, ids = quarantine
    pid = ids["line 2: 2 fields, the header has 3"]
    proc = jobio(*site, "problems", "--show", str(pid))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x00" not in proc.stdout
    assert f"record: {len(EVIL)} bytes" in proc.stdout
    assert "JobID|Name\n7|x\\x1b[2J\\xff\\xfe\\x00end" in proc.stdout
    assert "reason: line 2: 2 fields, the header has 3" in proc.stdout
    assert json.loads(jobio(*site, "problems", "--show", str(pid), "--json").stdout)[
        "record"] == "JobID|Name\n7|x\\x1b[2J\\xff\\xfe\\x00end"


@pytest.mark.parametrize(("args", "needle"), [
    (["problems", "--show", "999999"], "no problem 999999"),
    (["problems", "--show", "x"], "--show"),
    (["problems", "--limit", "0"], "--limit"),
    (["problems", "-S", "tomorrowish"], "-S"),
])
def test_mistakes_are_one_line(quarantine, args: list[str], needle: str) -> None:
    site, _ = quarantine
    assert_one_line_error(jobio(*site, *args), needle)


@needs.root("runs jobio as another OS user: root")
def test_a_user_who_is_not_an_admin_gets_one_clear_line(quarantine, pg_tmp_path) -> None:
    from tests.privacy.privacy_db import RUNUSER, _ensure_os_user

    site, _ = quarantine
    user = "jobio_plainuser"
    _ensure_os_user(user)
    dsn = site[-1]
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,)).fetchone():
            conn.execute(f"CREATE ROLE {user} LOGIN IN ROLE jobio_user")
    cfg = pg_tmp_path / "config.toml"  # a directory the user may enter
    cfg.write_text("")
    os.chmod(cfg, 0o644)
    argv, env = command_for(user, RUNUSER)
    params = conninfo_to_dict(dsn)
    user_dsn = f"host={params['host']} dbname={params['dbname']}"  # peer: their own role
    proc = subprocess.run([RUNUSER, "-u", user, "--", "env",
                           *(f"{k}={v}" for k, v in env.items()),
                           *argv, "--config", str(cfg), "--dsn", user_dsn, "problems"],
                          capture_output=True, text=True, check=False, cwd="/")
    line = assert_one_line_error(proc, "jobio: error: only slurm-io admins may")
    assert proc.stdout == "" and line.endswith("(docs/privacy.md)")
