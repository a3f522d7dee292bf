"""`jobio jobs import|sync`: Slurm job records."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from slurm_io.cli.app import connect_db, main, parse_time_arg
from slurm_io.config import Config
from slurm_io.text import display


@main.group("jobs")
def jobs_group() -> None:
    """Slurm job records: import sacct text, sync from sacct (or pyslurm)."""


def _print_run(result: Any, label: str) -> None:
    for problem in result.problems:
        click.echo(f"jobio: {label}: {display(problem)}", err=True)
    c = result.counts
    skipped = (f", skipped {result.skipped} bad line{'s' if result.skipped != 1 else ''} "
               "(see jobio problems)" if result.skipped else "")
    click.echo(f"{label}: imported {result.fetched} job{'s' if result.fetched != 1 else ''} "
               f"(new {c.inserted}, updated {c.updated}, unchanged {c.unchanged}){skipped}")


@jobs_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True,
                                        path_type=Path))
@click.option("--tz", help="Time zone of the file's times, e.g. UTC (default: this machine's "
              "local time, which is what sacct prints).")
@click.pass_obj
def jobs_import(cfg: Config, file: Path, tz: str | None) -> None:
    """Import `sacct -P` text (with its header line; FILE or - for stdin).

    Bad lines are reported on stderr, skipped and kept in the quarantine (`jobio
    problems`); the others are imported and the exit status stays 0.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from slurm_io.jobs.sync import import_sacct_text

    try:
        zone = ZoneInfo(tz) if tz else None
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise click.BadParameter(f"unknown time zone {tz!r}", param_hint="--tz") from e
    # surrogateescape: odd bytes in a job name reach the parser, which stores them as \xHH
    data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    text = data.decode("utf-8", "surrogateescape")
    with connect_db(cfg) as conn:
        result = import_sacct_text(conn, text, tz=zone, origin=display(str(file)))
    _print_run(result, str(file))


@jobs_group.command("sync")
@click.option("--since", help="Start (sacct-like: 2026-11-20T08:00, now-2days, epoch). "
              "Default: a day before the newest job end stored, or 7 days ago.")
@click.option("--until", help="End (default now).")
@click.option("--sacct", "sacct_path", help="Use this sacct (absolute path) instead of "
              "pyslurm or /usr/bin/sacct.")
@click.pass_obj
def jobs_sync(cfg: Config, since: str | None, until: str | None,
              sacct_path: str | None) -> None:
    """Fetch the jobs active in a time range from Slurm and store them (idempotent)."""
    from slurm_io.jobs.source import SourceError, default_source
    from slurm_io.jobs.sync import sync_jobs

    now = time.time()
    start = None if since is None else parse_time_arg(since, now)
    end = None if until is None else parse_time_arg(until, now)
    source = default_source(cfg, sacct=sacct_path)
    with connect_db(cfg) as conn:
        try:
            result = sync_jobs(conn, source, since=start, until=end, now=now)
        except SourceError as e:
            raise click.ClickException(str(e)) from e
    window = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(result.since or 0))
    _print_run(result, f"{type(source).__name__} since {window}")
