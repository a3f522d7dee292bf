"""`jobio serve`: the service's HTTP(S) server (cheroot, CherryPy's maintained WSGI server:
a thread pool, HTTP/1.1 keep-alive, TLS with the standard library's ssl).

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
from typing import Any

from slurm_io.config import Config

log = logging.getLogger(__name__)
LISTEN_BACKLOG = 128  # cheroot's default of 5 drops connections under bursts of clients


def make_server(cfg: Config, *, reuse_port: bool = False) -> Any:
    from cheroot import wsgi

    from slurm_io.service.app import ServiceApp
    from slurm_io.store import db

    app = ServiceApp(cfg, lambda: db.connect(cfg.dsn, state_dir=cfg.state_dir))
    server = wsgi.Server((cfg.service_listen, cfg.service_port), app,
                         numthreads=cfg.service_threads, server_name="jobio",
                         request_queue_size=LISTEN_BACKLOG, reuse_port=reuse_port)
    if cfg.service_tls_cert is not None:
        server.ssl_adapter = _worker_handshake_adapter()(
            str(cfg.service_tls_cert), str(cfg.service_tls_key or cfg.service_tls_cert))
        # no TLS 1.3 session tickets: each `jobio` is a new process that cannot resume a
        # session, and making two tickets per handshake was ~20 % of its CPU
        server.ssl_adapter.context.num_tickets = 0
    return server


def _worker_handshake_adapter() -> type:
    """cheroot's TLS adapter, with the handshake moved from its one acceptor thread to the
    worker thread that serves the connection.

    Why: cheroot wraps each accepted socket with `do_handshake_on_connect=True` in the
    thread that accepts, so handshakes run one after the other, each waiting for its
    client's round trips: under 50 clients that halved the requests per second, and a client
    that connects and sends nothing stalled every other client for the socket timeout. Here
    the socket is wrapped without the handshake; OpenSSL performs it on the worker's first
    read (a server-side SSL object in accept state). The WSGI environment gets the scheme
    only: the service reads no TLS details (it authenticates by MUNGE).
    """
    from cheroot.ssl.builtin import BuiltinSSLAdapter

    class WorkerHandshakeAdapter(BuiltinSSLAdapter):  # type: ignore[misc]
        def wrap(self, sock: Any) -> tuple[Any, dict[str, str]]:
            tls = self.context.wrap_socket(sock, do_handshake_on_connect=False,
                                           server_side=True)
            return tls, {"wsgi.url_scheme": "https", "HTTPS": "on"}

    return WorkerHandshakeAdapter


def _run(cfg: Config, *, reuse_port: bool) -> None:
    server = make_server(cfg, reuse_port=reuse_port)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.start()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


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
