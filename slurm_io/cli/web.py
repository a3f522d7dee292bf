"""`jobio web`: the web view of one's jobs on a login node (slurm_io/web, docs/web.md)."""

from __future__ import annotations

import signal
import sys

import click

from slurm_io.cli.app import JobioError, main
from slurm_io.config import Config


@main.command("web")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--refresh", type=click.IntRange(1, 3600), default=30, show_default=True,
              help="Seconds between the refreshes of a running job's page.")
@click.option("--cache", "cache_seconds", type=click.FloatRange(0, 600), default=10.0,
              show_default=True, help="Seconds an answer of the service is kept.")
@click.pass_obj
def web_cmd(cfg: Config, port: int, refresh: int, cache_seconds: float) -> None:
    """Your jobs' I/O in a browser: a page of your jobs and one per job, with charts.

    Serves on 127.0.0.1 only and prints, once, the address to open, with a random token
    (tunnel it: ssh -L PORT:127.0.0.1:PORT login-node). It reads as you, like `jobio`."""
    from slurm_io.web.app import WebApp
    from slurm_io.web.server import new_token, serve

    app = WebApp(cfg, token=new_token(), cache_seconds=cache_seconds, refresh_seconds=refresh)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    def announce(address: str) -> None:
        click.echo(f"jobio web: open {address}", err=False)
        sys.stdout.flush()

    try:
        serve(app, port, announce)
    except OSError as e:
        raise JobioError(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from e
