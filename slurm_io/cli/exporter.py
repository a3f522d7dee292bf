"""`jobio exporter`: the Prometheus endpoint (docs/exporter.md)."""

from __future__ import annotations

import sys

import click

from slurm_io.cli.app import main
from slurm_io.config import Config


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[::1]:PORT` or `PORT` -> (host, port); ValueError when it is not one."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "0.0.0.0"
    n = int(port)
    if not 0 <= n <= 65535:
        raise ValueError(f"port {n} out of range")
    return host, n


@main.command("exporter")
@click.option("--listen", help="HOST:PORT to serve /metrics on (default exporter.listen, "
              "127.0.0.1:9817).")
@click.option("--top-jobs", type=int, help="Running jobs exported (default exporter.top_jobs, "
              "20; by bytes and by metadata operations).")
@click.option("--once", is_flag=True, help="Print one scrape to stdout and exit.")
@click.pass_obj
def exporter_cmd(cfg: Config, listen: str | None, top_jobs: int | None, once: bool) -> None:
    """Serve the I/O of filesystems, users, accounts and top jobs to Prometheus.

    Reads the database at scrape time: the newest collector interval, collector health, the
    quarantine. Bounded label sets (docs/exporter.md).
    """
    from prometheus_client import generate_latest

    from slurm_io.exporter import metrics
    from slurm_io.exporter.server import DatabaseCollector, registry, serve
    from slurm_io.store import db

    try:
        host, port = parse_listen(listen or cfg.exporter_listen)
    except ValueError as e:
        raise click.BadParameter(f"{listen or cfg.exporter_listen!r}: {e}",
                                 param_hint="--listen") from e
    settings = metrics.Settings(top_jobs=top_jobs or cfg.exporter_top_jobs,
                                top_users=cfg.exporter_top_users,
                                top_accounts=cfg.exporter_top_accounts,
                                targets=cfg.exporter_targets)
    spool = cfg.spool if (cfg.spool_dir is not None or cfg.spool.is_dir()) else None
    collector = DatabaseCollector(  # reads only: the standby of `read_dsn` when set
        lambda: db.connect(cfg.read_dsn or cfg.dsn, state_dir=cfg.state_dir),
        interval=cfg.interval, settings=settings, spool=spool, standby=bool(cfg.read_dsn))
    if once:
        sys.stdout.write(generate_latest(registry(collector)).decode())
        return
    try:
        serve(collector, host, port)
    except OSError as e:
        click.echo(f"jobio exporter: cannot listen on {host}:{port}: {e.strerror or e}",
                   err=True)
        sys.exit(1)
    click.echo(f"jobio exporter: serving http://{host}:{port}/metrics", err=True)
    import signal  # here, not at import: every `jobio` would pay for the daemon's modules
    import threading

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
