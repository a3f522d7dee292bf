"""The service as a WSGI application: routing, authentication, JSON, errors.

Every request but `GET /v1/health` carries a MUNGE credential (auth.py); its uid picks the
database role the request runs as (handlers.as_user). Answers are JSON documents with a
"schema" member (protocol.SCHEMA); refusals are `{"schema", "error", "status"}` with the HTTP
status: 400 bad request, 401 credential, 403 no role for that uid, 404/405 no such call,
413 body or answer too big, 503 database unreachable or too busy. One log line per request
(uid, status, milliseconds), its request data escaped (`log_text`).

Two steps, so that the front end (front.py) can share workers fairly between uids:
`prepare` routes, parses the parameters into a typed request (requests.py) and checks the
credential, touching no database; `answer` runs a prepared request as the uid's role.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slurm_io import munge, text
from slurm_io.config import Config
from slurm_io.service import handlers
from slurm_io.service.auth import ReplayCache, Unauthorized, authenticate
from slurm_io.service.handlers import Refused
from slurm_io.service.protocol import SCHEMA
from slurm_io.service.requests import (
    BadRequest,
    DailyRequest,
    JobsRequest,
    MailRequest,
    ReportRequest,
    Request,
    ShowRequest,
    TopRequest,
    parse,
)
from slurm_io.store.errors import ConnectionLost, DatabaseError

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)
MAX_BODY = 65536
STATUS_TEXT = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
               404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
               409: "Conflict",
               413: "Payload Too Large", 414: "URI Too Long",
               431: "Request Header Fields Too Large",
               500: "Internal Server Error", 503: "Service Unavailable"}
ROUTES: dict[str, tuple[str, ...]] = {"/v1/show": ("GET",), "/v1/report": ("GET",),
                                      "/v1/mail": ("GET", "POST"), "/v1/usage": ("GET",),
                                      "/v1/jobs": ("GET",), "/v1/top": ("GET",),
                                      "/v1/daily": ("GET",)}


@dataclass(frozen=True)
class Incoming:
    """A complete request as read from the wire (the front end caps every field)."""

    method: str
    path: str  # percent-decoded
    query: str
    target: str  # path and query exactly as sent (what the credential names)
    authorization: str | None
    body: bytes


@dataclass(frozen=True)
class Prepared:
    """A request after `prepare`: either its final answer, or a uid and a typed request."""

    incoming: Incoming
    t0: float
    uid: int | None = None
    request: Request | None = None
    final: tuple[int, dict[str, Any]] | None = None


def log_text(value: str, limit: int = 200) -> str:
    """Request data as it may appear in the log: the text rule (slurm_io/text.py) with every
    control character escaped, newlines and tabs included, so that no request can write a
    line of its own into the log; shortened to `limit` characters."""
    short = value[:limit] + ("..." if len(value) > limit else "")
    return text.display(short).replace("\n", "\\x0a").replace("\t", "\\x09")


def refusal(status: int, message: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "error": message, "status": status}


class ServiceApp:
    """The service's logic; one database connection per worker thread, opened on demand."""

    def __init__(self, cfg: Config, connect: Callable[[], psycopg.Connection],
                 decode: Callable[[str], munge.Credential] | None = None,
                 connect_primary: Callable[[], psycopg.Connection] | None = None) -> None:
        self.cfg = cfg
        self._connect = connect
        # writes (a user's mail choice) when `connect` reads a standby (`read_dsn`)
        self._connect_primary = connect_primary
        self._decode = decode or (lambda c: munge.decode(c, socket=cfg.munge_socket))
        self._replay = ReplayCache()
        self._local = threading.local()

    def _conn(self, write: bool = False) -> psycopg.Connection:
        """This thread's connection: to the primary for a write when reads go to a standby."""
        slot = "primary" if write and self._connect_primary is not None else "conn"
        conn = getattr(self._local, slot, None)
        if conn is None or conn.closed or conn.broken:
            setattr(self._local, slot, None)
            try:
                conn = (self._connect_primary if slot == "primary" else self._connect)()
                setattr(self._local, slot, conn)
            except (DatabaseError, RuntimeError, OSError) as e:
                raise Refused(503, f"the service cannot reach its database: "
                              f"{str(e).strip().splitlines()[0] if str(e) else e}") from e
        return conn

    def prepare(self, req: Incoming) -> Prepared:
        """Route, parse and authenticate (munged, no database): no answer needs a worker
        before its credential is accepted."""
        t0 = time.perf_counter()
        try:
            if req.path == "/v1/health":
                return Prepared(req, t0, final=(200, {"schema": SCHEMA, "status": "ok"}))
            if req.path not in ROUTES:
                raise Refused(404, f"no such call: {log_text(req.path, 80)}")
            if req.method not in ROUTES[req.path]:
                raise Refused(405, f"{log_text(req.method, 20)} not allowed on {req.path}")
            if len(req.body) > MAX_BODY:
                raise Refused(413, f"body over {MAX_BODY} bytes")
            request = parse(req.path, req.method, req.query, max_ids=self.cfg.service_max_ids)
            cred = authenticate(req.authorization, req.method, req.target, req.body,
                                decode=self._decode, replay=self._replay,
                                max_ttl=self.cfg.service_max_ttl)
            return Prepared(req, t0, uid=cred.uid, request=request)
        except BadRequest as e:
            return Prepared(req, t0, final=(400, refusal(400, str(e))))
        except Unauthorized as e:
            return Prepared(req, t0, final=(401, refusal(401, str(e))))
        except Refused as e:
            return Prepared(req, t0, final=(e.status, refusal(e.status, str(e))))

    def answer(self, p: Prepared) -> tuple[int, bytes, float]:
        """(status, JSON body, milliseconds) of a prepared request; logs its line."""
        status, doc = p.final if p.final is not None else self._run(p)
        out = json.dumps(doc, sort_keys=True).encode()
        if len(out) > self.cfg.service_max_answer:
            status, doc = 413, refusal(413, f"the answer is over {self.cfg.service_max_answer} "
                                       f"bytes: ask for fewer jobs at once")
            out = json.dumps(doc, sort_keys=True).encode()
        ms = 1000 * (time.perf_counter() - p.t0)
        log.info("%s %s uid=%s %d %.1f ms", log_text(p.incoming.method, 20),
                 log_text(p.incoming.path), p.uid, status, ms)
        return status, out, ms

    def _run(self, p: Prepared) -> tuple[int, dict[str, Any]]:
        assert p.uid is not None and p.request is not None
        try:
            return 200, self._dispatch(p.request, p.uid)
        except Refused as e:
            return e.status, refusal(e.status, str(e))
        except ConnectionLost as e:
            self._local.conn = self._local.primary = None
            return 503, refusal(503, f"database error: {log_text(str(e).strip(), 200)}")
        except Exception:
            log.exception("%s %s failed", log_text(p.incoming.method, 20),
                          log_text(p.incoming.path))
            return 500, refusal(500, "internal error (see the service's log)")

    def _dispatch(self, request: Request, uid: int) -> dict[str, Any]:
        write = isinstance(request, MailRequest) and request.enabled is not None
        with handlers.as_user(self._conn(write), uid) as conn:
            if isinstance(request, ShowRequest):
                return handlers.show(conn, self.cfg, request)
            if isinstance(request, ReportRequest):
                return handlers.report(conn, self.cfg, request)
            if isinstance(request, MailRequest):
                return handlers.mail(conn, self.cfg, request, uid)
            if isinstance(request, JobsRequest):
                return handlers.jobs(conn, self.cfg, request, uid)
            if isinstance(request, TopRequest):
                return handlers.top(conn, self.cfg, request)
            if isinstance(request, DailyRequest):
                return handlers.daily(conn, request)
            return handlers.usage(conn, self.cfg, request)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        """WSGI, for embedding the app in another server (the front end does not use it)."""
        path = environ.get("PATH_INFO", "")
        query = environ.get("QUERY_STRING", "")
        try:
            n = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            n = MAX_BODY + 1
        body = environ["wsgi.input"].read(min(n, MAX_BODY + 1)) if n > 0 else b""
        target = environ.get("REQUEST_URI") or (urllib.parse.quote(path)
                                                + (f"?{query}" if query else ""))
        req = Incoming(environ.get("REQUEST_METHOD", "GET"), path, query, target,
                       environ.get("HTTP_AUTHORIZATION"), body)
        status, out, ms = self.answer(self.prepare(req))
        start_response(f"{status} {STATUS_TEXT.get(status, '')}",
                       [("Content-Type", "application/json"),
                        ("Content-Length", str(len(out))),
                        ("Server-Timing", f"app;dur={ms:.2f}")])
        return [out]
