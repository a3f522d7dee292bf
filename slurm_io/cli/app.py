"""The `jobio` group, its global options and the helpers every command uses.

`jobio 12345` means `jobio show 12345` (like `sacct -j`), so the group routes a first
argument that looks like a job id to `show`.

Errors: a person's mistake (a usage error, a bad value) and anything unexpected end in one line
on stderr, `jobio: error: ...`, and a non-zero exit, never a traceback (`-v` adds the
traceback). With $SLURM_IO_TRACEBACK=1 (set by the test suite) unexpected exceptions propagate
unchanged, so that real bugs stay visible in tests.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from slurm_io import config as config_mod
from slurm_io.cli import extras
from slurm_io.config import Config, ConfigError
from slurm_io.jobs.spec import JOBID_ARG  # the commands import it from here

TRACEBACK_ENV = "SLURM_IO_TRACEBACK"
# click >= 8.2 raises this usage error to print a group's help when no command is given
_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", ())  # type: ignore[assignment]


def one_line(text: str) -> str:
    """`text` on one line (server messages carry DETAIL/HINT lines)."""
    return " ".join(text.split())


class JobioError(click.ClickException):
    """An error shown as one line, `jobio: error: ...` (click's usage errors print three)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(one_line(message))
        self.exit_code = exit_code

    def show(self, file: Any = None) -> None:
        click.echo(f"jobio: error: {self.format_message()}", err=True)
# what a login node's `jobio` can do through the service (`server` set; slurm_io/client)
CLIENT_COMMANDS = extras.CLIENT_COMMANDS


# command -> the module of slurm_io.cli that registers it. A command's module is imported when
# the command is asked for, all of them only for the help (issue 25: a login node's `jobio
# JOBID` paid for the nine modules and what they import); tests/cli/test_lazy_commands.py
# holds this table to the modules' registrations.
COMMAND_MODULES: dict[str, str] = {
    "problems": "admin", "alerts": "alerts", "collect": "collect", "simulate": "collect",
    "demo": "collect", "db": "db", "exporter": "exporter", "jobs": "jobs", "mail": "mail",
    "report": "mail", "report-daemon": "mail", "reports": "mail", "serve": "serve", "web": "web",
    **dict.fromkeys(("usage", "show", "attribute", "top", "lassi", "daily", "slowdown"),
                    "views"),
}


def load_commands() -> None:
    """Register every command (the help, completion, and whoever wants `main.commands`)."""
    for module in sorted(set(COMMAND_MODULES.values())):
        _import_command_module(module)


def _import_command_module(module: str) -> None:
    # __import__, not importlib.import_module: the latter bypasses the interpreter's import
    # timing, and `python -X importtime` (bench_startup.py, tests/bench) must see the module
    __import__(f"slurm_io.cli.{module}")


class JobioGroup(click.Group):
    """A click group where an unknown first word that looks like a job id means `show`, and
    whose commands are registered by their module when first asked for (COMMAND_MODULES)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            _import_command_module(module)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_commands()
        return super().list_commands(ctx)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if (name is not None and name not in COMMAND_MODULES and name not in self.commands
                and JOBID_ARG.match(name)):
            return "show", self.get_command(ctx, "show"), args  # the job id stays show's
        return super().resolve_command(ctx, args)

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except _HELP:  # `jobio` alone: the help, as click prints it
            raise
        except click.UsageError as e:  # the group's own options: `jobio --bogus`
            raise JobioError(e.format_message(), e.exit_code) from e

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as e:
            err = _translated(e, ctx.invoked_subcommand, ctx.params.get("verbose") or 0)
            if err is e:
                raise
            raise err from e


def _translated(e: Exception, command: str | None, verbose: int) -> Exception:
    """What the group makes of `e` raised by `command` or by the group's own callback: the
    exception to raise in its place (`e` itself when it stays as it is)."""
    # `jobio db` alone: its help (_HELP may be (): a tuple, not a union)
    if isinstance(e, (JobioError, _HELP)):
        return e
    if isinstance(e, click.UsageError):  # a subcommand's: `jobio show -S 2026-13-45`
        return JobioError(e.format_message(), e.exit_code)
    if isinstance(e, click.ClickException | click.exceptions.Exit | click.Abort):
        return e
    hint = extras.missing_extra(e, command)
    if hint is not None:  # a role's install without this command's extra
        return JobioError(hint)
    from slurm_io.cli.refusal import as_refusal

    refused = as_refusal(e)  # the database's "permission denied": one line
    if refused is not None:
        return JobioError(refused.format_message())
    if ((isinstance(e, OSError) and e.errno == errno.EPIPE)  # `jobio ... | head`
            or os.environ.get(TRACEBACK_ENV) == "1"):
        return e
    return _one_line(verbose, e)


def exit_as_group(e: BaseException, command: str) -> NoReturn:
    """Print what `jobio` prints and exit as it exits when `command`, run by the group, raised
    `e` (cli/entry.py runs `jobio JOBID` without click and ends its failures here): the same
    translation (_translated) and click's own ending of a standalone command."""
    from slurm_io.config import ConfigError
    from slurm_io.report.show_docs import AmbiguousJob

    if isinstance(e, ConfigError | AmbiguousJob):  # as the group's callback and `show` say it
        e = click.UsageError(str(e))
    e = _schema_error(e) or e

    def fail() -> None:
        if not isinstance(e, Exception):  # KeyboardInterrupt: click's "Aborted!"
            raise e
        err = _translated(e, command, 0)
        raise err

    click.Command("jobio", callback=fail).main(args=[], prog_name="jobio")
    raise AssertionError("a standalone click command exits")


def _one_line(verbose: int, e: Exception) -> JobioError:
    """What an exception no command handled becomes: one line (the traceback too with -v)."""
    if verbose:
        import traceback

        traceback.print_exception(e)
    message = one_line(str(e)) or type(e).__name__
    if type(e).__name__ == "UndefinedTable":  # psycopg's: a database never upgraded
        return JobioError(f"the database has no slurm-io schema (as the owner, run "
                          f"`jobio db upgrade`): {message}")
    if not isinstance(e, OSError | ValueError) and type(e).__module__.split(".")[0] not in (
            "psycopg",):
        message = f"{type(e).__name__}: {message}"
    return JobioError(message + ("" if verbose else "  (-v: traceback)"))


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
    try:
        cfg = config_mod.load(config_file)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    ctx.obj = cfg.with_overrides(dsn=dsn, state_dir=state_dir, server=server)
    if dsn and (ctx.obj.server or ctx.obj.read_dsn):  # an explicit database wins over a
        ctx.obj = ctx.obj.replace(server=None, read_dsn=None)  # service and a standby
    if ctx.obj.server and ctx.invoked_subcommand not in CLIENT_COMMANDS:
        raise click.UsageError(
            f"`jobio {ctx.invoked_subcommand}` does not work through the jobio service "
            f"({ctx.obj.server}): run it on the database host")
    if not ctx.obj.server:  # client mode logs nothing: logging and its imports cost a
        from slurm_io.cli.logs import setup_logging  # login node's `jobio` ~2 ms (issue 25)

        setup_logging(verbose)


def connect_db(cfg: Config, *, upgrade: bool = True) -> Any:
    """cli.connect.connect_db, a schema this release cannot use as one line (JobioError)."""
    from slurm_io.cli import connect

    return _one_line_schema(connect.connect_db, cfg, upgrade=upgrade)


def connect_read(cfg: Config) -> Any:
    """cli.connect.connect_read (the standby of `read_dsn`, else the database, never
    upgraded), a schema this release cannot use as one line (JobioError)."""
    from slurm_io.cli import connect

    return _one_line_schema(connect.connect_read, cfg)


def _one_line_schema(opener: Any, cfg: Config, **kw: Any) -> Any:
    """`opener(cfg, **kw)`, a schema this release cannot use raised as its one line."""
    try:
        return opener(cfg, **kw)
    except Exception as e:
        err = _schema_error(e)
        if err is None:
            raise
        raise err from e


def read_lag(cfg: Config, conn: Any) -> float | None:
    """cli.connect.read_lag: the standby's replication lag, None without `read_dsn`."""
    from slurm_io.cli import connect

    return connect.read_lag(cfg, conn)


def _schema_error(e: BaseException) -> JobioError | None:
    """The one line of store.migrate.SchemaMismatch (the module is loaded when one was
    raised; not imported here, psycopg with it), else None."""
    migrate = sys.modules.get("slurm_io.store.migrate")
    if migrate is not None and isinstance(e, migrate.SchemaMismatch):
        return JobioError(str(e))
    return None


# -- database ------------------------------------------------------------------------------


def parse_time_arg(value: str | None, default: float, option: str | None = None) -> float:
    """A sacct-like time option's value (`default` when absent); a mistake is a usage error
    naming the option."""
    from slurm_io.timeparse import parse_time

    if value is None:
        return default
    try:
        return parse_time(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from e
