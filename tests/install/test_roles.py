"""Each role's install does its job and nothing more; a command of another role says in one
line which extra it needs (slurm_io/cli/extras.py), never an ImportError traceback."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from slurm_io.simulate import simulate
from tests import needs
from tests.cli.installed import assert_one_line_error
from tests.install.roles import SERVER_ONLY, importable
from tests.notify.conftest import hook_env, queue_rows, wait_until
from tests.privacy.privacy_db import RUNUSER

pytestmark = pytest.mark.pg
START = 1_795_000_000.0
TESTBED_MUNGE = Path("/var/lib/slurm-testbed/run/munge/munge.socket.2")


def run(bin_dir: Path, *args: str, user: str | None = None, config: Path | None = None,
        home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The role's `jobio` with a clean environment (root, or `user` through runuser)."""
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(home or "/nonexistent"),
           "SLURM_IO_CONFIG": str(config or "/dev/null"), "PGCONNECT_TIMEOUT": "10"}
    if home is not None:
        env["SLURM_IO_STATE_DIR"] = str(home / "state")
    argv = [str(bin_dir / "jobio"), *args]
    if user:
        argv = [RUNUSER, "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd="/",
                          timeout=300, check=False)


def needs_extra(proc: subprocess.CompletedProcess[str], command: str, extra: str,
                module: str) -> str:
    return assert_one_line_error(
        proc, f"jobio {command} needs slurm-io[{extra}] (no module {module}): "
              f"pip install 'slurm-io[{extra}]'")


def test_a_collector_install_collects_and_holds_nothing_of_the_server(
        role_bin: Callable[[str], Path], db_dsn: str, tmp_path: Path) -> None:
    bin_dir = role_bin("collector")
    assert importable(bin_dir / "python", ("psycopg", "click", "hostlist", *SERVER_ONLY)) == {
        "psycopg", "click"}
    helped = run(bin_dir, "collect", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Read Lustre job_stats" in helped.stdout
    sim = tmp_path / "sim"
    simulate(sim, seed=4, start=START, hours=0.5, n_nodes=4, n_oss=1, jobs_per_hour=12,
             outage=False)
    proc = run(bin_dir, "--dsn", db_dsn, "--state-dir", str(tmp_path / "st"), "collect",
               "--once", "--from", str(sim))
    assert proc.returncode == 0, proc.stderr
    assert "spool_depth=0" in proc.stdout
    truth = json.loads((sim / "truth.json").read_text())["totals"]["visible"]
    with psycopg.connect(db_dsn) as conn:
        stored = conn.execute("SELECT sum(read_bytes), sum(write_bytes) "
                              "FROM jobstats_delta").fetchone()
    assert stored == (truth["read_bytes"], truth["write_bytes"])
    # the database host's commands name the extra they need, in one line
    needs_extra(run(bin_dir, "--dsn", db_dsn, "exporter", "--once"), "exporter", "server",
                "prometheus_client")
    needs_extra(run(bin_dir, "--dsn", db_dsn, "serve"), "serve", "server", "h11")
    # the first module of the server extra the command imports (python-hostlist, for the
    # job's node list, before jinja2 renders): either way the line names the extra
    needs_extra(run(bin_dir, "--dsn", db_dsn, "report", "4242"), "report", "server",
                "hostlist")
    needs_extra(run(bin_dir, "--dsn", db_dsn, "jobs", "import", "/dev/null"), "jobs",
                "server", "hostlist")


@needs.root("runs the client as an unprivileged user (runuser)")
def test_a_client_install_has_no_driver_and_ends_in_one_line(
        role_bin: Callable[[str], Path], install_dir: Path) -> None:
    bin_dir = role_bin("client")
    assert importable(bin_dir / "python", ("psycopg", "hostlist", *SERVER_ONLY)) == set()
    config = install_dir / "client.toml"
    # a real munged (the testbed's) when there is one: the credential is made and the
    # connection to the URL is what fails; without it, getting the credential fails
    munge = f'[munge]\nsocket = "{TESTBED_MUNGE}"\n' if TESTBED_MUNGE.exists() else ""
    config.write_text(f'server_timeout = 5\n{munge}')
    config.chmod(0o644)
    unreachable = run(bin_dir, "--server", "https://127.0.0.1:9", "4242", user="nobody",
                      config=config)
    line = assert_one_line_error(unreachable)
    assert ("127.0.0.1:9" in line) if munge else ("MUNGE" in line), line
    # without `server`, a database command: the extra, and that a login node asks the service
    line = needs_extra(run(bin_dir, "4242", user="nobody"), "show", "server", "psycopg")
    assert "set `server`" in line
    needs_extra(run(bin_dir, "collect", "--once", user="nobody"), "collect", "collector",
                "psycopg")
    needs_extra(run(bin_dir, "usage", user="nobody"), "usage", "server", "psycopg")


def _epilog(bin_dir: Path) -> Path:
    return bin_dir.parent / "share" / "slurm-io" / "epilog" / "jobio-epilog"


def test_the_controller_hook_needs_the_standard_library_and_its_child_the_hook_extra(
        role_bin: Callable[[str], Path], db_dsn: str, tmp_path: Path) -> None:
    # the hook of an install without the driver (the client's): the job end is spooled
    # durably all the same, exit 0
    spool = tmp_path / "spool-bare"
    config = tmp_path / "hook.toml"
    config.write_text(f'dsn = "{db_dsn}"\n[hook]\nspool_dir = "{spool}"\ndb_timeout = 5\n')
    bare = role_bin("client")
    proc = subprocess.run([str(_epilog(bare))], env={**hook_env(8801),
                                                     "SLURM_IO_CONFIG": str(config)},
                          capture_output=True, text=True, cwd="/", timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (spool / "8801.json").is_file()
    # the controller's role: found without JOBIO_PYTHON (PREFIX/bin/python, relative to the
    # script), and its background child stores the job and queues its report
    hook_bin = role_bin("hook")
    assert importable(hook_bin / "python", ("psycopg", "hostlist", *SERVER_ONLY)) == {
        "psycopg", "hostlist"}
    spool = tmp_path / "spool"
    config.write_text(f'dsn = "{db_dsn}"\n[hook]\nspool_dir = "{spool}"\ndb_timeout = 5\n')
    proc = subprocess.run([str(_epilog(hook_bin))], env={**hook_env(8802),
                                                         "SLURM_IO_CONFIG": str(config)},
                          capture_output=True, text=True, cwd="/", timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    wait_until(lambda: 8802 in queue_rows(db_dsn), what="the hook's job in the report queue")
    wait_until(lambda: not list(spool.glob("*.json")), what="the hook's spool to drain")
