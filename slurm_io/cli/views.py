"""The reading commands: show, usage, attribute, top, lassi, daily, slowdown."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from slurm_io.cli.app import JOBID_ARG, connect_db, connect_read, main, parse_time_arg, read_lag
from slurm_io.config import Config


def time_range(starttime: str | None, endtime: str | None, now: float, span: float
               ) -> tuple[float, float]:
    """-S/-E: end default now, start default `span` before the end; -S after -E is a
    mistake (sacct refuses it too)."""
    end = parse_time_arg(endtime, now, "-E")
    start = parse_time_arg(starttime, end - span, "-S")
    if start > end:
        raise click.BadParameter(f"{starttime!r} is after the end ({endtime or 'now'!r})",
                                 param_hint="-S")
    return start, end


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
    start, end = time_range(starttime, endtime, now, 86400)
    split: unattributed.LoadSplit | None = None
    if cfg.server:
        from slurm_io.client.commands import fetch_usage

        result = fetch_usage(cfg, start, end, attribution)
        if as_json:  # the server's document as it came
            click.echo(json.dumps(result, indent=2, sort_keys=True))
            return
        u = usage_view.Usage.from_json(result)
        if attribution:
            split = unattributed.LoadSplit.from_json(result["attribution"])
    else:
        with connect_read(cfg) as conn:
            u = usage_view.usage(conn, start, end)
            if attribution:
                split = unattributed.split(conn, start, end, now=now)
    if as_json:
        doc = u.as_json()
        if split is not None:
            doc["attribution"] = split.as_json()
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        click.echo(usage_view.render_table(u))
        if split is not None:
            click.echo("")
            click.echo(unattributed.render(split))


@main.command("show")
@click.argument("jobids", nargs=-1)
@click.option("-u", "--user", help="Jobs of this user (with -S/-E; default: the last day).")
@click.option("-S", "--starttime", help="With -u: jobs running after this time.")
@click.option("-E", "--endtime", help="With -u: jobs running before this time (default now).")
@click.option("--json", "as_json", is_flag=True, help="A JSON list, every counter by name.")
@click.option("-P", "--parsable2", "parsable", is_flag=True, help="`|`-separated, like sacct.")
@click.option("-o", "--format", "fmt", help="Fields, as in sacct: names (JobID, ReadBytes, ...) "
              "or Lustre counters (open, mkdir ...), each with an optional %N width "
              "(ignored with -P); a table without -P.")
@click.option("-n", "--noheader", is_flag=True)
@click.option("--targets", is_flag=True, help="Add the per-target view.")
@click.option("--timeline", is_flag=True, help="Add the timeline (collector resolution).")
@click.option("-M", "--clusters", help="Jobs of these clusters (a,b or all), as sacct -M; "
              "needed when a job id exists on several clusters.")
@click.pass_obj
def show(cfg: Config, jobids: tuple[str, ...], user: str | None, starttime: str | None,
         endtime: str | None, as_json: bool, parsable: bool, fmt: str | None, noheader: bool,
         targets: bool, timeline: bool, clusters: str | None) -> None:
    """A job's I/O: totals, per target, timeline, quality. `jobio JOBID` is short for this.

    JOBID as in sacct -j: 123 (with an array's tasks or a het job's components), one task
    123_4, one het component 1853+1 (or its raw id). A running job shows its I/O so far.
    Users see their own jobs only (enforced by the database).
    """
    from slurm_io.report import show as show_mod

    if not jobids and not user:
        raise click.UsageError("give job ids, or -u USER")
    for spec in jobids:
        if not JOBID_ARG.match(spec):
            raise click.UsageError(f"not a job id: {spec!r}")
    if fmt is not None:
        try:
            show_mod.parse_format(fmt)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="-o/--format") from e
    for spec in jobids:
        if show_mod.parse_job_spec(spec) is None:
            raise click.UsageError(f"not a job id: {spec!r}")
    now = time.time()
    start: float | None = None
    end: float | None = None
    if user or starttime or endtime:
        start, end = time_range(starttime, endtime, now, 86400)
    from slurm_io.cli.entry import show_reports
    from slurm_io.report.show_docs import AmbiguousJob

    try:
        docs, reports, missing = show_reports(cfg, list(jobids), user, start, end, clusters,
                                              now, connect_read, read_lag)
    except AmbiguousJob as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps(docs if cfg.server else [r.as_json() for r in reports],
                              indent=2, sort_keys=True))
    elif parsable:
        click.echo(show_mod.parsable(reports, fmt or show_mod.DEFAULT_FORMAT,
                                     header=not noheader))
    elif fmt:
        if reports:
            click.echo(show_mod.table(reports, fmt, header=not noheader))
    elif reports:
        click.echo("\n\n".join(show_mod.render(r, targets=targets, timeline=timeline)
                                for r in reports))
    for m in missing:
        click.echo(f"jobio: {m.line}", err=True)
    if missing:
        sys.exit(1)


@main.command("attribute")
@click.option("--since", help="Jobs that ended after this time (default now-7days).")
@click.option("--limit", type=int, help="At most this many jobs.")
@click.pass_obj
def attribute_cmd(cfg: Config, since: str | None, limit: int | None) -> None:
    """Attribute finished jobs and store the results (for mails and reports).

    A job is attributed again until every collector has read past its end ("complete").
    Results are committed in chunks as they are made: a run that is stopped keeps them, and
    the next run does the rest.
    """
    from slurm_io.attribute.batch import attribute_pending

    now = time.time()
    since_t = parse_time_arg(since, now - 7 * 86400, "--since")
    with connect_db(cfg) as conn:
        n, complete = attribute_pending(conn, since_t, limit, now=now,
                                        resolution=cfg.interval)
    click.echo(f"attributed {n} job(s), {complete} complete")



@main.command("top")
@click.option("--once", is_flag=True, help="Print one table and exit (plain text, for "
              "scripts).")
@click.option("--sort", default="write", show_default=True, metavar="COUNTER",
              help="write, read, meta, reqs, or any counter (open, mkdir, getattr, "
              "write_bytes_samples, ...).")
@click.option("-g", "--group", "by", type=click.Choice(["job", "user", "account", "host",
              "fs"]), default="job", show_default=True, help="One line per ...")
@click.option("--rate", "rates", is_flag=True, help="Per-second rates instead of the "
              "interval's totals.")
@click.option("--minrate", type=float, help="Hide lines whose sort counter is below this "
              "rate (per second; bytes for byte counters).")
@click.option("--fs", help="Only this filesystem.")
@click.option("--kind", type=click.Choice(["MDT", "OST"]), help="Only MDTs or OSTs.")
@click.option("-u", "--user", help="Only this user's jobs and load.")
@click.option("--at", help="Show the interval at or before this time (sacct-like time); "
              "refreshing replays forward from there.")
@click.option("--speed", type=float, default=1.0, show_default=True,
              help="Replay speed with --at: seconds of data per second of wall time.")
@click.option("-n", "--lines", type=int, help="Rows (default: 20, or the terminal's height).")
@click.option("-d", "--delay", type=float, help="Seconds between refreshes (default: the "
              "collector interval).")
@click.option("--json", "as_json", is_flag=True, help="With --once: JSON.")
@click.pass_obj
def top_cmd(cfg: Config, once: bool, sort: str, by: str, rates: bool, minrate: float | None,
            fs: str | None, kind: str | None, user: str | None, at: str | None,
            speed: float, lines: int | None, delay: float | None, as_json: bool) -> None:
    """The jobs (or users, accounts, hosts, filesystems) doing the most I/O now, like lltop.

    One collector interval. On a terminal the screen refreshes in place; keys: s sort,
    g group, t totals/rates, space pause, +/- replay speed, q quit. `--once` prints plain
    text; in a pipe the frames follow one another.
    """
    from slurm_io.report import load as load_mod
    from slurm_io.report import top as top_mod

    if sort not in top_mod.SORT_KEYS:
        raise click.BadParameter(f"{sort!r}: use write, read, meta, reqs or a counter "
                                 f"({', '.join(load_mod.COUNTERS)})", param_hint="--sort")
    if speed <= 0:
        raise click.BadParameter("must be above 0", param_hint="--speed")
    t_at = None if at is None else parse_time_arg(at, time.time(), "--at")
    options = {"fs": fs, "kind": kind, "user": user, "minrate": minrate}
    step = delay or cfg.interval
    with connect_read(cfg) as conn:
        # one view (--once, --json, a pipe) needs hosts only by host; the screen regroups
        per_host = by == "host" or not (once or as_json or not sys.stdout.isatty()
                                        or not sys.stdin.isatty())

        def fetch(moment: float | None) -> load_mod.Load:
            ld = load_mod.load(conn, at=moment, interval=cfg.interval, fs=fs, kind=kind,
                               per_host=per_host)
            conn.rollback()  # no transaction left open while waiting
            return ld

        if once or as_json:
            t = top_mod.view(fetch(t_at), sort=sort, by=by, rates=rates, limit=lines or 20,
                             **options)
            if as_json:
                click.echo(json.dumps(top_mod.as_json(t), indent=2, sort_keys=True))
            else:
                click.echo(top_mod.render(t))
            return
        if sys.stdout.isatty() and sys.stdin.isatty():
            from slurm_io.cli import top_tui

            top_tui.run(fetch, sort=sort, by=by, rates=rates, at=t_at, speed=speed,
                        delay=step, lines=lines, **options)
            return
        try:  # a pipe: one frame after the other
            while True:
                t = top_mod.view(fetch(t_at), sort=sort, by=by, rates=rates,
                                 limit=lines or 20, **options)
                click.echo(top_mod.render(t) + "\n")
                time.sleep(step)
                if t_at is not None:
                    t_at += speed * step
        except KeyboardInterrupt:
            pass


@main.group("lassi")
def lassi_group() -> None:
    """LASSi risk and ops metrics per job and filesystem per hour (docs/views.md)."""


def _days(date_: str | None, start: str | None, end: str | None) -> list[Any]:
    from slurm_io.lassi.days import day_list
    from slurm_io.timeparse import parse_day

    if date_ and (start or end):
        raise click.UsageError("give --date, or -S/-E")
    option = "-S" if start else "-E" if end else "--date"
    try:
        if start or end:
            first = parse_day(start or end)
            option = "-E"
            last = parse_day(end) if end else first
            if last < first:
                raise ValueError(f"the range ends ({last}) before it starts ({first})")
            return day_list(first, last)
        return [parse_day(date_)]
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from e


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
    from slurm_io.lassi.days import compute_day

    days = _days(date_, starttime, endtime)
    with connect_db(cfg) as conn, click.progressbar(days, label="computing LASSi metrics",
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
    from slurm_io.timeparse import parse_day

    try:
        day = parse_day(date_)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--date") from e
    # reads on the standby of `read_dsn` when set; LASSi hours it lacks stored on the primary
    with connect_db(cfg) as primary, (connect_read(cfg) if cfg.read_dsn
                                      else contextlib.nullcontext(primary)) as conn:
        rep = daily.build(conn, day, out, interval=cfg.interval, a=cfg.lassi_a,
                          baseline_days=cfg.lassi_baseline_days, top_n=top_n,
                          recompute=recompute, progress=True,
                          log=lambda m: click.echo(m, err=True), primary=primary)
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
    start, end = time_range(starttime, endtime, now, 30 * 86400)
    with connect_read(cfg) as conn:
        groups = slowdown.analyse(conn, user, start=start, end=end, name=name,
                                  by_submit_line=by_submit_line)
    if not name:
        groups = [g for g in groups if len(g.jobs) > 1] or groups
    if as_json:
        click.echo(json.dumps(slowdown.as_json(groups), indent=2, sort_keys=True))
    else:
        click.echo(slowdown.render(user, groups))
    if png is not None and groups:
        slowdown.plot(png, user, groups[0])
        click.echo(f"plot: {png}", err=True)
    if not groups:
        sys.exit(1)
