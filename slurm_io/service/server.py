"""`jobio serve`: the service's processes. Each runs the asyncio front end (front.py: every
request read whole under deadlines and caps before any worker sees it) and a FairPool of
`service.threads` workers (fair.py), each with its database connection.

Attribution is Python and holds the GIL, so threads overlap only the waits (munged,
PostgreSQL); `service.processes` > 1 forks that many servers sharing the port with
SO_REUSEPORT (the kernel spreads connections), one per core being the useful maximum.
Replays are still refused across processes: munged decodes a credential once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal

from slurm_io.config import Config

log = logging.getLogger(__name__)


def _run(cfg: Config, *, reuse_port: bool) -> None:
    from slurm_io.service import front
    from slurm_io.service.app import ServiceApp
    from slurm_io.store import db

    # reads from the standby of `read_dsn` when set, writes (mail choices) on the primary
    app = ServiceApp(cfg, lambda: db.connect(cfg.read_dsn or cfg.dsn, state_dir=cfg.state_dir),
                     connect_primary=None if not cfg.read_dsn
                     else lambda: db.connect(cfg.dsn, state_dir=cfg.state_dir))
    front.run(cfg, app, reuse_port=reuse_port)


def serve(cfg: Config) -> None:
    """Serve until SIGTERM or SIGINT (which also stops the forked servers)."""
    n = max(1, cfg.service_processes)
    scheme = "https" if cfg.service_tls_cert else "http"
    log.info("jobio service on %s://%s:%d (%d process(es) x %d threads)", scheme,
             cfg.service_listen, cfg.service_port, n, cfg.service_threads)
    children: list[int] = []
    for _ in range(n - 1):
        pid = os.fork()
        if pid == 0:
            try:
                _run(cfg, reuse_port=True)
            finally:
                os._exit(0)
        children.append(pid)
    try:
        _run(cfg, reuse_port=n > 1)
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
