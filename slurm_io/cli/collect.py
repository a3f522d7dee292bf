"""`jobio collect`, `jobio simulate` and `jobio demo`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from slurm_io.cli.app import JobioError, main, parse_time_arg
from slurm_io.config import Config


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
    from slurm_io.store.partitions import parse_duration
    from slurm_io.store.spool import Spool

    cfg = cfg.with_overrides(command=command, interval=interval, collector_name=collector_name,
                             spool_dir=spool_dir, command_timeout=command_timeout,
                             jobid_formats=jobid_formats or None, system_uid_max=system_uid_max,
                             system_uids=system_uids or None)
    grammar = JobIdGrammar.from_config(cfg.jobid_formats, cfg.system_uid_max, cfg.system_uids)
    try:
        window = parse_duration(cfg.replay_window)
    except ValueError as e:
        raise JobioError(f"[collect] replay_window: {e}") from None
    spool = Spool(cfg.spool, replay_window=window)
    link = daemon.DatabaseLink(db.upgrading_factory(cfg.dsn, state_dir=cfg.state_dir))
    stop = daemon.StopFlag()
    stop.install()
    if from_dir is not None:
        totals = daemon.replay(from_dir, state_dir=cfg.state_dir, spool=spool, link=link,
                               classify=ClassifyCache(grammar), period=cfg.interval, stop=stop)
        click.echo(" ".join(f"{k}={v}" for k, v in totals.items()))
        if totals.get("stopped"):
            click.echo("jobio collect: no space left for the spool or the state under "
                       f"{cfg.state_dir}: replay stopped; run it again when there is space",
                       err=True)
            sys.exit(4)
        sys.exit(0 if totals["spool_depth"] == 0 else 3)
    rc = daemon.live(name=cfg.collector_name, command=cfg.command,
                     command_timeout=cfg.command_timeout, interval=cfg.interval,
                     state_dir=cfg.state_dir, spool=spool, link=link,
                     classify=ClassifyCache(grammar), once=once, stop=stop)
    sys.exit(rc)


# -- views ----------------------------------------------------------------------------------

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

    t0 = parse_time_arg(start, 1_795_000_000.0)
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

    try:
        demo_mod.run(cfg, out, seed=seed, echo=click.echo)
    except demo_mod.NotADemoDatabase as e:
        raise JobioError(str(e)) from e


# -- jobs -----------------------------------------------------------------------------------
