"""The README's first command for a newcomer: `jobio demo` fills the default database, so
`jobio JOBID` works right after it with no flags; the demo never wipes other data; and what
the README says stops what the two commands leave running exists and works.

The "default" here is what a newcomer's `jobio` picks with nothing configured: the embedded
PostgreSQL in the default state directory, moved into a test directory with
$SLURM_IO_STATE_DIR (slurm_io/paths.py), the way an installation would move it.
"""

from __future__ import annotations

import email
import re
import subprocess
from email import policy
from pathlib import Path

import psycopg
import pytest

from tests.cli.installed import assert_one_line_error, jobio

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def newcomer(pg_tmp_path: Path):
    """The environment of a machine with nothing configured, and its state directory."""
    cfg = pg_tmp_path / "absent.toml"
    cfg.write_text("")
    env = {"SLURM_IO_STATE_DIR": str(pg_tmp_path / "state"), "SLURM_IO_CONFIG": str(cfg)}
    yield env, pg_tmp_path
    jobio("db", "stop", env=env, drop=("SLURM_IO_DSN",))


def test_after_the_demo_jobio_jobid_works_with_no_flags_and_db_stop_stops_it(newcomer):
    env, home = newcomer
    run = {"env": env, "drop": ("SLURM_IO_DSN",)}
    demo = jobio("demo", "--out", str(home / "out"), **run, timeout=900)
    assert demo.returncode == 0, demo.stderr
    shown = re.findall(r"^jobio (\d+)   #", demo.stdout, re.M)
    # the mails as files are named by the job as sacct shows it, not by a row key
    mails = sorted((home / "out" / "mails").glob("*.eml"))
    assert mails, demo.stdout
    for path in mails:
        named = re.fullmatch(r"job-([a-z0-9._+%-]+)-(\d[0-9_+]*)(-r\d+)?\.eml", path.name)
        assert named, path.name
        assert int(named[2].split("_")[0].split("+")[0]) < 2**32, path.name
        msg = email.message_from_bytes(path.read_bytes(), policy=policy.default)
        subject = str(msg["Subject"]).strip()
        assert subject.startswith(f"[slurm-io] job {named[2]} ("), (path.name, subject)
        assert path.with_suffix(".html").is_file()
    assert shown, demo.stdout
    assert "--dsn" not in demo.stdout.splitlines()[-1]  # its hint works as printed, too
    for jobid in shown:
        proc = jobio(jobid, **run)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"Job {jobid} ")
    usage = jobio("usage", "-S", "2026-11-18", "-E", "2026-11-19", "--attribution", **run)
    assert usage.returncode == 0 and "read_bytes" in usage.stdout, usage.stderr

    # a default database that holds data no demo wrote is refused, not wiped
    status = dict(line.split(": ", 1) for line in jobio("db", "status", **run).stdout
                  .splitlines())
    assert status["running"] == "True"
    with psycopg.connect(status["conninfo"], autocommit=True) as conn:
        conn.execute("COMMENT ON DATABASE slurmio IS NULL")
        (jobs,) = conn.execute("SELECT count(*) FROM job").fetchone()
    assert_one_line_error(jobio("demo", "--out", str(home / "out2"), **run),
                          "holds data that is not a demo's")
    with psycopg.connect(status["conninfo"]) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone() == (jobs,)

    stop = jobio("db", "stop", **run)
    assert stop.returncode == 0, stop.stderr
    status = dict(line.split(": ", 1) for line in jobio("db", "status", **run).stdout
                  .splitlines())
    assert status["running"] == "False"


def test_the_readme_says_how_to_stop_what_its_two_commands_started(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 60  # one screen
    assert "jobio db stop" in readme and "scripts/teardown-slurm.sh" in readme
    # the testbed's teardown runs and touches nothing where there is no testbed
    proc = subprocess.run(["bash", str(REPO / "scripts" / "teardown-slurm.sh")],
                          env={"LAB": str(tmp_path / "no-testbed"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "nothing to do" in proc.stdout, proc.stderr


def test_a_database_without_the_schema_is_one_line_saying_what_to_run(empty_db_dsn) -> None:
    proc = jobio("--dsn", empty_db_dsn, "4432914", drop=("SLURM_IO_TRACEBACK",))
    assert_one_line_error(proc, "jobio db upgrade")
