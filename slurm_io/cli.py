"""`jobio`: the command line. Thin: every command parses flags, calls one module, prints.

`jobio 12345` means `jobio show 12345` (like `sacct -j`), so the group routes a first
argument that looks like a job id to `show`.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from slurm_io import config as config_mod
from slurm_io.config import Config, ConfigError
from slurm_io.notify import commands as notify_commands

JOBID_ARG = re.compile(r"^\d+(_\d+)?(\.\w+)?$")


class JobioGroup(click.Group):
    """A click group where an unknown first word that looks like a job id means `show`."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if name is not None and name not in self.commands and JOBID_ARG.match(name):
            return "show", self.commands["show"], args  # the job id stays show's argument
        return super().resolve_command(ctx, args)


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
@click.option("-v", "--verbose", count=True)
@click.version_option(package_name="slurm-io")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None, dsn: str | None,
         state_dir: Path | None, verbose: int) -> None:
    """Per-job Lustre I/O for Slurm: collect job_stats, store, attribute, report.

    `jobio JOBID` is short for `jobio show JOBID`.
    """
    _setup_logging(verbose)
    try:
        cfg = config_mod.load(config_file)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    ctx.obj = cfg.with_overrides(dsn=dsn, state_dir=state_dir)


def _connect(cfg: Config, *, upgrade: bool = True) -> Any:
    from slurm_io.store import db, migrate

    conn = db.connect(cfg.dsn, state_dir=cfg.state_dir)
    if upgrade:
        migrate.upgrade(conn)
    return conn


# -- database ------------------------------------------------------------------------------
@main.group("db")
def db_group() -> None:
    """Schema migrations, retention and the embedded PostgreSQL."""


@db_group.command("upgrade")
@click.pass_obj
def db_upgrade(cfg: Config) -> None:
    """Apply pending migrations from sql/ (idempotent)."""
    from slurm_io.store import db, migrate

    with db.connect(cfg.dsn, state_dir=cfg.state_dir) as conn:
        applied = migrate.upgrade(conn)
        version = migrate.current_version(conn)
    for name in applied:
        click.echo(f"applied {name}")
    click.echo(f"schema at version {version}" + ("" if applied else " (nothing to do)"))


@db_group.command("prune")
@click.option("--older-than", required=True, help="e.g. 90d, 12w, 36h")
@click.pass_obj
def db_prune(cfg: Config, older_than: str) -> None:
    """Drop whole daily partitions older than the given age."""
    from slurm_io.store import partitions

    seconds = partitions.parse_duration(older_than)
    with _connect(cfg) as conn:
        dropped = partitions.prune(conn, seconds, time.time())
    for name in dropped:
        click.echo(f"dropped {name}")
    click.echo(f"{len(dropped)} partition(s) dropped")


def _embedded(cfg: Config) -> Any:
    from slurm_io.store.embedded import EmbeddedPostgres

    if cfg.dsn:
        raise click.UsageError("a DSN is configured: the embedded PostgreSQL is not in use")
    return EmbeddedPostgres(cfg.state_dir)


@db_group.command("start")
@click.pass_obj
def db_start(cfg: Config) -> None:
    """Initialise (if needed) and start the embedded PostgreSQL."""
    click.echo(_embedded(cfg).ensure())


@db_group.command("stop")
@click.pass_obj
def db_stop(cfg: Config) -> None:
    """Stop the embedded PostgreSQL."""
    _embedded(cfg).stop()
    click.echo("stopped")


@db_group.command("status")
@click.pass_obj
def db_status(cfg: Config) -> None:
    """Show the embedded PostgreSQL's state."""
    for k, v in _embedded(cfg).status().items():
        click.echo(f"{k}: {v}")


@db_group.command("users")
@click.option("--all-passwd", is_flag=True,
              help="Every passwd entry with uid >= 1000 (nobody excepted).")
@click.option("--admin-group", help="Unix group whose members see every job "
              "(default: privacy.admin_group, slurmio-admin).")
@click.argument("users", nargs=-1)
@click.pass_obj
def db_users(cfg: Config, all_passwd: bool, admin_group: str | None,
             users: tuple[str, ...]) -> None:
    """Create database roles for OS users so that they see their own jobs (admin command).

    Each user gets a login role of their name (peer authentication), mapped to their uid;
    the members of the admin group also see every job, and those who left it no longer do.
    Without USERS or --all-passwd only the admin group is synchronised. See docs/privacy.md.
    """
    from slurm_io.store import accounts

    if all_passwd and users:
        raise click.UsageError("give USERS or --all-passwd, not both")
    cfg = cfg.with_overrides(admin_group=admin_group)
    admins = accounts.group_members(cfg.admin_group)
    if admins is None:
        click.echo(f"warning: Unix group {cfg.admin_group!r} does not exist: no admins",
                   err=True)
        admins = []
    if all_passwd:
        wanted = accounts.passwd_users()
        unknown: list[str] = []
    else:
        wanted, unknown = accounts.resolve_users(users)
    admin_entries, unknown_admins = accounts.resolve_users(
        a for a in admins if a not in {name for name, _ in wanted})
    for name in [*unknown, *unknown_admins]:
        click.echo(f"warning: no OS account {name!r}: skipped", err=True)
    with _connect(cfg) as conn:
        result = accounts.sync_accounts(conn, [*wanted, *admin_entries], admins)
    for label, names in (("created role", result.created), ("added to jobio_user", result.added),
                         ("uid mapped", result.mapped), ("admin granted", result.admins_granted),
                         ("admin revoked", result.admins_revoked)):
        for name in names:
            click.echo(f"{label}: {name}")
    for name, reason in result.skipped:
        click.echo(f"skipped {name}: {reason}", err=True)
    click.echo(f"{len(wanted) + len(admin_entries)} account(s) checked, "
               f"{len(result.created)} role(s) created")
    if unknown:
        sys.exit(1)


# -- collector ------------------------------------------------------------------------------
@main.command("collect")
@click.option("--once", is_flag=True, help="Run one cycle and exit.")
@click.option("--from", "from_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Replay captured reads DIR/<server>/<epoch>.txt in time order, then exit.")
@click.option("--command", help="The lctl command (default: lctl get_param "
              "mdt.*.job_stats obdfilter.*.job_stats).")
@click.option("--interval", type=float, help="Seconds between reads (default 120).")
@click.option("--name", "collector_name", help="This collector's name (default: short hostname).")
@click.option("--spool-dir", type=click.Path(path_type=Path))
@click.option("--command-timeout", type=float, help="Seconds before lctl is killed (90).")
@click.option("--jobid-format", "jobid_formats", multiple=True,
              help="jobid_name grammar, repeatable (default %j:%u:%H and %e.%u).")
@click.option("--system-uid-max", type=int, help="uids up to this are system load (999).")
@click.option("--system-uid", "system_uids", type=int, multiple=True,
              help="Further system uids, repeatable (default 65534).")
@click.pass_obj
def collect(cfg: Config, once: bool, from_dir: Path | None, command: str | None,
            interval: float | None, collector_name: str | None, spool_dir: Path | None,
            command_timeout: float | None, jobid_formats: tuple[str, ...],
            system_uid_max: int | None, system_uids: tuple[int, ...]) -> None:
    """Read Lustre job_stats, compute per-interval deltas, store them in PostgreSQL."""
    from slurm_io.collect import daemon
    from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
    from slurm_io.store import db
    from slurm_io.store.spool import Spool

    cfg = cfg.with_overrides(command=command, interval=interval, collector_name=collector_name,
                             spool_dir=spool_dir, command_timeout=command_timeout,
                             jobid_formats=jobid_formats or None, system_uid_max=system_uid_max,
                             system_uids=system_uids or None)
    grammar = JobIdGrammar.from_config(cfg.jobid_formats, cfg.system_uid_max, cfg.system_uids)
    spool = Spool(cfg.spool)
    link = daemon.DatabaseLink(db.upgrading_factory(cfg.dsn, state_dir=cfg.state_dir))
    stop = daemon.StopFlag()
    stop.install()
    if from_dir is not None:
        totals = daemon.replay(from_dir, state_dir=cfg.state_dir, spool=spool, link=link,
                               classify=ClassifyCache(grammar), period=cfg.interval, stop=stop)
        click.echo(" ".join(f"{k}={v}" for k, v in totals.items()))
        sys.exit(0 if totals["spool_depth"] == 0 else 3)
    rc = daemon.live(name=cfg.collector_name, command=cfg.command,
                     command_timeout=cfg.command_timeout, interval=cfg.interval,
                     state_dir=cfg.state_dir, spool=spool, link=link,
                     classify=ClassifyCache(grammar), once=once, stop=stop)
    sys.exit(rc)


# -- views ----------------------------------------------------------------------------------
def _parse_time(value: str | None, default: float) -> float:
    from slurm_io.timeparse import parse_time

    return default if value is None else parse_time(value)


@main.command("usage")
@click.option("-S", "--starttime", help="Start (sacct-like: 2026-11-20T08:00, now-1day, ...).")
@click.option("-E", "--endtime", help="End (default now).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--attribution", is_flag=True,
              help="Also split the load into jobs, recovered, users, hosts and nobody.")
@click.pass_obj
def usage(cfg: Config, starttime: str | None, endtime: str | None, as_json: bool,
          attribution: bool) -> None:
    """Totals per counter over a time range, by id class and by filesystem."""
    from slurm_io.report import unattributed
    from slurm_io.report import usage as usage_view

    now = time.time()
    end = _parse_time(endtime, now)
    start = _parse_time(starttime, end - 86400)
    with _connect(cfg) as conn:
        result = usage_view.usage(conn, start, end)
        if attribution:
            result["attribution"] = unattributed.split(conn, start, end, now=now)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        click.echo(usage_view.render_table(result))
        if attribution:
            click.echo("")
            click.echo(unattributed.render(result["attribution"]))


@main.command("show")
@click.argument("jobids", nargs=-1)
@click.option("-u", "--user", help="Jobs of this user (with -S/-E; default: the last day).")
@click.option("-S", "--starttime", help="With -u: jobs running after this time.")
@click.option("-E", "--endtime", help="With -u: jobs running before this time (default now).")
@click.option("--json", "as_json", is_flag=True, help="A JSON list, every counter by name.")
@click.option("-P", "--parsable2", "parsable", is_flag=True, help="`|`-separated, like sacct.")
@click.option("-o", "--format", "fmt", help="Fields for -P (sacct names or Lustre counters).")
@click.option("-n", "--noheader", is_flag=True)
@click.option("--targets", is_flag=True, help="Add the per-target view.")
@click.option("--timeline", is_flag=True, help="Add the timeline (collector resolution).")
@click.pass_obj
def show(cfg: Config, jobids: tuple[str, ...], user: str | None, starttime: str | None,
         endtime: str | None, as_json: bool, parsable: bool, fmt: str | None, noheader: bool,
         targets: bool, timeline: bool) -> None:
    """A job's I/O: totals, per target, timeline, quality. `jobio JOBID` is short for this.

    JOBID as in sacct -j: 123, an array's tasks 123, one task 123_4. A running job shows its
    I/O so far. Users see their own jobs only (enforced by the database).
    """
    from slurm_io.attribute.sql import JobInfo, find_jobs, user_jobs
    from slurm_io.report import show as show_mod

    if not jobids and not user:
        raise click.UsageError("give job ids, or -u USER")
    now = time.time()
    reports = []
    missing = []
    with _connect(cfg, upgrade=False) as conn:
        infos: list[JobInfo] = []
        for spec in jobids:
            if not JOBID_ARG.match(spec):
                raise click.UsageError(f"not a job id: {spec!r}")
            found = find_jobs(conn, spec)
            if not found and "_" not in spec:
                # not (yet) in the job table: what the collectors stored under its id
                n = int(spec.split(".", 1)[0])
                found = [JobInfo(n, str(n), None, None, None, None, None, (), None, None,
                                 None, None, None, None)]
            if not found:
                missing.append(spec)
            infos += found
        if user:
            end = _parse_time(endtime, now)
            infos += user_jobs(conn, user, _parse_time(starttime, end - 86400), end)
        for info in infos:
            r = show_mod.job_report(conn, info, now=now, resolution=cfg.interval)
            if info.start is None and not r["totals"]:
                missing.append(info.jobid)
                continue
            reports.append(r)
    if as_json:
        click.echo(json.dumps(reports, indent=2, sort_keys=True))
    elif parsable:
        click.echo(show_mod.parsable(reports, fmt or show_mod.DEFAULT_FORMAT,
                                     header=not noheader))
    else:
        click.echo("\n\n".join(show_mod.render(r, targets=targets, timeline=timeline)
                                for r in reports))
    for j in missing:
        click.echo(f"jobio: job {j}: no such job, or no I/O recorded for it", err=True)
    if missing:
        sys.exit(1)


@main.command("attribute")
@click.option("--since", help="Jobs that ended after this time (default now-7days).")
@click.option("--limit", type=int, help="At most this many jobs.")
@click.pass_obj
def attribute_cmd(cfg: Config, since: str | None, limit: int | None) -> None:
    """Attribute finished jobs and store the results (for mails and reports).

    A job is attributed again until every collector has read past its end ("complete").
    """
    from slurm_io.attribute.sql import attribute_jobs, pending_jobs

    now = time.time()
    with _connect(cfg) as conn:
        jobs = pending_jobs(conn, _parse_time(since, now - 7 * 86400), limit)
        n, complete = attribute_jobs(conn, jobs, now=now, resolution=cfg.interval)
    click.echo(f"attributed {n} job(s), {complete} complete")


@main.command("simulate")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--hours", type=float, default=6.0, show_default=True)
@click.option("--nodes", type=int, default=64, show_default=True)
@click.option("--oss", type=int, default=4, show_default=True)
@click.option("--users", type=int, default=12, show_default=True)
@click.option("--jobs-per-hour", type=float, default=20.0, show_default=True)
@click.option("--start", help="Start time of the simulated period (default: a fixed date).")
@click.option("--no-outage", is_flag=True, help="Do not simulate a collector outage.")
def simulate_cmd(out: Path, seed: int, hours: float, nodes: int, oss: int, users: int,
                 jobs_per_hour: float, start: str | None, no_outage: bool) -> None:
    """Write a simulated cluster's captured reads (--from layout) and its sacct job list."""
    from slurm_io.simulate import simulate

    t0 = _parse_time(start, 1_795_000_000.0)
    summary = simulate(out, seed=seed, start=t0, hours=hours, n_nodes=nodes, n_oss=oss,
                       n_users=users, jobs_per_hour=jobs_per_hour, outage=not no_outage)
    click.echo(json.dumps(summary, indent=2, sort_keys=True, default=str))


@main.command("demo")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("out"),
              show_default=True, help="Where the simulated cluster and reports are written.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.pass_obj
def demo(cfg: Config, out: Path, seed: int) -> None:
    """Simulate a cluster, collect it with --from, and print what was stored."""
    from slurm_io import demo as demo_mod

    demo_mod.run(cfg, out, seed=seed, echo=click.echo)


# -- jobs -----------------------------------------------------------------------------------
@main.group("jobs")
def jobs_group() -> None:
    """Slurm job records: import sacct text, sync from sacct (or pyslurm)."""


def _print_run(result: Any, label: str) -> None:
    for problem in result.problems:
        click.echo(f"jobio: {label}: {problem}", err=True)
    c = result.counts
    click.echo(f"{label}: {result.fetched} job(s): imported {c.inserted}, updated {c.updated}, "
               f"unchanged {c.unchanged}, problems {len(result.problems)}")


@jobs_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True,
                                        path_type=Path))
@click.option("--tz", help="Time zone of the file's times, e.g. UTC (default: this machine's "
              "local time, which is what sacct prints).")
@click.pass_obj
def jobs_import(cfg: Config, file: Path, tz: str | None) -> None:
    """Import `sacct -P` text (with its header line; FILE or - for stdin).

    Unreadable lines are reported on stderr and skipped; the exit status stays 0.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from slurm_io.jobs.sync import import_sacct_text

    try:
        zone = ZoneInfo(tz) if tz else None
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise click.BadParameter(f"unknown time zone {tz!r}", param_hint="--tz") from e
    text = sys.stdin.read() if str(file) == "-" else file.read_text(errors="replace")
    with _connect(cfg) as conn:
        result = import_sacct_text(conn, text, tz=zone)
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
    start = None if since is None else _parse_time(since, now)
    end = None if until is None else _parse_time(until, now)
    source = default_source(cfg, sacct=sacct_path)
    with _connect(cfg) as conn:
        try:
            result = sync_jobs(conn, source, since=start, until=end, now=now)
        except SourceError as e:
            raise click.ClickException(str(e)) from e
    window = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(result.since or 0))
    _print_run(result, f"{type(source).__name__} since {window}")


# -- per-job I/O mail (docs/mail.md) --------------------------------------------------------
@main.group("mail")
def mail_group() -> None:
    """Your per-job I/O mails: turn them off or on, see what applies (docs/mail.md)."""


def _mail_set(cfg: Config, on: bool, user: str | None) -> None:
    from psycopg import errors

    from slurm_io.mail import preferences

    with _connect(cfg) as conn:
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
    import pwd

    from slurm_io.mail import preferences
    from slurm_io.mail.builder import MailSettings
    from slurm_io.mail.recipients import apply_rule
    from slurm_io.report.counters import human_bytes

    try:
        s = MailSettings.from_config(cfg)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    with _connect(cfg) as conn:
        try:
            uid = preferences.resolve_uid(conn, user)
        except preferences.NoUidError as e:
            raise click.ClickException(str(e)) from e
        pref = preferences.get(conn, uid)
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    policy = {"all": "every job", "off": "no job (mails are off for everyone)",
              "mail_type_end": "jobs submitted with --mail-type=END or ALL",
              "above_size": f"jobs that read and wrote {human_bytes(s.min_bytes)} or more"}
    if pref.enabled is None:
        choice = "not set: the site policy applies"
    else:
        when = pref.changed_at.strftime("%Y-%m-%d %H:%M") if pref.changed_at else "?"
        choice = f"{'on' if pref.enabled else 'off'} (since {when})"
    click.echo(f"user:    {name} (uid {uid})")
    click.echo(f"mails:   {choice}")
    click.echo(f"policy:  {s.policy}: {policy.get(s.policy, s.policy)}")
    click.echo(f"address: {apply_rule(name, domain=s.domain, address=s.address, uid=uid)}"
               " (a job's --mail-user goes first)")


@main.command("report")
@click.argument("jobid")
@click.option("--eml", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the whole mail (multipart, opens in a mail client) to FILE.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the mail's HTML part (opens in a browser) to FILE.")
@click.pass_obj
def report_cmd(cfg: Config, jobid: str, eml: Path | None, html_file: Path | None) -> None:
    """A job's I/O mail, mailed or not: its text on the terminal, or --eml/--html files.

    The report the site mails at a job's end (figures, timeline, I/O quality, advice); see
    docs/mail.md. Users see their own jobs only.
    """
    from slurm_io.attribute.sql import find_jobs
    from slurm_io.mail.builder import MailBuilder, text_part
    from slurm_io.mail.outbox import write_message

    if not JOBID_ARG.match(jobid):
        raise click.UsageError(f"not a job id: {jobid!r}")
    try:
        builder = MailBuilder(cfg)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    with _connect(cfg, upgrade=False) as conn:
        infos = find_jobs(conn, jobid)
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
@main.command("top")
@click.option("--once", is_flag=True, help="Print one table and exit.")
@click.option("--sort", type=click.Choice(["write", "read", "meta", "reqs"]), default="write",
              show_default=True)
@click.option("--fs", help="Only this filesystem.")
@click.option("--kind", type=click.Choice(["MDT", "OST"]), help="Only MDTs or OSTs.")
@click.option("-u", "--user", help="Only this user's jobs and load.")
@click.option("--at", help="Show the interval at or before this time (sacct-like time); "
              "refreshing steps forward one interval at a time.")
@click.option("-n", "--lines", type=int, help="Rows (default: 20, or the terminal's height).")
@click.option("-d", "--delay", type=float, help="Seconds between refreshes (default: the "
              "collector interval).")
@click.option("--json", "as_json", is_flag=True, help="With --once: JSON.")
@click.pass_obj
def top_cmd(cfg: Config, once: bool, sort: str, fs: str | None, kind: str | None,
            user: str | None, at: str | None, lines: int | None, delay: float | None,
            as_json: bool) -> None:
    """The jobs (and users/hosts outside jobs) doing the most I/O now, like lltop.

    One collector interval: write and read MB, metadata operations, requests, nodes and work
    dir per job; Ctrl-C quits.
    """
    import shutil

    from slurm_io.report import top as top_mod

    t_at = None if at is None else _parse_time(at, time.time())
    with _connect(cfg, upgrade=False) as conn:
        if once or as_json:
            t = top_mod.top(conn, at=t_at, interval=cfg.interval, fs=fs, kind=kind, user=user,
                            sort=sort, limit=lines or 20)
            if as_json:
                click.echo(json.dumps(top_mod.as_json(t), indent=2, sort_keys=True))
            else:
                click.echo(top_mod.render(t))
            return
        tty = sys.stdout.isatty()
        try:
            while True:
                size = shutil.get_terminal_size()
                t = top_mod.top(conn, at=t_at, interval=cfg.interval, fs=fs, kind=kind,
                                user=user, sort=sort, limit=lines or max(5, size.lines - 6))
                conn.rollback()  # no transaction left open while sleeping
                # clear the screen on a terminal; frames one after the other in a pipe
                click.echo("\033[H\033[2J" if tty else "", nl=not tty, color=True)
                click.echo(top_mod.render(t, width=size.columns if tty else None))
                click.echo(f"(every {delay or cfg.interval:g} s; Ctrl-C quits)")
                time.sleep(delay or cfg.interval)
                if t_at is not None:
                    t_at += cfg.interval
        except KeyboardInterrupt:
            click.echo("")


@main.group("lassi")
def lassi_group() -> None:
    """LASSi risk and ops metrics per job and filesystem per hour (docs/views.md)."""


def _days(date_: str | None, start: str | None, end: str | None) -> list[Any]:
    from slurm_io.lassi.sql import day_list
    from slurm_io.report.daily import parse_day

    try:
        if date_ and (start or end):
            raise click.UsageError("give --date, or -S/-E")
        if start or end:
            first = parse_day(start or end)
            return day_list(first, parse_day(end) if end else first)
        return [parse_day(date_)]
    except ValueError as e:
        raise click.BadParameter(str(e)) from e


@lassi_group.command("compute")
@click.option("--date", "date_", help="The UTC day (YYYY-MM-DD, today, yesterday; default "
              "yesterday).")
@click.option("-S", "--starttime", help="First day of a range (computed in order, so that "
              "each day's baseline is the days before).")
@click.option("-E", "--endtime", help="Last day of the range (default: the first).")
@click.option("--a", "a", type=float, help="Risk scaling factor (default lassi.a, 2).")
@click.option("--baseline-days", type=int, help="Baseline window (default lassi.baseline_days,"
              " 7).")
@click.pass_obj
def lassi_compute(cfg: Config, date_: str | None, starttime: str | None, endtime: str | None,
                  a: float | None, baseline_days: int | None) -> None:
    """Compute and store the LASSi hours of a day (or of a range of days)."""
    from slurm_io.lassi.sql import compute_day

    days = _days(date_, starttime, endtime)
    with _connect(cfg) as conn, click.progressbar(days, label="computing LASSi metrics",
                                                 file=sys.stderr) as bar:
        results = [compute_day(conn, d, a=a or cfg.lassi_a,
                                   baseline_days=baseline_days or cfg.lassi_baseline_days)
                       for d in bar]
    for r in results:
        base = ", ".join(f"{fs}: {r.baseline_hours.get(fs, 0)} h"
                         + (f" (own day for {len(r.own_metrics[fs])} metrics)"
                            if r.own_metrics.get(fs) else "") for fs in r.fs)
        click.echo(f"{r.day}: {r.job_hours} job hours, {r.fs_hours} filesystem hours in "
                   f"{r.seconds:.2f} s; baseline {base or '-'}")


@main.command("daily")
@click.option("--date", "date_", help="The UTC day (YYYY-MM-DD, today, yesterday; default "
              "yesterday).")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory for index.html, the PNGs and jobs/*.html.")
@click.option("--mail-to", "mail_to", multiple=True, help="Mail the page to this address "
              "(repeatable, or comma-separated); SMTP from the [mail] section.")
@click.option("--recompute", is_flag=True, help="Compute the day's LASSi hours again.")
@click.option("--top", "top_n", type=int, default=15, show_default=True,
              help="Rows of the top tables.")
@click.pass_obj
def daily_cmd(cfg: Config, date_: str | None, out: Path, mail_to: tuple[str, ...],
              recompute: bool, top_n: int) -> None:
    """A day's HTML report with plots: LASSi risk, request quality, rates, heat map, top
    jobs and users (with a page per job)."""
    from slurm_io.report import daily

    try:
        day = daily.parse_day(date_)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--date") from e
    with _connect(cfg) as conn:
        rep = daily.build(conn, day, out, interval=cfg.interval, a=cfg.lassi_a,
                          baseline_days=cfg.lassi_baseline_days, top_n=top_n,
                          recompute=recompute, progress=True,
                          log=lambda m: click.echo(m, err=True))
    click.echo(f"daily report of {day}: {rep.index} ({len(rep.pngs)} plots, "
               f"{len(rep.job_pages)} job pages)")
    to = [x.strip() for t in mail_to for x in t.split(",") if x.strip()]
    if to:
        if not cfg.mail_host:
            click.echo("mail not sent: no [mail] host configured", err=True)
            return
        password = None
        if cfg.mail_password_file is not None:
            password = cfg.mail_password_file.read_text().strip()
        try:
            click.echo(daily.mail(rep, to, host=cfg.mail_host, port=cfg.mail_port,
                                  sender=cfg.mail_from or "slurm-io@localhost",
                                  starttls=cfg.mail_starttls, ssl=cfg.mail_ssl,
                                  user=cfg.mail_user, password=password,
                                  timeout=cfg.mail_timeout))
        except OSError as e:  # smtplib errors are OSErrors
            click.echo(f"mail not sent: {cfg.mail_host}:{cfg.mail_port}: {e}", err=True)
            sys.exit(1)


@main.command("slowdown")
@click.option("-u", "--user", required=True)
@click.option("--name", help="Only jobs of this name.")
@click.option("--submit-line", "by_submit_line", is_flag=True,
              help="Group by submit line instead of job name.")
@click.option("-S", "--starttime", help="Jobs started after this (default now-30days).")
@click.option("-E", "--endtime", help="Jobs started before this (default now).")
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path),
              help="Scatter plot of run time against filesystem risk (the largest group).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def slowdown_cmd(cfg: Config, user: str, name: str | None, by_submit_line: bool,
                 starttime: str | None, endtime: str | None, png: Path | None,
                 as_json: bool) -> None:
    """Run time of a user's repeated jobs against the filesystem's LASSi risk during each run."""
    from slurm_io.report import slowdown

    now = time.time()
    end = _parse_time(endtime, now)
    start = _parse_time(starttime, end - 30 * 86400)
    with _connect(cfg, upgrade=False) as conn:
        groups = slowdown.analyse(conn, user, start=start, end=end, name=name,
                                  by_submit_line=by_submit_line)
    if not name:
        groups = [g for g in groups if len(g["jobs"]) > 1] or groups
    if as_json:
        click.echo(json.dumps(slowdown.as_json(groups), indent=2, sort_keys=True))
    else:
        click.echo(slowdown.render(user, groups))
    if png is not None and groups:
        slowdown.plot(png, user, groups[0])
        click.echo(f"plot: {png}", err=True)
    if not groups:
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
