"""A PostgreSQL reached over TCP the way collectors on other hosts reach the site's server:
TLS with a certificate from the test's own CA, scram-sha-256 passwords, nothing else
(`hostssl ... scram-sha-256`, every other TCP connection rejected). And a TCP relay in front
of it whose link can be cut (refused) or turned into a black hole (accepts, never answers),
for network faults. Stopped by its own PIDs."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import select
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from psycopg.conninfo import make_conninfo

from slurm_io.store.embedded import SERVICE_ACCOUNT, find_bindir
from tests.privacy.privacy_db import RUNUSER

SUPERUSER = "slurmio"


def make_ca_and_server_cert(d: Path, owner: str, ips: tuple[str, ...] = ()
                            ) -> tuple[Path, Path, Path]:
    """(ca.crt, server.crt, server.key): a CA, and a certificate it signs for localhost
    (and `ips`)."""
    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
        "/CN=slurm-io test CA", "-keyout", "ca.key", "-out", "ca.crt")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout",
        "server.key", "-out", "server.csr")
    san = ",".join(["DNS:localhost", "IP:127.0.0.1", *(f"IP:{ip}" for ip in ips)])
    (d / "san.ext").write_text(f"subjectAltName={san}\n")
    ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.crt")
    user = pwd.getpwnam(owner)
    for name in ("server.crt", "server.key"):
        os.chown(d / name, user.pw_uid, user.pw_gid)
    (d / "server.key").chmod(0o600)
    return d / "ca.crt", d / "server.crt", d / "server.key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tls_postgres(base: Path, *, netns: str | None = None, listen: str = "127.0.0.1",
                 clients: str = "127.0.0.1/32", also_for: tuple[str, ...] = ()
                 ) -> Iterator[tuple[str, Path, int]]:
    """(superuser DSN over TLS, CA file, port) of a fresh server under `base`, listening on
    `listen` (comma-separated addresses, each in the certificate); in network
    namespace `netns` (then the DSN is over its unix socket: root may log in as the
    superuser by peer authentication, and every local account as its own role)."""
    acct = pwd.getpwnam(SERVICE_ACCOUNT)
    d = base / "tlspg"
    d.mkdir()
    os.chown(d, acct.pw_uid, acct.pw_gid)
    d.chmod(0o755)
    addresses = tuple(a.strip() for a in listen.split(",") if a.strip() != "127.0.0.1")
    ca, cert, key = make_ca_and_server_cert(d, SERVICE_ACCOUNT, addresses + also_for)
    password = secrets.token_hex(16)
    pwfile = d / "pw"
    pwfile.write_text(password + "\n")
    os.chown(pwfile, acct.pw_uid, acct.pw_gid)
    pwfile.chmod(0o600)
    data = d / "data"
    bindir = find_bindir()

    def as_postgres(*cmd: str) -> None:
        prefix = ["ip", "netns", "exec", netns] if netns else []
        subprocess.run([*prefix, RUNUSER, "-u", SERVICE_ACCOUNT, "--", *cmd], check=True,
                       capture_output=True, cwd=d, timeout=120)

    as_postgres(str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--pwfile",
                str(pwfile), "--auth-local=reject", "--auth-host=scram-sha-256", "-E", "UTF8")
    pwfile.unlink()
    port = free_port()
    with open(data / "postgresql.conf", "a") as f:
        f.write(f"listen_addresses = '{listen}'\nport = {port}\n"
                f"unix_socket_directories = '{d}'\nssl = on\nssl_cert_file = '{cert}'\n"
                f"ssl_key_file = '{key}'\npassword_encryption = 'scram-sha-256'\n"
                "fsync = off\n")
    local = ""
    if netns:
        local = (f"local all {SUPERUSER} peer map=admin\n"
                 "local all all peer\n")
        (data / "pg_ident.conf").write_text(f"admin root {SUPERUSER}\n")
    (data / "pg_hba.conf").write_text(
        local + f"hostssl all all {clients} scram-sha-256\n"
        f"host    all all {clients} reject\n")
    as_postgres(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(d / "log"), "-w", "start")
    try:
        if netns:
            yield make_conninfo("", host=str(d), port=port, dbname="postgres",
                                user=SUPERUSER), ca, port
        else:
            yield (make_conninfo("", host="localhost", hostaddr="127.0.0.1", port=port,
                                 dbname="postgres", user=SUPERUSER, password=password,
                                 sslmode="verify-full", sslrootcert=str(ca)), ca, port)
    finally:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)  # smart shutdown of the postmaster we started


class Relay:
    """127.0.0.1:port -> 127.0.0.1:target, in threads. `mode`: "up" forwards, "down" refuses
    new connections (the listener is closed), "blackhole" accepts and never answers."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self.mode = "up"
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self.set("up")

    def set(self, mode: str) -> None:
        self.mode = mode
        if mode == "down":
            if self._listener is not None:
                self._listener.close()
                self._listener = None
            return
        if self._listener is None:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", self.port))
            s.listen(16)
            self._listener = s
            threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = s.accept()
            except OSError:
                return
            if self.mode == "blackhole":
                self._held.append(conn)  # never answered, never closed until the end
                continue
            threading.Thread(target=self._pipe, args=(conn,), daemon=True).start()

    def _pipe(self, a: socket.socket) -> None:
        try:
            b = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            a.close()
            return
        with a, b, contextlib.suppress(OSError):  # a reset end closes both
            while True:
                r, _, _ = select.select([a, b], [], [], 1.0)
                if self.mode != "up" or self._stop.is_set():
                    return  # the link is cut: both ends see a reset/EOF
                for src in r:
                    data = src.recv(65536)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)

    def close(self) -> None:
        self._stop.set()
        self.set("down")
        for c in self._held:
            c.close()
