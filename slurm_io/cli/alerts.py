"""`jobio alerts`: warn the users of running jobs that strain the file system (docs/alerts.md)."""

from __future__ import annotations

import json
import sys
import time

import click

from slurm_io.cli.app import connect_db, main, parse_time_arg
from slurm_io.config import Config
from slurm_io.text import display


def _time(value: str | None, default: float, hint: str) -> float:
    return parse_time_arg(value, default, hint)


@main.command("alerts")
@click.option("--dry-run", is_flag=True, help="Print the mails that would be sent; send and "
              "record nothing.")
@click.option("--at", help="Check the jobs running at this moment (sacct-like time; default "
              "now).")
@click.option("--list", "listing", is_flag=True, help="Show the alert log instead.")
@click.option("-S", "--since", help="With --list: from this time (default now-7days).")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_obj
def alerts_cmd(cfg: Config, dry_run: bool, at: str | None, listing: bool, since: str | None,
               as_json: bool) -> None:
    """Mail the users of running jobs whose I/O hurts the file system (once per job and kind;
    a copy to [alerts] admin). Run it every few minutes (systemd timer, docs/alerts.md)."""
    from slurm_io.alerts import run

    now = time.time()
    with connect_db(cfg) as conn:
        if listing:
            rows = run.listing_rows(conn, _time(since, now - 7 * 86400, "--since"))
            if as_json:
                click.echo(json.dumps(rows, indent=2, sort_keys=True))
                return
            click.echo(f"{'TIME (UTC)':<17} {'JOBID':<12} {'USER':<10} {'KIND':<13} "
                       f"{'STATE':<8} {'LATENCY':>8}  WHAT")
            for r in rows:
                lat = "-" if r["latency"] is None else f"{r['latency']:.0f} s"
                what = r["error"] if r["state"] == "failed" else r["summary"]
                click.echo(f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(r['created'])):<17} "
                           f"{r['jobid']:<12} {r['user'] or '-':<10} {r['kind']:<13} "
                           f"{r['state']:<8} {lat:>8}  {what or ''}")
            return
        moment = _time(at, now, "--at")
        outcomes = run.check(conn, cfg, at=moment, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps([{"jobid": o.job, "user": o.user, "kinds": o.kinds,
                                "state": o.state, "to": o.to, "error": o.error}
                               for o in outcomes], indent=2))
    else:
        for o in outcomes:
            if dry_run and o.message is not None:
                click.echo(o.message.as_string())
                click.echo("")
            click.echo(f"job {o.job} ({o.user or '-'}): {', '.join(o.kinds)}: {o.state}"
                       + (f" to {', '.join(o.to)}" if o.to else "")
                       + (f" ({o.error})" if o.error else ""))
        if not outcomes:
            click.echo("no running job needs an alert")
    for o in outcomes:
        if o.state == "problem":  # quarantined, as intakes do: the exit status stays 0
            click.echo(f"jobio: alert of job {display(o.job)}: {o.error} (see jobio "
                       "problems)", err=True)
    if any(o.state == "failed" for o in outcomes):
        sys.exit(1)
