"""A `jobio serve` of its own for the hostile-client tests (tests/site/test_service_limits.py,
test_service_fuzz.py), and what those tests do to it: trickling, silent and big-header
connections, credentials minted as a user. Everything on loopback, bounded in count and
time; every connection is closed by the test that opened it."""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from slurm_io.service.protocol import request_payload
from tests.privacy.privacy_db import RUNUSER
from tests.site.conftest import Site, run_as
from tests.site.services import (
    ensure_service_role,
    free_port,
    private_munged,
    running_service,
    self_signed_cert,
)

SERVICE_ACCOUNT = "jobiosvc"
# tight limits, so that the attacks' bounds show in seconds
LIMITS = {"threads": 4, "handshake_timeout": 2.0, "head_timeout": 3.0, "idle_timeout": 5.0,
          "max_per_peer": 24, "max_unauthenticated": 64, "max_ids": 256}


@dataclass
class HostileSite:
    site: Site
    url: str
    port: int
    ca: Path
    sock: str
    log: Path
    client: Path

    def run(self, user: str, *args: str):
        return run_as(user, self.site.jobio, list(args), config=self.client)

    def mint(self, user: str, method: str, target: str, n: int = 1) -> list[str]:
        """`n` credentials for `method target`, minted by munge run as `user`."""
        payload = request_payload(method, target, b"")
        return [subprocess.run([RUNUSER, "-u", user, "--", "munge", "-S", self.sock],
                               input=payload, capture_output=True, check=True
                               ).stdout.decode().strip() for _ in range(n)]

    def tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


@contextmanager
def hostile_site(site: Site, name: str) -> Iterator[HostileSite]:
    ensure_service_role(site.superuser_dsn, SERVICE_ACCOUNT)
    base = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=site.dir))
    base.chmod(0o755)
    cert, key = self_signed_cert(base, SERVICE_ACCOUNT)
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    limits = "".join(f"{k} = {v}\n" for k, v in LIMITS.items())
    with private_munged(base, "munge") as sock:
        cfg = site.config(f"{name}-service",
                          f'dsn = "{site.user_dsn}"\n[munge]\nsocket = "{sock}"\n'
                          f'[service]\nlisten = "127.0.0.1"\ntls_cert = "{cert}"\n'
                          f'tls_key = "{key}"\n{limits}')
        client = site.config(f"{name}-client", f'server = "{url}"\nserver_ca = "{cert}"\n'
                             f'[munge]\nsocket = "{sock}"\n')
        log = base / "service.log"
        with running_service(site.jobio, SERVICE_ACCOUNT, cfg, port, url, cert, log):
            yield HostileSite(site, url, port, cert, sock, log, client)


def trickle(h: HostileSite, data: bytes, every: float, until: float) -> float:
    """Send `data` one byte every `every` s over TLS until `until` (time.monotonic); the
    moment the service cut the connection (or `until` when it never did)."""
    with contextlib.ExitStack() as stack:
        try:
            raw = stack.enter_context(socket.create_connection(("127.0.0.1", h.port)))
            s = stack.enter_context(h.tls().wrap_socket(raw, server_hostname="127.0.0.1"))
        except (OSError, ssl.SSLError):
            return time.monotonic()
        for b in data:
            if time.monotonic() >= until:
                return until
            try:
                s.send(bytes([b]))
                if select.select([s], [], [], every)[0] and not s.recv(4096):
                    return time.monotonic()
            except (OSError, ssl.SSLError):
                return time.monotonic()
        return until


def silent(h: HostileSite, until: float) -> float:
    """A TCP connection that never says anything (no TLS hello); when the service cut it."""
    with socket.create_connection(("127.0.0.1", h.port)) as s:
        while time.monotonic() < until:
            try:
                if select.select([s], [], [], 0.1)[0] and not s.recv(4096):
                    return time.monotonic()
            except OSError:
                return time.monotonic()
        return until


def raw_request(h: HostileSite, head: bytes, *, read_timeout: float = 10) -> bytes:
    """Send `head` over TLS (as far as the service takes it) and return what it answers."""
    with socket.create_connection(("127.0.0.1", h.port), timeout=read_timeout) as raw, \
            h.tls().wrap_socket(raw, server_hostname="127.0.0.1") as s:
        with contextlib.suppress(OSError, ssl.SSLError):
            s.sendall(head)
        out = b""
        with contextlib.suppress(OSError, ssl.SSLError):
            while chunk := s.recv(65536):
                out += chunk
                if b"\r\n\r\n" in out and _complete(out):
                    break
        return out


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0
