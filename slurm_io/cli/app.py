"""The `jobio` group, its global options and the helpers every command uses.

`jobio 12345` means `jobio show 12345` (like `sacct -j`), so the group routes a first
argument that looks like a job id to `show`.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

import click

from slurm_io import config as config_mod
from slurm_io.config import Config, ConfigError

JOBID_ARG = re.compile(r"^\d+(_\d+)?(\.\w+)?$")
# what a login node's `jobio` can do through the service (`server` set; slurm_io/client)
CLIENT_COMMANDS = frozenset({"show", "report", "mail", "usage"})


class JobioGroup(click.Group):
    """A click group where an unknown first word that looks like a job id means `show`."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if name is not None and name not in self.commands and JOBID_ARG.match(name):
            return "show", self.commands["show"], args  # the job id stays show's argument
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as e:
            from slurm_io.cli.refusal import as_refusal

            refused = as_refusal(e)
            if refused is None:
                raise
            raise refused from e


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * verbose if verbose else logging.INFO
    logging.basicConfig(level=max(level, logging.DEBUG), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@click.group(cls=JobioGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_file", type=click.Path(path_type=Path),
              help="TOML configuration (default $SLURM_IO_CONFIG or /etc/slurm-io/config.toml).")
@click.option("--dsn", help="PostgreSQL conninfo or URI (default $SLURM_IO_DSN, else the "
              "embedded private PostgreSQL).")
@click.option("--state-dir", type=click.Path(path_type=Path),
              help="Where the collector state, spool and embedded database live.")
@click.option("--server", help="Ask the jobio service at this URL (https://dbhost:8453) "
              "instead of the database, authenticated by MUNGE (default: the `server` key).")
@click.option("-v", "--verbose", count=True)
@click.version_option(package_name="slurm-io")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None, dsn: str | None,
         state_dir: Path | None, server: str | None, verbose: int) -> None:
    """Per-job Lustre I/O for Slurm: collect job_stats, store, attribute, report.

    `jobio JOBID` is short for `jobio show JOBID`.
    """
    _setup_logging(verbose)
    try:
        cfg = config_mod.load(config_file)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    ctx.obj = cfg.with_overrides(dsn=dsn, state_dir=state_dir, server=server)
    if dsn and ctx.obj.server:  # an explicit database wins over a configured service
        from dataclasses import replace

        ctx.obj = replace(ctx.obj, server=None)
    if ctx.obj.server and ctx.invoked_subcommand not in CLIENT_COMMANDS:
        raise click.UsageError(
            f"`jobio {ctx.invoked_subcommand}` does not work through the jobio service "
            f"({ctx.obj.server}): run it on the database host")


def connect_db(cfg: Config, *, upgrade: bool = True) -> Any:
    from slurm_io.store import db, migrate

    conn = db.connect(cfg.dsn, state_dir=cfg.state_dir)
    if upgrade:
        migrate.upgrade(conn)
    return conn


# -- database ------------------------------------------------------------------------------


def parse_time_arg(value: str | None, default: float) -> float:
    from slurm_io.timeparse import parse_time

    return default if value is None else parse_time(value)
