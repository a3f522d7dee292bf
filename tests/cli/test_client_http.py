"""The client's one request (slurm_io/client/http.py, http.client): every failure is one
ServiceError line. A real HTTP server on loopback plays a service that refuses or answers
with something that is not JSON; no munged is needed (the credential is given)."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from slurm_io.client.http import ServiceError, call


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
