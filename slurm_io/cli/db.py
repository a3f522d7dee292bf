"""`jobio db ...`: migrations, retention, users and the embedded PostgreSQL."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from slurm_io import clock
from slurm_io.cli.app import JobioError, connect_db, main
from slurm_io.config import Config


@main.group("db")
def db_group() -> None:
    """Schema migrations, retention and the embedded PostgreSQL."""


@db_group.command("upgrade")
@click.pass_obj
def db_upgrade(cfg: Config) -> None:
    """Apply pending migrations from sql/ (idempotent)."""
    from slurm_io import __version__
    from slurm_io.store import db, migrate

    def progress(step: str) -> None:
        # "applied NAME" on stdout as before, as each commits; the rest (a migration
        # starting, each partition's index built CONCURRENTLY) on stderr, so that an admin
        # sees a long upgrade move and scripts reading stdout see what they always saw
        click.echo(step, err=not step.startswith("applied "))

    with db.connect(cfg.dsn, state_dir=cfg.state_dir) as conn:
        applied = migrate.upgrade(conn, settings=migrate.config_settings(cfg),
                                  progress=progress)
        version = migrate.current_version(conn)
        state = migrate.read_state(conn)
    refused = migrate.mismatch(state, __version__)  # an older release's `db upgrade`
    if refused is not None:
        raise JobioError(refused)
    click.echo(f"schema at version {version}" + ("" if applied else " (nothing to do)"))


@db_group.command("prune")
@click.option("--older-than", help="raw deltas: drop whole days older than this, e.g. 90d "
              "(default: retention.raw)")
@click.option("--results-older-than", help="stored results (per-job and per-hour figures, "
              "LASSi hours): delete those older than this, e.g. 1825d "
              "(default: retention.results)")
@click.pass_obj
def db_prune(cfg: Config, older_than: str | None, results_older_than: str | None) -> None:
    """Retention: drop raw deltas by whole daily partitions and delete stored results
    (job_io, job_io_hour, LASSi hours) past their own, longer, retention."""
    from slurm_io.store import partitions, retention

    try:
        raw = partitions.parse_duration(older_than or cfg.retention_raw)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--older-than" if older_than
                                 else "retention.raw") from e
    try:
        results = partitions.parse_duration(results_older_than or cfg.retention_results)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--results-older-than"
                                 if results_older_than else "retention.results") from e
    now = clock.now()
    with connect_db(cfg) as conn:
        unattributed = retention.unattributed_before(conn, now - raw)
        try:
            dropped = partitions.prune(conn, raw, now)
        except partitions.PartitionBusy as busy:
            for name in busy.dropped:
                click.echo(f"dropped {name}")
            # a long reader (`jobio daily`, a report) holds jobstats_delta: the DROP gave up
            # rather than stall the collectors' writes queued behind it (partitions.prune);
            # the soak found a timer of `daily` firing with this one (bench/README.md)
            raise JobioError(
                "db prune: jobstats_delta is in use by a long query (a `jobio daily` or "
                "report running now?): its old days are dropped at the next prune; run it "
                "when no report runs") from None
        removed = retention.prune_results(conn, now - results)
        heat = _forget_heat(conn)
    for name in dropped:
        click.echo(f"dropped {name}")
    click.echo(f"{len(dropped)} partition(s) dropped")
    for table, n in removed.items():
        click.echo(f"{table}: {n} row(s) deleted")
    if heat:
        click.echo(f"heat_hour: {heat} hour(s) deleted with their raw days")
    if unattributed:
        click.echo(f"warning: {unattributed} finished job(s) in the dropped days had no "
                   "complete stored attribution (run `jobio attribute` before pruning)",
                   err=True)


@db_group.command("pack")
@click.option("--min-age", default="6h", show_default=True,
              help="pack hours that ended at least this long ago (s m h d w)")
@click.option("--max-wait", default="2d", show_default=True,
              help="pack hours this old even if some of their finished jobs have no "
              "complete attribution yet")
@click.option("--rows-per-transaction", type=click.IntRange(min=1), default=50_000,
              show_default=True, help="hot deltas packed per transaction")
@click.pass_obj
def db_pack(cfg: Config, min_age: str, max_wait: str, rows_per_transaction: int) -> None:
    """Move closed hours of raw deltas into the packed tier (~5-8x smaller, read alike).

    Online (collectors go on writing), in small transactions: safe to stop at any time and
    to run again. Late deltas of a packed hour are read hot until the next run merges them.
    See docs/storage.md ("Two tiers of raw deltas")."""
    from slurm_io.report import heat_hours
    from slurm_io.store import partitions, tiers_pack

    ages = {}
    for name, text in (("--min-age", min_age), ("--max-wait", max_wait)):
        try:
            ages[name] = partitions.parse_duration(text)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint=name) from e
    with connect_db(cfg) as conn:
        done = tiers_pack.pack(
            conn, clock.now(), min_age=ages["--min-age"], max_wait=ages["--max-wait"],
            rows_per_transaction=rows_per_transaction,
            progress=lambda hour, n: click.echo(
                f"packed from {datetime.fromtimestamp(hour, UTC):%Y-%m-%d %H:00} UTC: "
                f"{n} delta(s)"))
        # the closed hours' heat-map counts, while their data is fresh in the cache: the
        # nightly `jobio daily` then reads them (report.heat_hours)
        summed = heat_hours.closed_hours(conn, clock.now(), cfg.interval, heat_hours.BASE)
    click.echo(f"{done.hours} hour(s) packed, {done.deltas} delta(s) in "
               f"{done.transactions} transaction(s); {done.skipped} hour(s) left hot "
               "(jobs still to attribute)")
    if done.converted:
        click.echo(f"{done.converted} day(s) of hour rows from before sql/0025 re-packed")
    click.echo(f"{summed} heat-map hour(s) summed")


def _forget_heat(conn: Any) -> int:
    """The heat-map summaries of the days whose raw deltas are gone (report.heat_hours
    reads no summary of such a day anyway: this only frees their rows)."""
    from slurm_io.report import heat_sql
    from slurm_io.store import partitions

    if not heat_sql.usable(conn):
        return 0
    days = partitions.existing_days(conn)
    first = min(days) if days else partitions.day_of(clock.now()) + timedelta(days=1)
    return heat_sql.forget_before(
        conn, datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp())


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
@click.option("--connection-limit", type=click.IntRange(min=-1), default=8, show_default=True,
              help="connections each user's role may hold at once (-1: no limit)")
@click.argument("users", nargs=-1)
@click.pass_obj
def db_users(cfg: Config, all_passwd: bool, admin_group: str | None, connection_limit: int,
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
    with connect_db(cfg) as conn:
        result = accounts.sync_accounts(conn, [*wanted, *admin_entries], admins,
                                        connection_limit)
    for label, names in (("created role", result.created), ("added to jobio_user", result.added),
                         ("uid mapped", result.mapped), ("admin granted", result.admins_granted),
                         ("admin revoked", result.admins_revoked),
                         (f"connection limit {connection_limit}", result.limited)):
        for name in names:
            click.echo(f"{label}: {name}")
    for name, reason in result.skipped:
        click.echo(f"skipped {name}: {reason}", err=True)
    click.echo(f"{len(wanted) + len(admin_entries)} account(s) checked, "
               f"{len(result.created)} role(s) created")
    # a name given on the command line that was refused (a role of slurm-io itself, one
    # that holds more than a user's rights): the admin asked for it, so the exit says no.
    # --all-passwd only reports them, so that one odd passwd entry fails no hourly cron run.
    if unknown or any(name in users for name, _ in result.skipped):
        sys.exit(1)


# -- collector ------------------------------------------------------------------------------
