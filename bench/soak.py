"""A 30-day soak on a compressed clock: the daemons run against real PostgreSQL for a month of
simulated time, sampled all along; nothing may grow but what retention bounds, nothing lost,
every job mailed once.

    .venv/bin/python bench/soak.py [--dsn DSN] [--days 30] [--speed 1440] [--servers 3]
        [--entries 300] [--interval 600] [--mailed 6] [--alerts-every 14400]
        [--ask-every 3600] [--no-serve] [--sample 10] [--out bench/out/soak]

Runs, as new processes of the real `jobio` (the checkout's): `--servers` collectors
(`jobio collect`, each on its own state dir, reading bench/soak_lctl.py: one OST of
`--entries` job entries with jobs starting and ending all the time, generated at the clock's
time); `jobio exporter`, scraped every 5 s by a real Prometheus (Debian's, its own port and
data dir); the real job-end hook (epilog/jobio-epilog through the wrapper docs/hook.md
describes) run for every job of the first `--mailed` slots as it ends on the clock, with the
environment slurmctld gives an EpilogSlurmctld (bench/soak_jobs.py, which also stands in for
sacct: the jobs never ran on a Slurm); `jobio report-daemon` mailing them to the real SMTP
sink of the tests (tests/notify/smtp_sink.py, in this process); `jobio alerts` every
`--alerts-every` simulated seconds, `daily` then `db prune` once a simulated day (one job,
as the deploy guide's cron line)
(bench/soak_parts.Timer: never two runs at once, as a systemd timer); `jobio serve` as its
own account with its own munged, answering `jobio --server URL JOBID` run as carol every
`--ask-every` simulated seconds (bench/soak_serve.py). Samples every `--sample` wall
seconds: each daemon's RSS and open files (/proc), the database's size, each collector's
spool and kept dirs, the hook spool's files and the mail queue's depth (queued, sending),
rows stored (ingest_batch's n_rows per collector, which retention never drops) against rows
expected (every read a collector took: each of its entries moved, so one row each; the
first read of a collector only sets its baseline), rows in jobstats_delta, the sink's mails
per job id, errors (ERROR and Traceback lines of every log, a hook that did not exit 0
silently, a timer's or client's non-zero exit, Prometheus's failed scrapes). After the last
simulated second the daemons go on (`--drain`, wall seconds at most) until the hook spool
and the queue are empty. Writes OUT/soak.csv and OUT/soak.png (bench/soak_plot.py), prints
the bounds: RSS of each daemon against its first simulated day, the database's size once
retention applies, spools and queue empty, stored = expected, every hooked job mailed
exactly once and complete, errors 0.

The compressed clock (slurm_io/clock.py, SLURM_IO_CLOCK): every daemon started here, and
soak_lctl.py, see simulated time SPEED times faster than the wall clock, from the same
origin: a collector waits 600 simulated seconds (0.42 s of wall time at 1440) between
reads, stamps its rows, ages its kept batches and `db prune` drops days on that clock. What
it stands for: 30 days of cycles, rows, partitions created and dropped, kept batches
written and aged, collector state churned by 30 days of jobs, each daemon's memory over
~4,300 cycles, 720 jobs through the hook, the queue and SMTP. What it does not: wall-clock
effects (PostgreSQL's autovacuum, checkpoints and now(), TCP keep-alives, log rotation, the
kernel's page cache over a month), a site's read size (`--entries`: 300 entries, not 100k)
and job rate (24 mailed jobs a simulated day: the hook and the mail's plots cost real CPU
time per job). The reporter's patience (`--max-wait`) is on PostgreSQL's clock, the wall,
so it is set to a year here: a job is mailed when sacct's record is final and every
collector read past its end, never on a timeout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql

from bench import soak_jobs, soak_plot, soak_serve
from bench import soak_parts as parts
from slurm_io.notify import hookspool
from slurm_io.store import partitions

REPO = Path(__file__).resolve().parent.parent
SIM0 = 1_790_000_000.0 - 1_790_000_000.0 % 86400  # 2026-09-21 00:00 UTC
DAY = 86400.0


def server_dsn(args: argparse.Namespace) -> str:
    if args.dsn:
        return str(args.dsn)
    from slurm_io.store.embedded import EmbeddedPostgres

    state = Path("/var/tmp/slurm-io-soak")
    state.mkdir(parents=True, exist_ok=True)
    return EmbeddedPostgres(state).ensure()






def _expected(log: Path) -> int:
    """Rows the reads logged by soak_lctl.py should have stored: all but the first read's."""
    if not log.exists():
        return 0
    counts = [int(line.split()[1]) for line in log.read_text().splitlines() if line.strip()]
    return sum(counts[1:])


def _errors(logs: list[Path]) -> int:
    return sum(line.count(" ERROR ") + line.count("Traceback")
               for p in logs if p.exists() for line in p.read_text(errors="replace").splitlines())


def _settle_day(args: argparse.Namespace) -> float:
    """The simulated day from which both retentions apply: the nightly prune after a day
    `retention` old drops it, one more day for the partition boundary."""
    longest = max(partitions.parse_duration(args.retention),
                  partitions.parse_duration(args.retention_results))
    return longest / 86400 + 2


def run(args: argparse.Namespace) -> int:
    from tests.notify.smtp_sink import smtp_server

    with smtp_server() as (sink, smtp_port), contextlib.ExitStack() as stack:
        return _run(args, sink, smtp_port, stack)


def _config(args: argparse.Namespace, out: Path, dsn: str, ports: dict[str, int]) -> Path:
    """The site's config: retention, the exporter's port, the hook's spool, the SMTP sink,
    the sacct stand-in (bench/soak_jobs.py) and every job mailed (mail.policy = all)."""
    sacct = out / "sacct"
    sacct.write_text(f"#!/bin/sh\nexec {sys.executable} {REPO / 'bench' / 'soak_jobs.py'} "
                     f"sacct {args.entries} \"$@\"\n")
    sacct.chmod(0o755)
    config = out / "config.toml"
    config.write_text(
        f'dsn = "{dsn}"\n[retention]\nraw = "{args.retention}"\n'
        f'results = "{args.retention_results}"\n'
        f'[exporter]\nlisten = "127.0.0.1:{ports["exporter"]}"\n'
        f'[hook]\nspool_dir = "{out / "hookspool"}"\ndb_timeout = 60\n'
        f'[mail]\nhost = "127.0.0.1"\nport = {ports["smtp"]}\ndomain = "soak.example"\n'
        f'from = "jobio@soak.example"\npolicy = "all"\nslurm_lookup = false\ntimeout = 30\n'
        f'[slurm]\nsacct = "{sacct}"\nscontrol = "/bin/false"\n')
    return config


def _run(args: argparse.Namespace, sink: Any, smtp_port: int,
         stack: contextlib.ExitStack) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = server_dsn(args)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(args.db)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(args.db)))
    params = psycopg.conninfo.conninfo_to_dict(server)
    params["dbname"] = args.db
    dsn = psycopg.conninfo.make_conninfo(**params)
    ports = {"exporter": 19800 + os.getpid() % 100, "smtp": smtp_port,
             "prometheus": parts.free_port()}
    shutil.rmtree(out / "hookspool", ignore_errors=True)
    shutil.rmtree(out / "daily", ignore_errors=True)
    config = _config(args, out, dsn, ports)
    wrapper = parts.hook_wrapper(out / "jobio-epilog", config)
    env = {**os.environ, "SLURM_IO_CONFIG": str(config), "PYTHONPATH": str(REPO)}
    env.pop("SLURM_IO_MAIL_BUILDER", None)  # the real mail, plots and all
    env.pop("SLURM_IO_CLOCK", None)
    jobio = [sys.executable, "-m", "slurm_io.cli"]
    up = subprocess.run([*jobio, "db", "upgrade"], env=env, capture_output=True, text=True,
                        check=False)
    if up.returncode != 0:
        raise SystemExit(f"db upgrade failed: {up.stderr}")
    daemons: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}
    if args.serve:  # before the clock starts: munged and the service take seconds to start
        logs["serve"] = out / "serve.log"
        serve = stack.enter_context(soak_serve.serving(dsn, jobio, env, logs["serve"]))
        daemons["serve"] = serve.proc
    wall0 = time.time()
    env["SLURM_IO_CLOCK"] = f"{SIM0} {wall0} {args.speed}"
    names = [f"oss{i + 1:02d}" for i in range(args.servers)]

    def start(name: str, argv: list[str]) -> None:
        logs[name] = out / f"{name}.log"
        daemons[name] = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                         stderr=logs[name].open("w"))

    for name in names:
        lctl = f"{sys.executable} {REPO / 'bench' / 'soak_lctl.py'} {name} {args.entries} " \
               f"{out / (name + '.reads')}"
        (out / f"{name}.reads").unlink(missing_ok=True)
        start(name, [*jobio, "--state-dir", str(out / "state" / name), "collect", "--name",
                     name, "--command", lctl, "--interval", str(args.interval)])
    start("exporter", [*jobio, "exporter"])
    # max-wait: a year, since the reporter's patience is on PostgreSQL's clock (the wall),
    # which the compressed clock's jobs (ended weeks "ago") would always exceed
    start("reporter", [*jobio, "report-daemon", "--interval", "1", "--max-wait", "31536000",
                       "--sweep-every", str(args.sweep_every)])
    parts.wait_for(f"http://127.0.0.1:{ports['exporter']}/metrics")
    prometheus = parts.start_prometheus(out, f"127.0.0.1:{ports['exporter']}",
                                        ports["prometheus"])
    prom_wall0 = time.time()
    daemons["prometheus"] = prometheus
    state: dict[str, Any] = {"hooked": set(), "hook_errors": 0, "wall0": wall0}
    timers = _timers(args, out, jobio, env, logs)
    if args.serve:
        timers.append(_client(args, out, serve, state, logs))
    rows: list[dict[str, float]] = []
    end_wall = wall0 + args.days * DAY / args.speed
    hooked_until = SIM0
    next_sample = time.time() + args.sample
    try:
        while time.time() < end_wall:
            time.sleep(0.2)
            sim = SIM0 + (time.time() - wall0) * args.speed
            for job, _end in soak_jobs.ended(args.entries, args.mailed, hooked_until, sim):
                rc, said = parts.run_hook(wrapper, soak_jobs.hook_env(args.entries, job))
                state["hooked"].add(job)
                if rc != 0 or said:
                    state["hook_errors"] += 1
                    print(f"hook of job {job}: exit {rc}: {said}", flush=True)
            hooked_until = sim
            for t in timers:
                t.tick(sim)
            if time.time() >= next_sample:
                next_sample += args.sample
                rows.append(_sample(dsn, out, names, daemons, logs, sim, state, sink, timers))
                _print(rows[-1], daemons)
        _drain(dsn, out, args.drain)
        state["scrape_errors"] = _scrapes(out, ports["prometheus"], time.time() - prom_wall0)
    finally:
        for t in timers:
            t.finish()
        for p in daemons.values():
            p.send_signal(signal.SIGTERM)
        for p in daemons.values():
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
    sim = SIM0 + (time.time() - wall0) * args.speed
    rows.append(_sample(dsn, out, names, daemons, logs, sim, state, sink, timers))
    soak_plot.write(out, rows)
    return soak_plot.judge(rows, names, [n for n in daemons if n != "prometheus"],
                           _settle_day(args))


def _client(args: argparse.Namespace, out: Path, serve: soak_serve.Serve,
            state: dict[str, Any], logs: dict[str, Path]) -> parts.Timer:
    """`jobio --server URL JOBID` as carol every --ask-every simulated seconds, for the
    last job the hook saw (each non-zero exit an error)."""
    def ask(_sim: float) -> list[str] | None:
        return serve.ask(max(state["hooked"])) if state["hooked"] else None

    log = out / "client.log"
    log.unlink(missing_ok=True)
    logs["client"] = log
    timer = parts.Timer("client", args.ask_every, ask, serve.env, log, soak_serve.as_client())
    timer.next = SIM0 + args.ask_every
    return timer


def _timers(args: argparse.Namespace, out: Path, jobio: list[str], env: dict[str, str],
            logs: dict[str, Path]) -> list[parts.Timer]:
    """`daily` then `db prune` once a simulated day, `jobio alerts` every --alerts-every."""
    def day_of(sim: float) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(sim - DAY))

    def daily(sim: float) -> list[str]:
        return [*jobio, "daily", "--date", day_of(sim), "--out", str(out / "daily" / day_of(sim))]

    def alerts(sim: float) -> list[str]:
        return [*jobio, "alerts", "--at", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(sim))]

    def nightly(sim: float) -> list[str]:
        # one job, `daily` then `db prune`, as docs/deploy.md's cron line: two timers that
        # start together make prune wait on daily's scan and give up (the first 30-day run)
        return ["sh", "-c", f"{shlex.join(daily(sim))}; rc=$?; "
                f"{shlex.join([*jobio, 'db', 'prune'])} || exit 1; exit $rc", "nightly"]

    timers = [parts.Timer("nightly", DAY, nightly, env, out / "nightly.log"),
              parts.Timer("alerts", args.alerts_every, alerts, env, out / "alerts.log")]
    for t in timers:
        t.log.unlink(missing_ok=True)
        logs[t.name] = t.log
        t.next = SIM0 + t.period  # from the clock's start: daemons start as it runs
    return timers


def _drain(dsn: str, out: Path, timeout: float) -> None:
    """After the last job end, as a site's quiet night: the daemons go on until the hook
    spool and the mail queue are empty (the last jobs wait for a collector's read past their
    end), at most `timeout` wall seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not hookspool.pending(str(out / "hookspool")) and _queue_depth(dsn) == 0:
            return
        time.sleep(0.5)


def _queue_depth(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return int(conn.execute("SELECT count(*) FROM report_queue WHERE state IN "
                                "('queued', 'sending')").fetchone()[0])  # type: ignore[index]


def _scrapes(out: Path, port: int, seconds: float) -> int:
    """Prometheus's failed scrapes of the exporter over the run (scrapes - successful ones),
    written to OUT/prometheus.txt; -1 when Prometheus kept nothing."""
    window = f"[{int(seconds) + 30}s]"
    total = parts.prom_query(port, f'count_over_time(up{{job="jobio"}}{window})')
    good = parts.prom_query(port, f'sum_over_time(up{{job="jobio"}}{window})')
    (out / "prometheus.txt").write_text(f"scrapes {total}, successful {good}\n")
    return -1 if not total or good is None else int(total - good)






def _print(r: dict[str, float], daemons: dict[str, subprocess.Popen]) -> None:
    print(f"day {r['sim_day']:5.1f}: db {r['db_bytes'] / 1e6:7.1f} MB, rows stored "
          f"{int(r['rows_stored']):,} / expected {int(r['rows_expected']):,}, jobs "
          f"{int(r['jobs_hooked'])} mailed {int(r['mails'])} queue {int(r['mail_queue'])} "
          f"spool {int(r['hook_spool'])}, "
          + ", ".join(f"{n} {r[n + '_rss'] / 1e6:.0f} MB" for n in daemons), flush=True)


def _sample(dsn: str, out: Path, names: list[str], daemons: dict[str, subprocess.Popen],
            logs: dict[str, Path], sim: float, state: dict[str, Any], sink: Any,
            timers: list[parts.Timer]) -> dict[str, float]:
    row: dict[str, float] = {"wall_s": time.time() - state["wall0"],
                             "sim_day": (sim - SIM0) / DAY}
    for name, p in daemons.items():
        row[name + "_rss"], row[name + "_fds"] = parts.proc_usage(p.pid)
    with psycopg.connect(dsn) as conn:
        row["db_bytes"] = conn.execute("SELECT pg_database_size(current_database())"
                                       ).fetchone()[0]  # type: ignore[index]
        stored = dict(conn.execute("SELECT collector, sum(n_rows) FROM ingest_batch "
                                   "GROUP BY collector").fetchall())
        row["rows_in_table"] = conn.execute("SELECT count(*) FROM jobstats_delta"
                                            ).fetchone()[0]  # type: ignore[index]
        row["partitions"] = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'jobstats_delta'::regclass"
        ).fetchone()[0]  # type: ignore[index]
        queue = dict(conn.execute("SELECT state, count(*) FROM report_queue GROUP BY state"
                                  ).fetchall())
    row["rows_stored"] = sum(int(stored.get(n, 0)) for n in names)
    row["rows_expected"] = sum(_expected(out / f"{n}.reads") for n in names)
    row["spool_bytes"] = sum(parts.file_size(f) for n in names
                             for f in (out / "state" / n / "spool").glob("*.batch"))
    row["kept_bytes"] = sum(parts.dir_bytes(out / "state" / n / "spool" / "kept") for n in names)
    row["hook_spool"] = len(hookspool.pending(str(out / "hookspool")))
    row["mail_queue"] = queue.get("queued", 0) + queue.get("sending", 0)
    for st in ("sent", "skipped", "failed"):
        row["queue_" + st] = queue.get(st, 0)
    reports = [r for r in list(sink.received) if "X-Jobio-Alert" not in r.message]
    per_job: dict[int, int] = {}
    for r in reports:
        per_job[r.job] = per_job.get(r.job, 0) + 1
    row["jobs_hooked"] = len(state["hooked"])
    row["mails"] = len(reports)
    row["jobs_mailed_once"] = sum(1 for j in state["hooked"] if per_job.get(j) == 1)
    row["jobs_mailed_twice"] = sum(1 for n in per_job.values() if n > 1)
    row["mails_not_hooked"] = sum(1 for j in per_job if j not in state["hooked"])
    row["mails_incomplete"] = sum(1 for r in reports
                                  if r.message["X-Jobio-Data-Complete"] == "no")
    row["alert_mails"] = len(sink.received) - len(reports)
    row["timer_runs"] = sum(t.runs for t in timers)
    row["client_asks"] = sum(t.runs for t in timers if t.name == "client")
    row["errors"] = (_errors(list(logs.values())) + state.get("scrape_errors", 0)
                     + state["hook_errors"] + sum(t.failures for t in timers))
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", help="a PostgreSQL server (default: an embedded one)")
    ap.add_argument("--db", default="soak")
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--speed", type=float, default=1440.0,
                    help="simulated seconds per wall second")
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--entries", type=int, default=300)
    ap.add_argument("--interval", type=float, default=600.0, help="simulated s between reads")
    ap.add_argument("--mailed", type=int, default=6,
                    help="slots whose jobs get the hook and a mail (4 jobs a day each)")
    ap.add_argument("--alerts-every", type=float, default=14400.0,
                    help="simulated s between `jobio alerts` runs")
    ap.add_argument("--sweep-every", type=float, default=900.0,
                    help="the report daemon's --sweep-every (wall s)")
    ap.add_argument("--drain", type=float, default=120.0,
                    help="wall s at most for the queue to empty after the last job end")
    ap.add_argument("--serve", action=argparse.BooleanOptionalAction, default=True,
                    help="`jobio serve` and its client loop (root: munged, OS accounts)")
    ap.add_argument("--ask-every", type=float, default=3600.0,
                    help="simulated s between the client's questions to `jobio serve`")
    ap.add_argument("--retention", default="7d", help="retention.raw (days of raw deltas)")
    ap.add_argument("--retention-results", default="1825d",
                    help="retention.results (job_io, LASSi hours; a site keeps 5 years): "
                    "shorter than the run, the database's size is judged flat once both apply")
    ap.add_argument("--sample", type=float, default=10.0, help="wall s between samples")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "soak"))
    ap.add_argument("--replot", action="store_true",
                    help="only draw OUT/soak.png again from OUT/soak.csv and print the bounds")
    args = ap.parse_args()
    if args.replot:
        rows = soak_plot.read(Path(args.out))
        soak_plot.plot(Path(args.out), rows)
        sys.exit(soak_plot.judge(rows, [k[:-4] for k in rows[0] if k.startswith("oss")
                               and k.endswith("_rss")],
                        [k[:-4] for k in rows[0] if k.endswith("_rss")
                         and not k.startswith("prometheus")], _settle_day(args)))
    # stopped by TERM (or INT, which a background job ignores): the daemons stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak.py: stopped by SIGTERM"))
    sys.exit(run(args))


if __name__ == "__main__":
    main()
