"""The exporter's imperative shell: a prometheus_client custom collector that reads the
database at scrape time, and the HTTP server around it.

Reading at scrape time (not on a timer) means a scrape always shows the newest stored
interval and an idle exporter costs nothing; scrapes are serialised on one connection (the
queries take tens of milliseconds), which is reopened when the database went away
(`jobio_up` is 0 meanwhile, and the scrape still answers).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

from slurm_io.exporter import metrics
from slurm_io.exporter import sql as q
from slurm_io.report import sql as report_sql
from slurm_io.report.load import load
from slurm_io.store.errors import DatabaseError, InsufficientPrivilege
from slurm_io.store.standby import replication_lag

if TYPE_CHECKING:
    from psycopg import Connection

log = logging.getLogger("slurm_io.exporter")


def spool_depth(spool: Path | None) -> tuple[int, int] | None:
    """(files, bytes) waiting in a collector spool directory, None when there is none here."""
    if spool is None or not spool.is_dir():
        return None
    files = size = 0
    with os.scandir(spool) as it:
        for e in it:
            if e.is_file() and not e.name.startswith("."):
                files += 1
                size += e.stat().st_size
    return files, size


class DatabaseCollector(Collector):
    """Reads one snapshot per scrape and turns it into metric families."""

    def __init__(self, connect: Callable[[], Connection], *, interval: float,
                 settings: metrics.Settings, spool: Path | None = None,
                 clock: Callable[[], float] = time.time, standby: bool = False) -> None:
        self.connect = connect
        self.standby = standby  # reads a standby (`read_dsn`): export its replication lag
        self.interval = interval
        self.settings = settings
        self.spool = spool
        self.clock = clock
        self.conn: Connection | None = None
        self.lock = threading.Lock()

    def snapshot(self) -> metrics.Snapshot:
        now = self.clock()
        s = metrics.Snapshot(now=now, spool=spool_depth(self.spool))
        try:
            if self.conn is None or self.conn.closed:
                self.conn = self.connect()
            conn = self.conn
            # per job, not per host: the exporter has no series by host (issue 26)
            ld = load(conn, at=now, interval=self.interval, now=now, per_host=False)
            if ld.at is not None and self.settings.targets:
                s.targets = report_sql.target_rows(conn, ld.lo, ld.at)
            s.collectors = q.collectors(conn)
            s.queue = q.report_queue(conn)
            if self.standby:
                s.replication_lag = replication_lag(conn)
            conn.commit()
            try:
                s.problems = q.problems(conn)
                conn.commit()
            except InsufficientPrivilege:
                conn.rollback()  # only admins read the quarantine
            s.load = ld
        except DatabaseError as e:
            log.warning("exporter: database: %s", e)
            s.error = str(e)
            if self.conn is not None:
                try:
                    self.conn.close()
                finally:
                    self.conn = None
        return s

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            t0 = time.perf_counter()
            s = self.snapshot()
            took = time.perf_counter() - t0
        yield from metrics.families(s, self.settings, took)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # no scrape at registration


def registry(collector: DatabaseCollector) -> CollectorRegistry:
    """A registry with only our collector (no process/platform metrics of this Python)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg


def serve(collector: DatabaseCollector, host: str, port: int) -> Any:
    """Start the HTTP endpoint (/metrics) in a daemon thread; returns (server, thread).

    prometheus_client's WSGI application behind our bounded server (exporter/bounded.py:
    deadlines, a byte cap and connection caps), not its `start_http_server`, which gives
    every connection a thread with no timeout."""
    from prometheus_client import make_wsgi_app

    from slurm_io.exporter import bounded

    return bounded.start(make_wsgi_app(registry(collector)), host, port)
