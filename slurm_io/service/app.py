"""The service as a WSGI application: routing, authentication, JSON, errors.

Every request but `GET /v1/health` carries a MUNGE credential (auth.py); its uid picks the
database role the request runs as (handlers.as_user). Answers are JSON documents with a
"schema" member (protocol.SCHEMA); refusals are `{"schema", "error", "status"}` with the HTTP
status: 400 bad request, 401 credential, 403 no role for that uid, 404/405 no such call,
503 database unreachable. One log line per request (uid, status, milliseconds).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

import psycopg

from slurm_io import munge
from slurm_io.config import Config
from slurm_io.service import handlers
from slurm_io.service.auth import ReplayCache, Unauthorized, authenticate
from slurm_io.service.handlers import Refused
from slurm_io.service.protocol import SCHEMA

log = logging.getLogger(__name__)
MAX_BODY = 65536
STATUS_TEXT = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
               404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large",
               500: "Internal Server Error", 503: "Service Unavailable"}
ROUTES: dict[str, tuple[str, ...]] = {"/v1/show": ("GET",), "/v1/report": ("GET",),
                                      "/v1/mail": ("GET", "POST"), "/v1/usage": ("GET",)}


class ServiceApp:
    """WSGI callable; one database connection per worker thread, opened on demand."""

    def __init__(self, cfg: Config, connect: Callable[[], psycopg.Connection],
                 decode: Callable[[str], munge.Credential] | None = None) -> None:
        self.cfg = cfg
        self._connect = connect
        self._decode = decode or (lambda c: munge.decode(c, socket=cfg.munge_socket))
        self._replay = ReplayCache()
        self._local = threading.local()

    def _conn(self) -> psycopg.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._local.conn = None
            try:
                conn = self._local.conn = self._connect()
            except (psycopg.Error, RuntimeError, OSError) as e:
                raise Refused(503, f"the service cannot reach its database: "
                              f"{str(e).strip().splitlines()[0] if str(e) else e}") from e
        return conn

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        t0 = time.perf_counter()
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "")
        query = environ.get("QUERY_STRING", "")
        target = environ.get("REQUEST_URI") or (urllib.parse.quote(path)
                                                + (f"?{query}" if query else ""))
        uid: int | None = None
        try:
            body = _body(environ)
            if path == "/v1/health":
                doc: dict[str, Any] = {"schema": SCHEMA, "status": "ok"}
            else:
                if path not in ROUTES:
                    raise Refused(404, f"no such call: {path}")
                if method not in ROUTES[path]:
                    raise Refused(405, f"{method} not allowed on {path}")
                cred = authenticate(environ.get("HTTP_AUTHORIZATION"), method, target, body,
                                    decode=self._decode, replay=self._replay,
                                    max_ttl=self.cfg.service_max_ttl)
                uid = cred.uid
                doc = self._dispatch(path, method, cred.uid,
                                     urllib.parse.parse_qs(query, keep_blank_values=True))
            status = 200
        except Unauthorized as e:
            status, doc = 401, {"schema": SCHEMA, "error": str(e), "status": 401}
        except Refused as e:
            status, doc = e.status, {"schema": SCHEMA, "error": str(e), "status": e.status}
        except psycopg.OperationalError as e:
            self._local.conn = None
            status, doc = 503, {"schema": SCHEMA, "status": 503,
                                "error": f"database error: {str(e).strip()[:200]}"}
        except Exception:
            log.exception("%s %s failed", method, path)
            status, doc = 500, {"schema": SCHEMA, "status": 500,
                                "error": "internal error (see the service's log)"}
        out = json.dumps(doc, sort_keys=True).encode()
        ms = 1000 * (time.perf_counter() - t0)
        log.info("%s %s uid=%s %d %.1f ms", method, path, uid, status, ms)
        start_response(f"{status} {STATUS_TEXT.get(status, '')}",
                       [("Content-Type", "application/json"),
                        ("Content-Length", str(len(out))),
                        ("Server-Timing", f"app;dur={ms:.2f}")])
        return [out]

    def _dispatch(self, path: str, method: str, uid: int, params: dict[str, list[str]]
                  ) -> dict[str, Any]:
        with handlers.as_user(self._conn(), uid) as conn:
            if path == "/v1/show":
                return handlers.show(conn, self.cfg, params)
            if path == "/v1/report":
                return handlers.report(conn, self.cfg, params)
            if path == "/v1/mail":
                return handlers.mail(conn, self.cfg, params, uid, method)
            return handlers.usage(conn, self.cfg, params)


def _body(environ: dict[str, Any]) -> bytes:
    try:
        n = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError as e:
        raise Refused(400, "bad Content-Length") from e
    if n > MAX_BODY:
        raise Refused(413, f"body over {MAX_BODY} bytes")
    return environ["wsgi.input"].read(n) if n > 0 else b""
