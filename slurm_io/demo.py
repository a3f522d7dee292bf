"""`jobio demo`: the README's main command, end to end on real parts.

Simulates a cluster (MDS + OSSs, mixed Lustre releases, broken ids, an outage), replays its
captured reads through the real collector path into PostgreSQL, and prints what was stored.

With no DSN configured it uses the database every other `jobio` command uses by default (the
embedded PostgreSQL's `slurmio` in the default state directory), so that `jobio JOBID`
works right after it with no flags. That database is recreated on every run, so that the
output is reproducible, but only when it is empty or a previous demo's (marked by a comment
on the database): one that holds other data is refused (NotADemoDatabase), never wiped.
With a DSN it uses that database as given.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path

from slurm_io.attribute.batch import attribute_jobs
from slurm_io.attribute.stored import pending_jobs
from slurm_io.collect import daemon
from slurm_io.config import Config
from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.store import job_by_key, upsert_jobs
from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
from slurm_io.report import unattributed
from slurm_io.report.counters import human_bytes
from slurm_io.report.figures import figures
from slurm_io.report.show import render as render_job
from slurm_io.report.usage import render_table, usage
from slurm_io.simulate import simulate
from slurm_io.store import demo_db, migrate
from slurm_io.store.db import connect
from slurm_io.store.embedded import EmbeddedPostgres
from slurm_io.store.spool import Spool

DEMO_START = 1_795_000_000.0  # 2026-11-18T07:46:40Z: fixed, so every run prints the same
DEMO_MARK = "slurm-io demo: recreated by every `jobio demo`"


class NotADemoDatabase(Exception):
    """The default database holds data that no demo wrote: the demo will not wipe it."""


def _demo_dsn(cfg: Config) -> str:
    """The database to fill: the configured one as given, else the embedded default,
    recreated when it is empty or a previous demo's."""
    if cfg.dsn:
        return cfg.dsn
    dsn = EmbeddedPostgres(cfg.state_dir).ensure()
    name = demo_db.database_name(dsn)
    with connect(dsn, autocommit=True) as conn:
        if demo_db.comment(conn) != DEMO_MARK and demo_db.holds_data(conn):
            raise NotADemoDatabase(
                f"the default database {name!r} in {cfg.state_dir} holds data that is not "
                "a demo's; the demo recreates its database, so give it another: "
                "`jobio --state-dir DIR demo` or `jobio --dsn ... demo`")
    demo_db.recreate(dsn, DEMO_MARK)
    return dsn


def run(cfg: Config, out: Path, *, seed: int = 1, echo: Callable[[str], None] = print) -> None:
    t_all = time.time()
    dsn = _demo_dsn(cfg)
    with connect(dsn) as conn:
        migrate.upgrade(conn)
    echo(f"database: {dsn}")

    sim = out / "cluster"
    state = out / "state"
    for d in (sim, state):
        if d.exists():
            shutil.rmtree(d)
    t = time.time()
    summary = simulate(sim, seed=seed, start=DEMO_START)
    echo(f"simulated cluster in {sim} ({time.time() - t:.1f} s): "
         + ", ".join(f"{k}={v}" for k, v in summary.items() if isinstance(v, int | float)))

    # one log line per cycle is right for a daemon, not for a demo of 840 reads
    logging.getLogger("slurm_io.collect").setLevel(logging.WARNING)
    grammar = JobIdGrammar.from_config(cfg.jobid_formats, cfg.system_uid_max, cfg.system_uids)
    link = daemon.DatabaseLink(lambda: connect(dsn))
    t = time.time()
    totals = daemon.replay(sim, state_dir=state, spool=Spool(state / "spool"), link=link,
                           classify=ClassifyCache(grammar), period=cfg.interval)
    link.reset()
    echo(f"collected with --from in {time.time() - t:.1f} s: "
         + ", ".join(f"{k}={v}" for k, v in totals.items()))

    with connect(dsn) as conn:
        u = usage(conn, DEMO_START - 3600, DEMO_START + 7 * 86400)
        echo("")
        echo(render_table(u))
        echo("")
        echo("top jobs by bytes (entries whose id names the job):")
        echo(f"  {'job':>10} {'read':>12} {'written':>12} {'nodes':>6} {'meta ops':>10}")
        for job, r, w, nodes, meta in demo_db.top_jobs_by_bytes(conn, 10):
            echo(f"  {job:>10} {human_bytes(r):>12} {human_bytes(w):>12} {nodes:>6} {meta:>10}")
    # job records from the simulated cluster's sacct text, then attribution
    records, problems = parse_sacct((sim / "sacct.txt").read_text(), tz=UTC)
    with connect(dsn) as conn:
        upsert_jobs(conn, records)
        conn.commit()
        n, complete = attribute_jobs(conn, pending_jobs(conn, 0), now=DEMO_START + 30 * 86400)
        echo("")
        echo(f"imported {len(records)} jobs from {sim / 'sacct.txt'} ({len(problems)} problems);"
             f" attributed {n} ({complete} complete)")
        echo("")
        echo(unattributed.render(unattributed.split(conn, DEMO_START - 3600,
                                                    DEMO_START + 7 * 86400,
                                                    now=DEMO_START + 30 * 86400)))
        rec = demo_db.most_recovered_job(conn)
        amb = demo_db.first_ambiguous_job(conn)
        for title, key in (("a job with I/O recovered from `:uid:host` entries", rec),
                           ("a job sharing a node with another job of its user", amb)):
            if key is None:
                continue
            info = job_by_key(conn, key)
            assert info is not None
            echo("")
            echo(f"jobio {info.jobid}   # {title}")
            echo(render_job(figures(conn, info, now=DEMO_START + 30 * 86400), targets=True))
    _write_mails(cfg, dsn, out / "mails", echo)
    _write_daily(cfg, dsn, out / "daily", echo)
    echo("")
    flags = f"--dsn '{dsn}' " if cfg.dsn else ""
    echo(f"demo finished in {time.time() - t_all:.1f} s; try: jobio {flags}usage "
         "-S 2026-11-18 -E 2026-11-19 --attribution"
         + ("" if cfg.dsn else "; `jobio db stop` stops its PostgreSQL"))


def _write_mails(cfg: Config, dsn: str, out: Path, echo: Callable[[str], None],
                 limit: int = 20) -> None:
    """The per-job I/O mails the default policy would send, as files (docs/mail.md)."""
    from slurm_io.mail.builder import MailBuilder
    from slurm_io.mail.outbox import write_mails

    # simulated jobs are unknown to Slurm: no scontrol/sacct look-up of --mail-user
    builder = MailBuilder(cfg, lookup=lambda job: None, clock=lambda: DEMO_START + 30 * 86400)
    t = time.time()
    with connect(dsn) as conn:
        jobs = demo_db.attributed_jobs(conn)
        box = write_mails(conn, builder, jobs, out, limit=limit)
    s = builder.settings
    rule = f"policy {s.policy}" + (f", at least {human_bytes(s.min_bytes)} read+written"
                                   if s.policy == "above_size" else "")
    echo("")
    echo(f"mails: {box.due} of {len(jobs)} attributed jobs get one ({rule}); wrote "
         + (f"the first {len(box.written)}" if box.due > len(box.written) else "them")
         + f" to {out}/ as .eml (mail clients) and .html (browsers) in "
         f"{time.time() - t:.1f} s, e.g. {box.written[0] if box.written else '-'}")


def _write_daily(cfg: Config, dsn: str, out: Path, echo: Callable[[str], None]) -> None:
    """The simulated day's LASSi metrics and daily report (docs/views.md)."""
    from datetime import UTC, datetime

    from slurm_io.report import daily

    day = datetime.fromtimestamp(DEMO_START, UTC).date()
    t = time.time()
    with connect(dsn) as conn:
        rep = daily.build(conn, day, out, interval=cfg.interval, a=cfg.lassi_a,
                          baseline_days=cfg.lassi_baseline_days, recompute=True,
                          now=DEMO_START + 30 * 86400)
    echo("")
    echo(f"daily report of the simulated day ({day}, LASSi risk, plots, top jobs) in "
         f"{time.time() - t:.1f} s: {rep.index} ({len(rep.pngs)} plots, {len(rep.job_pages)} "
         "job pages); open it in a browser")
