"""`jobio serve`: the service's HTTP(S) server (cheroot, CherryPy's maintained WSGI server:
a thread pool, HTTP/1.1 keep-alive, TLS with the standard library's ssl)."""

from __future__ import annotations

import logging
import signal
from typing import Any

from slurm_io.config import Config

log = logging.getLogger(__name__)


def make_server(cfg: Config) -> Any:
    from cheroot import wsgi

    from slurm_io.service.app import ServiceApp
    from slurm_io.store import db

    app = ServiceApp(cfg, lambda: db.connect(cfg.dsn, state_dir=cfg.state_dir))
    server = wsgi.Server((cfg.service_listen, cfg.service_port), app,
                         numthreads=cfg.service_threads, server_name="jobio")
    if cfg.service_tls_cert is not None:
        from cheroot.ssl.builtin import BuiltinSSLAdapter

        server.ssl_adapter = BuiltinSSLAdapter(str(cfg.service_tls_cert),
                                               str(cfg.service_tls_key or cfg.service_tls_cert))
    return server


def serve(cfg: Config) -> None:
    """Serve until SIGTERM or SIGINT."""
    server = make_server(cfg)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    scheme = "https" if cfg.service_tls_cert else "http"
    log.info("jobio service on %s://%s:%d", scheme, cfg.service_listen, cfg.service_port)
    try:
        server.start()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
