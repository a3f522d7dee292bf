"""`jobio serve` in the soak (bench/soak.py), answering a client loop as the site tests run
them (tests/site/test_service.py): its own munged (tests/site/services.private_munged), the
service as its own OS account (`jobiosvc`, a database role in jobio_service only) reading
the soak's database over the embedded server's socket with peer authentication, and the
client, `jobio --server URL JOBID`, run as carol (an OS user in the admin group, her role
made by `jobio db users`), MUNGE-authenticated.

Why the system Python with the checkout on PYTHONPATH: the accounts cannot read the
worktree's venv interpreter (it lives under /root); /usr/bin/python3 is the same minor
release, so the venv's site-packages serve it (the hook tests do the same, tests/e2e).
Plain HTTP on 127.0.0.1: TLS is the site tests' subject, not the soak's.
"""

from __future__ import annotations

import contextlib
import pwd
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from tests.public_dirs import public_tmp_dir
from tests.site.services import ensure_service_role, free_port, private_munged

REPO = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"
ACCOUNT = "jobiosvc"
CLIENT = "carol"


class Serve:
    """The running service and what the client loop needs to ask it."""

    def __init__(self, proc: subprocess.Popen[bytes], base: Path, client_config: Path,
                 env: dict[str, str]) -> None:
        self.proc, self.base, self.client_config, self.env = proc, base, client_config, env

    def ask(self, job: int) -> list[str]:
        """The client's argv for one question (run as `CLIENT` by `as_client`)."""
        return [SYSTEM_PYTHON, "-P", "-m", "slurm_io.cli", "--config", str(self.client_config),
                str(job)]


def as_client() -> dict[str, object]:
    """Popen's arguments that run a command as the client's OS account."""
    pw = pwd.getpwnam(CLIENT)
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": [], "cwd": "/"}


def _env(config: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "SLURM_IO_CONFIG": str(config),
            "PYTHONPATH": f"{REPO}:{sysconfig.get_paths()['purelib']}"}


@contextlib.contextmanager
def serving(superuser_dsn: str, jobio: list[str], env: dict[str, str], log: Path
            ) -> Iterator[Serve]:
    """The service up (until the block ends) and carol's role made."""
    ensure_service_role(superuser_dsn, ACCOUNT)
    users = subprocess.run([*jobio, "db", "users", CLIENT], env=env, capture_output=True,
                           text=True, check=False)
    if users.returncode != 0:
        raise SystemExit(f"jobio db users {CLIENT}: {users.stderr}")
    params = psycopg.conninfo.conninfo_to_dict(superuser_dsn)
    params["user"] = ACCOUNT
    dsn = psycopg.conninfo.make_conninfo(**params)
    port = free_port()
    with public_tmp_dir("slurm-io-soak-") as base, private_munged(base, "munge") as sock:
        cfg = base / "service.toml"
        cfg.write_text(f'dsn = "{dsn}"\n[munge]\nsocket = "{sock}"\n'
                       f'[service]\nlisten = "127.0.0.1"\nport = {port}\n')
        client = base / "client.toml"
        client.write_text(f'server = "http://127.0.0.1:{port}"\n[munge]\nsocket = "{sock}"\n')
        for f in (cfg, client):
            f.chmod(0o644)
        pw = pwd.getpwnam(ACCOUNT)
        with log.open("wb") as out:
            proc = subprocess.Popen([SYSTEM_PYTHON, "-P", "-m", "slurm_io.cli", "serve"],
                                    env=_env(cfg), stdout=out, stderr=subprocess.STDOUT,
                                    user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                                    cwd="/")
        try:
            _wait_health(f"http://127.0.0.1:{port}/v1/health", proc, log)
            yield Serve(proc, base, client, _env(client))
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _wait_health(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"jobio serve did not answer: {log.read_text()}") from None
            time.sleep(0.2)
