"""Where a person or slurmctld waits, no heavy library is imported (issue 25).

The client mode of login nodes (`jobio --server URL JOBID`) and the job-end hook start
against the floor of what they need (click, ssl, http.client; the interpreter alone): a
database driver, a template engine, plotting, a TUI or an HTTP server would each add tens
of milliseconds to every call. Checked from `-X importtime`'s log (PYTHONPROFILEIMPORTTIME,
so that it passes through `jobio`'s script and the hook's wrapper) of a real run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JOBIO = str(Path(sys.executable).parent / "jobio")
HEAVY = {"psycopg", "jinja2", "matplotlib", "urwid", "cheroot", "h11"}
TESTBED_MUNGE = "/var/lib/slurm-testbed/run/munge/munge.socket.2"


def imported(stderr: str) -> set[str]:
    """Every module named in an import-time log."""
    names = {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2}
    assert names, stderr[-2000:]
    return names


def top_level(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def test_client_mode_imports_no_heavy_library(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on: the request is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = tmp_path / "client.toml"
    cfg.write_text(f'[munge]\nsocket = "{TESTBED_MUNGE}"\n')
    env = {**os.environ, "SLURM_IO_CONFIG": str(cfg), "PYTHONPROFILEIMPORTTIME": "1"}
    env.pop("SLURM_IO_TRACEBACK", None)  # a refused connection is one line, as for a person
    proc = subprocess.run([JOBIO, "--server", f"http://127.0.0.1:{port}", "12345"], env=env,
                          capture_output=True, text=True, timeout=60, check=False, cwd="/")
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, errors
    names = imported(proc.stderr)
    assert {"slurm_io.client.http", "slurm_io.munge"} <= names  # the client path ran
    assert not top_level(names) & HEAVY, sorted(top_level(names) & HEAVY)


def test_hook_imports_no_heavy_library(tmp_path: Path) -> None:
    """The hook as slurmctld runs it (epilog/jobio-epilog, SLURM_* only), database down: the
    record is spooled, and the hook process imported none of them (its forked child, which
    imports psycopg to reach the database, logs to /dev/null)."""
    spool = tmp_path / "spool"
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'dsn = "host=/nonexistent/pg dbname=x"\n[hook]\nspool_dir = "{spool}"\n'
                   "db_timeout = 2\n")
    env = {"SLURM_JOB_ID": "4242", "SLURM_JOBID": "4242", "SLURM_JOB_UID": "1001",
           "SLURM_JOB_USER": "alice", "SLURM_JOB_NODELIST": "node[03-04]",
           "SLURM_CLUSTER_NAME": "lab", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
           "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_ACCOUNT": "research",
           "JOBIO_PYTHON": sys.executable, "SLURM_IO_CONFIG": str(cfg),
           "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.run([str(REPO / "epilog" / "jobio-epilog")], env=env, cwd="/",
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0
    assert (spool / "4242.json").is_file()  # the job end is recorded
    names = imported(proc.stderr)
    assert not top_level(names) & HEAVY, sorted(top_level(names) & HEAVY)
