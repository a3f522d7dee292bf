"""`jobio web`: the web view on a login node without Open OnDemand, for one user.

The server is the standard library's wsgiref with a thread per request: no new dependency
on a login node (`slurm-io[client]` is click alone), and what it serves is one person's
browser on localhost, a few requests a minute. It is bound to 127.0.0.1 only and every
request needs the token (app.py); its request log leaves the query string out, so that the
token printed once is never written anywhere else. Under OOD, Passenger serves the app
instead (ood/passenger_wsgi.py).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socketserver
from collections.abc import Callable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slurm_io.web.app import WebApp

log = logging.getLogger(__name__)
LISTEN = "127.0.0.1"


class ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    """One log line per request, without its query string (the token may be in it)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        log.info("%s %s %s", self.command, self.path.split("?", 1)[0][:200], code)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def new_token() -> str:
    return secrets.token_urlsafe(32)


def serve(app: WebApp, port: int, announce: Callable[[str], None]) -> None:
    """Serve `app` on 127.0.0.1:`port` (0: a free one) until interrupted; `announce` gets the
    address with the token, once."""
    with make_server(LISTEN, port, app, server_class=ThreadingServer,
                     handler_class=QuietHandler) as httpd:
        real = httpd.server_address[1]
        announce(f"http://{LISTEN}:{real}/?token={app.token}")
        with contextlib.suppress(KeyboardInterrupt):
            httpd.serve_forever()
