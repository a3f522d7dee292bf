"""`jobio serve`: the read service for login nodes (slurm_io/service, docs/service.md)."""

from __future__ import annotations

import click

from slurm_io.cli.app import main
from slurm_io.config import Config


@main.command("serve")
@click.option("--listen", help="Address to listen on (default service.listen, 0.0.0.0).")
@click.option("--port", type=int, help="Port (default service.port, 8453).")
@click.option("--processes", type=click.IntRange(1, 256),
              help="Server processes sharing the port (default service.processes, 1).")
@click.pass_obj
def serve_cmd(cfg: Config, listen: str | None, port: int | None,
              processes: int | None) -> None:
    """Answer `jobio` on login nodes: MUNGE-authenticated JSON over HTTP(S), each request
    read as the requesting user's database role (docs/service.md)."""
    import h11  # noqa: F401  (before the config checks; missing: cli/extras.py's line)

    from slurm_io.service.server import serve
    if cfg.service_tls_cert is not None and not cfg.service_tls_cert.is_file():
        raise click.UsageError(f"service.tls_cert: no such file: {cfg.service_tls_cert}")
    serve(cfg.with_overrides(service_listen=listen, service_port=port,
                             service_processes=processes))
