"""`jobio problems`: the quarantine, for slurm-io admins (docs/privacy.md: jobio_admin)."""

from __future__ import annotations

import json

import click

from slurm_io.cli.app import JobioError, connect_db, main, parse_time_arg
from slurm_io.config import Config


@main.command("problems")
@click.option("--source", help="Only this intake (sacct, hook-spool, jobstats, batch, "
              "state, ...).")
@click.option("-S", "--since", "since", help="Only problems seen after this (sacct-like time).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--show", "show_id", type=int, metavar="ID",
              help="One problem with the record as received (bytes escaped).")
@click.pass_obj
def problems_cmd(cfg: Config, source: str | None, since: str | None, limit: int,
                 as_json: bool, show_id: int | None) -> None:
    """Records that could not be taken (sacct lines, spool files, job_stats entries ...),
    newest first: what was wrong, where it came from and what was lost (admin command)."""
    from slurm_io.report import problems as view
    from slurm_io.store import problems as store
    from slurm_io.store.errors import InsufficientPrivilege

    t_since = None if since is None else parse_time_arg(since, 0.0, "-S")
    try:
        with connect_db(cfg, upgrade=False) as conn:
            if show_id is not None:
                p = view.one(conn, show_id)
                if p is None:
                    raise JobioError(f"no problem {show_id}")
                click.echo(json.dumps(view.as_json(p), indent=2) if as_json
                           else view.render_one(p))
                return
            rows = store.recent(conn, source=source, since=t_since, limit=limit)
            counts = store.counts(conn, since=t_since)
    except InsufficientPrivilege as e:
        raise JobioError("only slurm-io admins may read the quarantine (`jobio problems`): "
                         "ask for the admin group (docs/privacy.md)") from e
    if as_json:
        click.echo(json.dumps([view.as_json(p) for p in rows], indent=2))
    else:
        click.echo(view.render_list(rows, {s: n for s, n in counts.items()
                                           if source is None or s == source}))
