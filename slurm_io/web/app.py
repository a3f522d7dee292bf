"""The web view as a WSGI application: one user's jobs, run as that user.

Open OnDemand runs it through Passenger inside the user's own nginx (ood/passenger_wsgi.py):
OOD has authenticated the user, and the process is theirs. `jobio web` runs the same app by
hand on a login node (slurm_io/web/server.py), where any local user could reach a localhost
port: there a random token guards it (as Jupyter does). The token comes once in the URL
printed at start, is swapped at once for an HttpOnly, SameSite=Strict cookie and removed
from the address (303), and is compared in constant time; a wrong or missing one is a 403.

Routes (GET and HEAD only): `/` the user's jobs (sort, filters and period in the query
string), `/job/JOBID` one job, `/job/JOBID/live` its live part, `/static/app.css|app.js`;
for members of the admin group `/admin/top?by=&sort=` and `/admin/daily?date=`.
"""

from __future__ import annotations

import hmac
import http.cookies
import logging
import os
import pwd
import time
import urllib.parse
from collections.abc import Callable, Iterable
from datetime import date, timedelta
from typing import Any

from slurm_io.config import Config
from slurm_io.jobs.spec import JOBID_ARG
from slurm_io.mail.view_model import Thresholds
from slurm_io.web import admin, assets, jobpage, pages
from slurm_io.web.listing import parse_query
from slurm_io.web.source import Source, SourceError

log = logging.getLogger(__name__)
COOKIE = "jobio_web"
HEADERS = [("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src "
            "'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'self'"),
           ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
           ("Cache-Control", "no-store")]
Response = tuple[int, str, bytes, list[tuple[str, str]]]
STATUS = {200: "200 OK", 303: "303 See Other", 400: "400 Bad Request", 403: "403 Forbidden",
          404: "404 Not Found", 405: "405 Method Not Allowed", 502: "502 Bad Gateway"}


def current_user() -> str:
    """The account this process runs as: whose jobs the view shows."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


class WebApp:
    """The WSGI callable. `token`: required on every request (jobio web); None under OOD."""

    def __init__(self, cfg: Config, *, user: str | None = None, token: str | None = None,
                 cache_seconds: float = 10.0, refresh_seconds: int = 30) -> None:
        self.cfg = cfg
        self.user = user or current_user()
        self.token = token
        self.refresh = refresh_seconds
        self.source = Source(cfg, self.user, ttl=cache_seconds)
        # shows the admin pages; what they hold is the database's decision (admin.py)
        self.admin = admin.in_group(self.user, cfg.admin_group)
        self.thresholds = Thresholds(
            kb_ops=cfg.mail_advice_kb_ops, small_share=cfg.mail_advice_small_share,
            min_requests=cfg.mail_advice_min_requests,
            metadata_per_node_hour=cfg.mail_advice_metadata_per_node_hour,
            min_metadata_ops=cfg.mail_advice_min_metadata_ops)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        t0 = time.perf_counter()
        status, ctype, body, extra = self.respond(environ)
        ms = 1000 * (time.perf_counter() - t0)
        headers = [("Content-Type", ctype), ("Content-Length", str(len(body))),
                   ("Server-Timing", f"app;dur={ms:.2f}"), *HEADERS, *extra]
        start_response(STATUS.get(status, f"{status} Error"), headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]

    def respond(self, environ: dict[str, Any]) -> Response:
        base = environ.get("SCRIPT_NAME", "").rstrip("/")
        path = environ.get("PATH_INFO", "") or "/"
        try:
            query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", ""),
                                                keep_blank_values=True, max_num_fields=50))
        except ValueError:  # more than 50 fields: no page of this app makes that
            return self._html(400, base, "Bad address", "Too many parameters.")
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return self._html(405, base, "Not allowed", "This view only reads: GET.")
        if self.token is not None:
            refused = self._check_token(environ, query, base, path)
            if refused is not None:
                return refused
        if path == "/static/app.css":
            return 200, "text/css; charset=utf-8", assets.CSS.encode(), []
        if path == "/static/app.js":
            return 200, "text/javascript; charset=utf-8", assets.JS.encode(), []
        try:
            nav = self._nav(base)
            if path == "/":
                q = parse_query(query)
                doc = self.source.jobs(q.start, q.end)
                return self._ok(pages.myjobs_page(doc, q, base, self.user, nav))
            if path in ("/admin/top", "/admin/daily"):
                return self._admin(base, path, query, nav)
            parts = path.strip("/").split("/")
            if parts[0] == "job" and len(parts) in (2, 3) and JOBID_ARG.fullmatch(parts[1]) \
                    and (len(parts) == 2 or parts[2] == "live"):
                return self._job(base, parts[1], live=len(parts) == 3)
        except SourceError as e:
            return self._html(502, base, "Cannot read your jobs", str(e))
        return self._html(404, base, "No such page", f"{path[:200]}: no such page here.")

    def _nav(self, base: str) -> list[tuple[str, str]]:
        return [("Top", f"{base}/admin/top"), ("Daily report", f"{base}/admin/daily")
                ] if self.admin else []

    def _admin(self, base: str, path: str, query: dict[str, str],
               nav: list[tuple[str, str]]) -> Response:
        if not self.admin:
            return self._html(403, base, "For admins",
                              f"These pages are for the {self.cfg.admin_group} group.")
        if path == "/admin/top":
            by = query.get("by") if query.get("by") in admin.TOP_BY else "job"
            sort = query.get("sort") if query.get("sort") in admin.TOP_SORT else "write"
            doc = self.source.top(by, sort)
            return self._ok(admin.top_page(doc, by, sort, base, self.user, nav))
        day = query.get("date") or ""
        try:
            day = date.fromisoformat(day).isoformat() if len(day) == 10 else ""
        except ValueError:
            day = ""
        day = day or (date.today() - timedelta(days=1)).isoformat()
        return self._ok(admin.daily_page(self.source.daily(day), base, self.user, nav))

    def _job(self, base: str, jobid: str, *, live: bool) -> Response:
        doc = self.source.show(jobid)
        jobs = doc.get("jobs") or []
        if not jobs:
            why = (doc.get("why") or [f"job {jobid}: no such job, or no I/O recorded for it"])
            return self._html(404, base, f"Job {jobid}", str(why[0]))
        job = jobs[0]  # an array id names its tasks: the page of the first
        if live:
            return self._ok(jobpage.live_part(job, self.thresholds))
        return self._ok(jobpage.job_page(job, base, self.user, self.thresholds,
                                         refresh=self.refresh, nav=self._nav(base)))

    def _check_token(self, environ: dict[str, Any], query: dict[str, str], base: str,
                     path: str) -> Response | None:
        assert self.token is not None
        given = query.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return self._html(403, base, "Wrong token",
                                  "Wrong token: open the address `jobio web` printed.")
            rest = urllib.parse.urlencode([(k, v) for k, v in query.items() if k != "token"])
            cookie = (f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; "
                      f"Path={base or '/'}")
            return 303, "text/plain", b"", [("Location", f"{base}{path}" + (
                f"?{rest}" if rest else "")), ("Set-Cookie", cookie)]
        jar = http.cookies.SimpleCookie()
        try:
            jar.load(environ.get("HTTP_COOKIE", ""))
        except http.cookies.CookieError:
            jar = http.cookies.SimpleCookie()
        morsel = jar.get(COOKIE)
        if morsel is None or not hmac.compare_digest(morsel.value.encode(),
                                                     self.token.encode()):
            return self._html(403, base, "Token needed",
                              "Open the address `jobio web` printed (it holds the token).")
        return None

    def _ok(self, text: str) -> Response:
        return 200, "text/html; charset=utf-8", text.encode(), []

    def _html(self, status: int, base: str, title: str, message: str) -> Response:
        return (status, "text/html; charset=utf-8",
                pages.error_page(base, self.user, title, message).encode(), [])


def from_environment() -> WebApp:
    """The app as Open OnDemand starts it (passenger_wsgi.py): the site's configuration
    ($SLURM_IO_CONFIG or /etc/slurm-io/config.toml), no token (OOD authenticated the user)."""
    from slurm_io import config

    return WebApp(config.load(None))
