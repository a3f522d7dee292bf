"""The client's one request (slurm_io/client/http.py, http.client): every failure is one
ServiceError line. A real HTTP server on loopback plays a service that refuses or answers
with something that is not JSON; no munged is needed (the credential is given)."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_io.client.http import ServiceError, call
from slurm_io.service.protocol import request_payload


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/v1/show"):
            body, status = json.dumps({"schema": "slurm-io/1", "status": 401,
                                       "error": "MUNGE credential refused: Expired"}), 401
        elif self.path.startswith("/v1/usage"):
            body, status = "<html>a proxy's page</html>", 200
        else:
            body, status = json.dumps({"seen": self.path,
                                       "auth": self.headers["Authorization"]}), 200
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_request_carries_the_target_and_the_credential(server: str) -> None:
    doc = call(server + "/", "GET", "/v1/mail", [("user", "a b")], credential="MUNGE:c:")
    assert doc == {"seen": "/v1/mail?user=a+b", "auth": "MUNGE MUNGE:c:"}


def test_a_refusal_is_the_services_own_message(server: str) -> None:
    with pytest.raises(ServiceError) as e:
        call(server, "GET", "/v1/show", [("jobid", "1")], credential="x")
    assert e.value.status == 401
    assert str(e.value) == ("the jobio service refused: MUNGE credential refused: Expired "
                            "(HTTP 401)")


def test_an_answer_that_is_not_json_says_so(server: str) -> None:
    with pytest.raises(ServiceError, match=r"^the jobio service at http://\S+ sent no JSON"):
        call(server, "GET", "/v1/usage", credential="x")


def test_no_service_listening_is_cannot_reach() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServiceError, match=r"^cannot reach the jobio service at .*refused"):
        call(f"http://127.0.0.1:{port}", "GET", "/v1/health", credential="x")


@pytest.mark.parametrize("url", ["ftp://db1:8453", "db1:8453", "https://db1:port"])
def test_a_server_setting_that_is_not_a_url_says_so_before_asking_munged(url: str) -> None:
    with pytest.raises(ServiceError, match=r"^not a jobio service URL: "):
        call(url, "GET", "/v1/health", munge_socket="/nonexistent/munge.socket")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, Path]]:
    """A real TLS server on loopback with a certificate for `localhost` only; (port, its
    certificate, a certificate of another name)."""
    d = tmp_path_factory.mktemp("tls")
    for name in ("localhost", "other.example"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                        f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}",
                        "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt")],
                       check=True, capture_output=True)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "localhost.crt", d / "localhost.key")
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1], d / "localhost.crt", d / "other.example.crt"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_tls_checks_the_host_name_it_was_given(tls_server: tuple[int, Path, Path]) -> None:
    """The TLS check gets an ASCII host name as bytes (no idna import, client/http.py): the
    certificate is still checked against that name, and a name it does not carry fails."""
    port, cert, other = tls_server
    doc = call(f"https://localhost:{port}", "GET", "/v1/mail", ca_file=cert, credential="c")
    assert doc == {"seen": "/v1/mail", "auth": "MUNGE c"}
    not_its_name = r"^cannot reach .*mismatch, certificate is not valid for '127.0.0.1'"
    with pytest.raises(ServiceError, match=not_its_name):
        call(f"https://127.0.0.1:{port}", "GET", "/v1/mail", ca_file=cert, credential="c")
    with pytest.raises(ServiceError, match=r"^cannot reach .*certificate verify failed"):
        call(f"https://localhost:{port}", "GET", "/v1/mail", ca_file=other, credential="c")


@pytest.mark.parametrize("body", [b"", b"{}", bytes(range(256))])
def test_a_credentials_payload_carries_the_bodys_sha256(body: bytes) -> None:
    """request_payload's digest of an empty body is a constant (no hashlib in client mode's
    start-up): the same bytes as hashlib's."""
    digest = hashlib.sha256(body).hexdigest()
    assert request_payload("get", "/v1/show?jobid=1", body) == (
        f"slurm-io/1\nGET\n/v1/show?jobid=1\n{digest}".encode())
