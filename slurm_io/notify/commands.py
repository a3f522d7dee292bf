"""The command-line side of the job-end reports: `jobio report-daemon` and `jobio reports`.

Kept here (registered on the `jobio` group by slurm_io/cli/mail.py) so the command module stays
small; imports beyond click happen when a command runs.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import click

from slurm_io.config import Config

log = logging.getLogger("slurm_io.report")


def _connect(cfg: Config) -> Any:
    from slurm_io.store import db, migrate

    conn = db.connect(cfg.dsn, state_dir=cfg.state_dir)
    migrate.upgrade(conn, settings=migrate.config_settings(cfg))
    return conn


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


@click.command("report-daemon")
@click.option("--once", is_flag=True, help="One pass, then exit (exit 1 when the database "
              "or sacct could not be used).")
@click.option("--interval", type=float, help="Seconds between passes (default 30).")
@click.option("--sweep-every", type=float, help="Seconds between sweeps for jobs that got no "
              "hook (default 900; 0: no sweep).")
@click.option("--sweep-hours", type=float, help="How far back a sweep looks (default 6).")
@click.option("--max-wait", type=float, help="Seconds after a job's end after which it is "
              "reported even if sacct or a collector is behind (default 1800).")
@click.option("--max-attempts", type=int, help="SMTP attempts before a report is failed (8).")
@click.option("--retry-base", type=float, help="Seconds before the first retry; doubles (60).")
@click.option("--spool-dir", type=click.Path(path_type=Path),
              help="The hook's spool (default [hook] spool_dir).")
@click.option("--sacct", "sacct_path", help="sacct to run (default /usr/bin/sacct).")
@click.option("--status", is_flag=True, help="Print the queue and spool state and exit "
              "(exit 1 when reports failed in the last day or the spool is stuck).")
@click.pass_obj
def report_daemon_cmd(cfg: Config, once: bool, interval: float | None,
                      sweep_every: float | None, sweep_hours: float | None,
                      max_wait: float | None, max_attempts: int | None,
                      retry_base: float | None, spool_dir: Path | None,
                      sacct_path: str | None, status: bool) -> None:
    """Mail each finished job's I/O report, exactly once (docs/hook.md).

    Ingests the job-end hook's spool, waits until a job's sacct record is final and every
    collector has read past its end, attributes it, builds the mail and sends it by SMTP
    ([mail] host, port, starttls, user). Several reporters may run at once.
    """
    from slurm_io.notify import reporter as rep
    from slurm_io.notify.interfaces import load_builder

    cfg = cfg.with_overrides(report_interval=interval, report_sweep_every=sweep_every,
                             report_sweep_hours=sweep_hours, report_max_wait=max_wait,
                             report_max_attempts=max_attempts, report_retry_base=retry_base,
                             hook_spool_dir=spool_dir)
    if status:
        with _connect(cfg) as conn:
            st = rep.status(conn, cfg.hook_spool_dir)
        _print_status(st)
        stuck = (st["spool_oldest_age"] or 0) > 3600 or st["spool_bad"]
        sys.exit(1 if st["failed_last_day"] or stuck else 0)
    try:
        settings = rep.ReporterSettings.from_config(cfg, sacct=sacct_path)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    builder = load_builder(cfg)
    from slurm_io.store import db

    connect = db.upgrading_factory(cfg.dsn, state_dir=cfg.state_dir)
    reporter = rep.Reporter(connect, builder, rep.smtp_settings(cfg), settings)
    if once:
        from slurm_io.store.errors import DatabaseError

        try:
            result = reporter.run_once()
        except DatabaseError as e:
            raise click.ClickException(f"database: {e}") from e
        finally:
            reporter.close()
        click.echo(result.summary())
        for p in result.problems:
            click.echo(f"jobio: {p}", err=True)
        sys.exit(1 if result.problems else 0)
    from slurm_io.collect.daemon import StopFlag

    stop = StopFlag()
    stop.install()
    log.info("report daemon: every %.0f s, spool %s, SMTP %s:%d, builder %s",
             settings.interval, settings.spool_dir, cfg.mail_host, cfg.mail_port,
             type(builder).__module__ + "." + type(builder).__name__)
    reporter.serve(stop.event)


def _print_status(st: dict[str, Any]) -> None:
    click.echo("reports: " + ", ".join(f"{k} {st[k]}" for k in
                                       ("queued", "sending", "sent", "skipped", "failed")))
    click.echo(f"sent but unconfirmed (reporter died in the SMTP transaction): "
               f"{st['unconfirmed']}")
    click.echo(f"failed in the last day: {st['failed_last_day']}")
    click.echo(f"oldest queued: {_when(st['oldest_queued'])}")
    age = st["spool_oldest_age"]
    click.echo(f"hook spool {st['spool_dir']}: {st['spool_files']} file(s)"
               + ("" if age is None else f", oldest {age:.0f} s")
               + (f", {st['spool_bad']} unreadable (*.bad)" if st["spool_bad"] else ""))
    click.echo(f"collectors have all read until: {_when(st['data_complete_until'])}")


@click.command("reports")
@click.option("--state", "states", multiple=True,
              type=click.Choice(["queued", "sending", "sent", "skipped", "failed"]),
              help="Only rows in this state (repeatable).")
@click.option("-n", "--limit", type=int, default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--retry", "retry_jobs", type=int, multiple=True, metavar="JOB",
              help="Queue these failed reports again (fresh attempt count).")
@click.argument("jobs", nargs=-1, type=int)
@click.pass_obj
def reports_cmd(cfg: Config, states: tuple[str, ...], limit: int, as_json: bool,
                retry_jobs: tuple[int, ...], jobs: tuple[int, ...]) -> None:
    """The report queue: what was mailed, skipped, failed or still waits, and why."""
    from slurm_io.notify import queue

    with _connect(cfg) as conn:
        if retry_jobs:
            done = queue.retry(conn, retry_jobs)
            for j in retry_jobs:
                click.echo(f"job {j}: " + ("queued again" if j in done else "not failed: "
                                           "left as it is"))
            return
        rows = queue.listing(conn, states=states, limit=limit, jobs=jobs)
    if as_json:
        click.echo(json.dumps([r._asdict() for r in rows], indent=2, default=str))
        return
    click.echo(f"{'JOB':>10} {'JOBID':>12} {'USER':<10} {'STATE':<8} {'SOURCE':<6} "
               f"{'QUEUED':<19} {'SENT':<19} TRY  NOTE / ERROR")
    for r in rows:
        text = r.last_error if r.state in ("failed", "queued") and r.last_error else r.note
        click.echo(f"{r.job:>10} {r.jobid or '-':>12} {r.user or '-':<10} {r.state:<8} "
                   f"{r.source:<6} {_when(r.queued_at):<19} {_when(r.sent_at):<19} "
                   f"{r.attempts:>3}  {text or ''}")
