"""Where the web view reads: the jobio service (MUNGE, as the user) or, on a site without a
service, the database as the user's own role -- the same two ways `jobio` reads. Either way
the user sees what they may see and nothing more: the view has no privilege of its own.

One read per page: the list is one `GET /v1/jobs`, a job page one `GET /v1/show`. Answers
are kept `ttl` seconds (a user sorting and filtering the list, or a page and its refresh,
ask the service once), then dropped; the cache holds one user's answers only (the app runs
as that user).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from slurm_io.config import Config

MAX_CACHED = 64  # answers kept at most (a user's pages of the last seconds)


class SourceError(Exception):
    """The read failed (the service refused or is down, the database too): the one line the
    page shows."""


class Cached:
    """Answers of `fetch(key)` kept `ttl` seconds."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._kept: dict[tuple[Any, ...], tuple[float, Any]] = {}

    def get(self, key: tuple[Any, ...], fetch: Callable[[], Any]) -> Any:
        now = time.monotonic()
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                return hit[1]
        value = fetch()
        with self._lock:
            if len(self._kept) >= MAX_CACHED:
                self._kept = {k: v for k, v in self._kept.items() if now - v[0] < self.ttl}
                while len(self._kept) >= MAX_CACHED:
                    self._kept.pop(next(iter(self._kept)))
            self._kept[key] = (now, value)
        return value


class Source:
    """Reads for one user; `jobs` and `show` return the service's documents."""

    def __init__(self, cfg: Config, user: str, *, ttl: float = 10.0) -> None:
        self.cfg, self.user = cfg, user
        self.cache = Cached(ttl)
        self._local = threading.local()

    @property
    def via(self) -> str:
        return f"the jobio service at {self.cfg.server}" if self.cfg.server else "the database"

    def jobs(self, start: float, end: float) -> dict[str, Any]:
        # whole minutes, outwards: the default period ends "now", a new key every second
        # that would never hit the cache; the key is also the query the credential names
        s, e = float(math.floor(start / 60) * 60), float(math.ceil(end / 60) * 60)
        return self.cache.get(("jobs", s, e), lambda: self._read(
            "/v1/jobs", [("user", self.user), ("start", repr(s)), ("end", repr(e))]))

    def show(self, jobid: str) -> dict[str, Any]:
        return self.cache.get(("show", jobid),
                              lambda: self._read("/v1/show", [("jobid", jobid)]))

    def top(self, by: str, sort: str) -> dict[str, Any]:
        return self.cache.get(("top", by, sort), lambda: self._read(
            "/v1/top", [("by", by), ("sort", sort)]))

    def daily(self, day: str) -> dict[str, Any]:
        return self.cache.get(("daily", day),
                              lambda: self._read("/v1/daily", [("date", day)]))

    def _read(self, path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        if self.cfg.server:
            return self._service(path, params)
        return self._database(path, params)

    def _service(self, path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        from slurm_io.client.http import ServiceError, call

        try:
            doc: dict[str, Any] = call(self.cfg.server or "", "GET", path, params,
                                       munge_socket=self.cfg.munge_socket,
                                       ca_file=self.cfg.server_ca,
                                       timeout=self.cfg.server_timeout)
        except ServiceError as e:
            raise SourceError(str(e)) from e
        return doc

    def _database(self, path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        """The service's handler run on this thread's connection as the user's own role
        (peer authentication, as `jobio` locally): the same documents as through the
        service, with the same parsing of the parameters."""
        import importlib.util
        import urllib.parse

        if importlib.util.find_spec("psycopg") is None:  # a login node's slurm-io[client]
            raise SourceError("no `server` configured and no database driver here: set "
                              "`server` to the jobio service (docs/service.md)")
        from slurm_io.service import handlers
        from slurm_io.service.requests import (
            BadRequest,
            DailyRequest,
            JobsRequest,
            ShowRequest,
            TopRequest,
            parse,
        )
        from slurm_io.store.errors import DatabaseError

        try:
            req = parse(path, "GET", urllib.parse.urlencode(params),
                        max_ids=self.cfg.service_max_ids)
            conn = self._conn()
            try:
                if isinstance(req, JobsRequest):
                    return handlers.jobs(conn, self.cfg, req, None)
                if isinstance(req, TopRequest):
                    return handlers.top(conn, self.cfg, req)
                if isinstance(req, DailyRequest):
                    return handlers.daily(conn, req)
                assert isinstance(req, ShowRequest)
                return handlers.show(conn, self.cfg, req)
            finally:
                if not conn.closed:
                    conn.rollback()
        except (BadRequest, handlers.Refused) as e:
            raise SourceError(str(e)) from e
        except (DatabaseError, OSError, RuntimeError) as e:
            self._local.conn = None
            raise SourceError(f"cannot read the database: "
                              f"{' '.join(str(e).split()) or type(e).__name__}") from e

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            from slurm_io.store import db

            dsn = self.cfg.read_dsn or self.cfg.dsn
            conn = db.connect(dsn, state_dir=self.cfg.state_dir)
            self._local.conn = conn
        return conn
