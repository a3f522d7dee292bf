"""One request to the jobio service, authenticated by a MUNGE credential bound to it.

The credential's payload is `auth.request_payload(method, target, body)`: the service
refuses it for any other request, and munged refuses it a second time. Every failure (the
service down, a refusal, a credential munged would not make) becomes a ServiceError whose
message is the one line the user sees.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.parse
from pathlib import Path
from typing import Any

from slurm_io import munge
from slurm_io.service.protocol import AUTH_SCHEME, request_payload


class ServiceError(Exception):
    """The request got no answer, or a refusal; str() is the message for the user."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def call(server: str, method: str, path: str, params: list[tuple[str, str]] | None = None,
         *, munge_socket: str | None = None, ca_file: Path | None = None,
         timeout: float = 60.0, credential: str | None = None) -> Any:
    """The decoded JSON answer of `method path?params`. `credential` replaces the one
    minted here (tests send forged or replayed ones)."""
    target = path + ("?" + urllib.parse.urlencode(params) if params else "")
    body = b""
    try:
        url = urllib.parse.urlsplit(server)
        port = url.port
    except ValueError as e:
        raise ServiceError(f"not a jobio service URL: {server!r}: {e}") from e
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ServiceError(f"not a jobio service URL: {server!r} (https://HOST:PORT)")
    if credential is None:
        try:
            credential = munge.encode(request_payload(method, target, body),
                                      socket=munge_socket)
        except munge.MungeError as e:
            raise ServiceError(f"cannot get a MUNGE credential: {e}") from e
    # http.client, not urllib.request: one request, no redirects or proxies to follow, and
    # urllib.request's imports cost every `jobio` on a login node ~10 ms of start-up
    if url.scheme == "https":
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        conn: http.client.HTTPConnection = _HTTPSConnection(
            url.hostname, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(url.hostname, port, timeout=timeout)
    conn._create_connection = _connect  # type: ignore[attr-defined]
    try:
        conn.request(method, url.path.rstrip("/") + target, body=body or None,
                     headers={"Authorization": f"{AUTH_SCHEME} {credential}",
                              "Accept": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    except (OSError, http.client.HTTPException) as e:
        raise ServiceError(f"cannot reach the jobio service at {server}: {e}") from e
    finally:
        conn.close()
    if resp.status != 200:
        raise ServiceError(f"the jobio service refused: "
                           f"{_error_text(resp.status, resp.reason, data)}", resp.status)
    try:
        return json.loads(data)
    except ValueError as e:
        raise ServiceError(f"the jobio service at {server} sent no JSON: {e}") from e


def _connect(address: tuple[str, int], *args: Any) -> socket.socket:
    """socket.create_connection with an ASCII host name as bytes: getaddrinfo encodes a str
    host with the "idna" codec, whose import (encodings.idna, stringprep) cost every client
    call ~2 ms of start-up (issue 25). The TLS check still uses the name as given."""
    host, port = address
    return socket.create_connection(
        (host.encode("ascii") if host.isascii() else host, port), *args)  # type: ignore[arg-type]


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPSConnection whose TLS check gets an ASCII host name as bytes: ssl encodes a str
    server_hostname with the "idna" codec (~1 ms of imports, as in _connect); for an ASCII
    name the bytes are the same and the certificate is checked against the same name."""

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        host = self.host
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=host.encode("ascii") if host.isascii() else host)


def _error_text(status: int, reason: str, data: bytes) -> str:
    try:
        return f"{json.loads(data)['error']} (HTTP {status})"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {status} {reason}"
