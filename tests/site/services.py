"""Real parts of a site for the service tests: private munged daemons, a TLS certificate,
and `jobio serve` running as its own OS account. Each is stopped by its own PID."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.privacy.privacy_db import RUNUSER, _run_admin_tool

MUNGED = "/usr/sbin/munged"


@contextmanager
def private_munged(base: Path, name: str) -> Iterator[str]:
    """A munged of our own (its own key and socket under `base`); yields the socket path."""
    etc, run = base / f"{name}-etc", base / f"{name}-run"
    for d, mode in ((etc, 0o700), (run, 0o755)):
        d.mkdir()
        os.chown(d, pwd.getpwnam("munge").pw_uid, pwd.getpwnam("munge").pw_gid)
        d.chmod(mode)
    key = etc / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chown(key, pwd.getpwnam("munge").pw_uid, pwd.getpwnam("munge").pw_gid)
    key.chmod(0o400)
    sock = str(run / "munge.socket")
    pidfile = run / "munged.pid"
    subprocess.run([RUNUSER, "-u", "munge", "--", MUNGED, f"--socket={sock}",
                    f"--key-file={key}", f"--pid-file={pidfile}",
                    f"--log-file={run / 'munged.log'}", f"--seed-file={run / 'seed'}"],
                   check=True, capture_output=True, timeout=30)
    try:
        for _ in range(100):
            cred = subprocess.run(["munge", "-S", sock, "-n"], capture_output=True, check=False)
            if cred.returncode == 0:
                break
            time.sleep(0.1)
        yield sock
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)


def self_signed_cert(base: Path, owner: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1/localhost and its key (readable by `owner`)."""
    cert, key = base / "service.crt", base / "service.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    os.chown(key, pwd.getpwnam(owner).pw_uid, -1)
    key.chmod(0o400)
    cert.chmod(0o644)
    return cert, key


def ensure_service_account(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        _run_admin_tool(["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", name],
                        ok_codes=(0, 9))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def health_probe(url: str, ca: Path | None, netns: str | None = None) -> bool:
    """Whether the service answers /v1/health (from inside `netns` when given)."""
    if netns:
        code = ("import ssl, sys, urllib.request\n"
                f"ctx = ssl.create_default_context(cafile={str(ca)!r}) if {bool(ca)} else None\n"
                f"urllib.request.urlopen({url + '/v1/health'!r}, timeout=2, context=ctx)\n")
        return subprocess.run(["ip", "netns", "exec", netns, "/usr/bin/python3", "-c", code],
                              capture_output=True, check=False).returncode == 0
    import ssl

    ctx = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(f"{url}/v1/health", timeout=2, context=ctx):
            return True
    except OSError:
        return False


@contextmanager
def running_service(jobio: Path, account: str, config: Path, port: int, url: str,
                    ca: Path | None, log: Path, *, netns: str | None = None,
                    probe_netns: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`jobio serve` as OS account `account` (in network namespace `netns`), until the block
    ends; ready once /v1/health answers (asked from `probe_netns`)."""
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "SLURM_IO_CONFIG": str(config)}
    prefix = ["ip", "netns", "exec", netns] if netns else []
    with open(log, "wb") as out:
        proc = subprocess.Popen([*prefix, RUNUSER, "-u", account, "--", str(jobio), "serve",
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd="/", start_new_session=True)
    try:
        for _ in range(300):
            if health_probe(url, ca, probe_netns):
                break
            if proc.poll() is not None:
                raise RuntimeError(f"jobio serve exited: {log.read_text()}")
            time.sleep(0.1)
        else:
            raise RuntimeError(f"jobio serve did not answer: {log.read_text()}")
        yield proc
    finally:
        stop_session(proc)


def stop_session(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process started in its own session, by its PID: TERM, then KILL after 20 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def ensure_service_role(superuser_dsn: str, account: str) -> None:
    """The service's OS account and its database role (`LOGIN IN ROLE jobio_service`, as
    docs/deploy.md creates it), made once per site."""
    import psycopg
    from psycopg import sql

    ensure_service_account(account)
    with psycopg.connect(superuser_dsn, autocommit=True) as conn:
        if conn.execute("SELECT FROM pg_roles WHERE rolname = %s",
                        (account,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE jobio_service").format(
                sql.Identifier(account)))
