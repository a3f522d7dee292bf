"""The console script `jobio`: what a person types most, `jobio JOBID`, without click.

`jobio [--server URL] [show] JOBID...` with nothing else is run here: the configuration,
the report (from the database, or from the jobio service in client mode) and its text, as
the `show` command of cli/views.py prints it (show_reports is that command's own code).
Anything else, and every failure, goes to the click group (cli/app.py), which prints and
exits as it always did. Why: importing click and building the group with its options and
`show` with its ten was ~20 ms of CPU of a start-up whose floor is ~50 ms in client mode
and ~120 ms with the database driver (issue 25, bench/README.md "Start-up round 3").
"""

from __future__ import annotations

import codecs
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from slurm_io.jobs.spec import JOBID_ARG

if TYPE_CHECKING:
    from slurm_io.config import Config
    from slurm_io.report.jobreport import JobReport
    from slurm_io.report.show_docs import Missing


def main() -> None:
    """`jobio`: the plain `jobio JOBID` here, everything else by the click group.

    The plain path runs without the cyclic garbage collector: its imports make tens of
    thousands of objects that live as long as the process, and each of the collections they
    trigger walks them all (~1.5 ms of a ~60 ms client start-up); what it allocates after
    is a handful of reports, freed by their reference counts. The group (long commands, the
    service, the collector) runs with it as always."""
    gc.disable()
    plan = plain_show(sys.argv[1:], os.environ)
    if plan is None:
        gc.enable()
        from slurm_io.cli.app import main as group

        group()
        return
    server, jobids = plan
    try:
        status = _show(server, jobids)
    except (Exception, KeyboardInterrupt) as e:
        from slurm_io.cli.app import exit_as_group

        exit_as_group(e, "show")
    exit_now(status)


def exit_now(status: int) -> NoReturn:
    """End the process with `status` once its output is written, without the interpreter's
    teardown: freeing every module, class and function one by one is ~7 ms of CPU after a
    client-mode `jobio JOBID` has printed (more with the database driver), time a person
    waits for the prompt and the floor's `python -c "import ..."` pays too (issue 25). Safe
    here because nothing of the plain path needs an ending: no threads, no atexit work but
    logging's, the connection closed by its `with`. A stream that cannot be flushed (a
    closed pipe) takes Python's own ending, so that it is reported as it always was."""
    if "logging" in sys.modules:  # (set up in local mode: its handlers write to stderr)
        sys.modules["logging"].shutdown()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)


def plain_show(args: list[str], environ: Any) -> tuple[str | None, list[str]] | None:
    """(the --server URL or None, the job ids) of `jobio [--server URL] [show] JOBID...`
    when that is all the command line says, else None (the click group's to parse)."""
    if "_JOBIO_COMPLETE" in environ:  # click's shell completion
        return None
    server = None
    if len(args) >= 2 and args[0] == "--server" and not args[1].startswith("-"):
        server, args = args[1], args[2:]
    elif args and args[0].startswith("--server=") and len(args[0]) > len("--server="):
        server, args = args[0][len("--server="):], args[1:]
    if args and args[0] == "show":
        args = args[1:]
    if not args or not all(JOBID_ARG.match(a) for a in args):
        return None
    from slurm_io.report.show import parse_job_spec

    if any(parse_job_spec(a) is None for a in args):  # show's own usage error
        return None
    return server, args


def _show(server: str | None, jobids: list[str]) -> int:
    """The group's callback and `show` for plain job ids: the exit status."""
    from slurm_io import config as config_mod
    from slurm_io.report import show as show_mod

    cfg = config_mod.load(None).with_overrides(server=server)
    if not cfg.server:  # as the group: client mode logs nothing
        from slurm_io.cli.logs import setup_logging

        setup_logging(0)
        from slurm_io.cli.connect import connect_read, read_lag

        connect: Callable[[Config], Any] = connect_read
    else:
        connect, read_lag = _no_database, _no_lag
    _, reports, missing = show_reports(cfg, jobids, None, None, None, None, time.time(),
                                       connect, read_lag)
    if reports:
        echo("\n\n".join(show_mod.render(r, targets=False, timeline=False) for r in reports))
    for m in missing:
        echo(f"jobio: {m.line}", err=True)
    return 1 if missing else 0


def show_reports(cfg: Config, jobids: list[str], user: str | None, start: float | None,
                 end: float | None, clusters: str | None, now: float,
                 connect: Callable[[Config], Any],
                 lag_of: Callable[[Config, Any], float | None]
                 ) -> tuple[list[dict[str, Any]], list[JobReport], list[Missing]]:
    """`jobio show`'s data: (the service's documents, [] from the database), the reports and
    the jobs not found. From the service when `cfg.server` is set (its failures are
    click.ClickException), else from a connection of `connect`; report.show_docs'
    AmbiguousJob for the caller to word."""
    if cfg.server:
        from slurm_io.client.commands import fetch_show
        from slurm_io.report.jobreport import JobReport

        docs, missing = fetch_show(cfg, jobids, user, start, end, clusters)
        return docs, [JobReport.from_json(d, now=now) for d in docs], missing
    from dataclasses import replace

    from slurm_io.report.show_docs import parse_clusters, show_documents

    with connect(cfg) as conn:
        lag = lag_of(cfg, conn)
        reports, missing = show_documents(
            conn, jobids, user, start, end, now=now, resolution=cfg.interval,
            clusters=parse_clusters(clusters),
            all_clusters=clusters is not None and parse_clusters(clusters) is None)
    return [], [replace(r, replication_lag=lag) for r in reports], missing


def echo(text: str, *, err: bool = False) -> None:
    """click.echo of a line of text (click only where it would change the bytes: its ANSI
    escapes are stripped when the output is no terminal)."""
    out = sys.stderr if err else sys.stdout
    if "\x1b" in text or out is None or codecs.lookup(out.encoding).name == "ascii":
        import click  # (click rewraps an ASCII stream to replace what it cannot encode)

        click.echo(text, err=err)
        return
    out.write(text + "\n")
    out.flush()


def _no_database(cfg: Config) -> Any:
    raise AssertionError("client mode opens no database")


def _no_lag(cfg: Config, conn: Any) -> float | None:
    raise AssertionError("client mode has no standby")
