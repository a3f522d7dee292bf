"""Mail commands: `jobio mail on|off|status`, `jobio report`, the reporter daemon."""

from __future__ import annotations

from pathlib import Path

import click

from slurm_io.cli.app import JOBID_ARG, connect_db, main
from slurm_io.config import Config, ConfigError
from slurm_io.notify import commands as notify_commands


@main.group("mail")
def mail_group() -> None:
    """Your per-job I/O mails: turn them off or on, see what applies (docs/mail.md)."""


def _mail_set(cfg: Config, on: bool, user: str | None) -> None:
    if cfg.server:
        from slurm_io.client.commands import mail_set

        uid = mail_set(cfg, on, user)
        click.echo(f"I/O mails {'on' if on else 'off'} for uid {uid}"
                   + ("" if on else "; `jobio mail on` brings them back"))
        return
    from slurm_io.mail import preferences
    from slurm_io.store import errors

    with connect_db(cfg) as conn:
        try:
            uid = preferences.resolve_uid(conn, user)
            preferences.set_enabled(conn, uid, on)
        except preferences.NoUidError as e:
            raise click.ClickException(str(e)) from e
        except errors.InsufficientPrivilege as e:
            raise click.ClickException(
                "the database refused: you may change your own choice only, and your "
                "database role needs a uid (an administrator runs `jobio db users "
                f"YOURNAME`) [{e.diag.message_primary}]") from e
    click.echo(f"I/O mails {'on' if on else 'off'} for uid {uid}"
               + ("" if on else "; `jobio mail on` brings them back"))


@mail_group.command("off")
@click.option("--user", help="Another user's choice (administrators, the database owner).")
@click.pass_obj
def mail_off(cfg: Config, user: str | None) -> None:
    """Stop the I/O mails of your jobs."""
    _mail_set(cfg, False, user)


@mail_group.command("on")
@click.option("--user", help="Another user's choice (administrators, the database owner).")
@click.pass_obj
def mail_on(cfg: Config, user: str | None) -> None:
    """Get the I/O mails of your jobs again (as the site policy sends them)."""
    _mail_set(cfg, True, user)


@mail_group.command("status")
@click.option("--user", help="Another user (administrators).")
@click.pass_obj
def mail_status(cfg: Config, user: str | None) -> None:
    """Whether your jobs get I/O mails, and the site's policy."""
    from slurm_io.mail.status import status_lines

    if cfg.server:
        from slurm_io.client.commands import mail_status as fetch_status

        doc = fetch_status(cfg, user)
    else:
        from slurm_io.mail import preferences
        from slurm_io.mail.status import status_document

        with connect_db(cfg) as conn:
            try:
                doc = status_document(conn, cfg, user)
            except preferences.NoUidError as e:
                raise click.ClickException(str(e)) from e
            except ConfigError as e:
                raise click.UsageError(str(e)) from e
    for line in status_lines(doc):
        click.echo(line)


@main.command("report")
@click.argument("jobid")
@click.option("--eml", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the whole mail (multipart, opens in a mail client) to FILE.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the mail's HTML part (opens in a browser) to FILE.")
@click.option("-M", "--clusters", help="The job of these clusters (a,b or all), as sacct -M; "
              "needed when the id exists on several clusters.")
@click.pass_obj
def report_cmd(cfg: Config, jobid: str, eml: Path | None, html_file: Path | None,
               clusters: str | None) -> None:
    """A job's I/O mail, mailed or not: its text on the terminal, or --eml/--html files.

    The report the site mails at a job's end (figures, timeline, I/O quality, advice); see
    docs/mail.md. Users see their own jobs only.
    """
    if not JOBID_ARG.match(jobid):
        raise click.UsageError(f"not a job id: {jobid!r}")
    if cfg.server:
        from slurm_io.client.commands import report as client_report

        client_report(cfg, jobid, eml, html_file, clusters)
        return
    from slurm_io.jobs.store import find_jobs
    from slurm_io.mail.builder import MailBuilder, text_part
    from slurm_io.mail.outbox import write_message
    from slurm_io.report.show_docs import parse_clusters

    try:
        builder = MailBuilder(cfg)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    with connect_db(cfg, upgrade=False) as conn:
        infos = find_jobs(conn, jobid, parse_clusters(clusters))
        names = sorted({i.cluster or "" for i in infos})
        if clusters is None and len(names) > 1:
            raise click.UsageError(f"job {jobid} exists on clusters {', '.join(names)}: name "
                                   f"one with -M/--clusters (e.g. -M {names[0]})")
        if len(infos) > 1 and (eml or html_file):
            raise click.UsageError(f"{jobid} is an array of {len(infos)} jobs: name one task "
                                   f"(e.g. {infos[0].jobid}) to write files")
        messages = [builder.render(conn, info) for info in infos]
    if not messages:
        raise click.ClickException(f"job {jobid}: no such job (or not yours)")
    if eml or html_file:
        write_message(messages[0], eml, html_file)
        for path in (eml, html_file):
            if path is not None:
                click.echo(f"wrote {path}")
        return
    click.echo("\n\n".join(f"Subject: {m['Subject']}\n\n{text_part(m).rstrip()}"
                           for m in messages))


# -- job-end reports (slurm_io/notify/commands.py, docs/hook.md) ----------------------------
main.add_command(notify_commands.report_daemon_cmd)
main.add_command(notify_commands.reports_cmd)


# -- filesystem views: top, LASSi, daily report, slowdown (docs/views.md) ---------------------
