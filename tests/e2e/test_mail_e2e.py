"""End to end with a real Slurm: slurmctld runs epilog/jobio-epilog as its EpilogSlurmctld
(as user `slurm`, no PATH), jobs of alice and bob run, job_stats reads are generated for
them and collected, `jobio report-daemon --once` runs until done and a real SMTP server
(aiosmtpd, in this process) receives exactly one mail per job, to the job's user. Then the
database is stopped, a job runs, the hook still exits 0 (its spool keeps the job), and the
job is mailed once the database is back.

Once per Slurm release (tests/slurm_fixtures.py). In the 24.11 / 26.05 chroots the hook runs
inside the chroot, with the chroot's Python and Debian's python3-psycopg/python3-hostlist
(installed by setup-slurm-chroot.sh) and a copy of the hook and slurm_io; the test's directory
(database socket, hook spool, config, stopwatch log) is bind-mounted at the same path inside
the chroot, so the hook reaches the host's test PostgreSQL by its unix socket. The host side
(report daemon, sacct/scontrol lookups) uses the chroot's commands through `[slurm]` paths.

The testbed is one per machine: while this test runs, every job's EpilogSlurmctld is this
hook; the fixture puts the testbed's own hook back at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import make_conninfo

from slurm_io.cli import main
from slurm_io.jobs.uids import fill_uids
from slurm_io.notify import hookspool
from slurm_io.notify.reporter import SacctJobsSource
from slurm_io.report.counters import human_bytes
from slurm_io.simulate.for_jobs import reads_for_jobs
from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from tests import needs
from tests.notify.smtp_sink import Sink, smtp_server
from tests.slurm_fixtures import SlurmCluster, ensure_cluster, sacct_time

pytestmark = [
    pytest.mark.pg,
    pytest.mark.slow,
    needs.root("real Slurm testbed: root"),
]

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "epilog" / "jobio-epilog"
DOMAIN = "lab.example"


def _as_slurm(argv: list[str], env: dict[str, str] | None = None) -> bool:
    cmd = ["runuser", "-u", "slurm", "--", "/usr/bin/env", "-i",
           *(f"{k}={v}" for k, v in (env or {}).items()), *argv]
    return subprocess.run(cmd, capture_output=True, check=False, timeout=60).returncode == 0


def hook_install(stage: Path) -> tuple[str, str | None, Path]:
    """A Python that SlurmUser can run with slurm-io importable, the PYTHONPATH it needs and
    the hook to run.

    This checkout and its venv, when slurm may read them; else the system Python of the same
    release with this checkout and this venv's site-packages; else (a checkout under /root,
    as on CI and developer machines, is out of slurm's reach) a copy of the hook, slurm_io
    and the hook's dependencies in `stage`, which slurm can read.
    """
    # what the hook and its background child import (the child ingests the job: hostlist)
    probe = PROBE
    if _as_slurm([sys.executable, *probe]) and _as_slurm(["/bin/test", "-r", str(HOOK)]):
        return sys.executable, None, HOOK
    candidates = [c for c in ("/usr/bin/python3", f"/usr/bin/python{sys.version_info[0]}."
                                                  f"{sys.version_info[1]}")
                  if os.access(c, os.X_OK)]
    path = f"{REPO}:{sysconfig.get_paths()['purelib']}"
    for candidate in candidates:
        if _as_slurm([candidate, *probe], {"PYTHONPATH": path}) and _as_slurm(
                ["/bin/test", "-r", str(HOOK)]):
            return candidate, path, HOOK
    site = _stage(stage)
    for candidate in candidates:
        if _as_slurm([candidate, *probe], {"PYTHONPATH": f"{stage}:{site}"}):
            return candidate, str(site), stage / "epilog" / "jobio-epilog"
    raise AssertionError(f"no Python that user slurm can run with slurm-io importable "
                         f"(tried {candidates} with this checkout and a copy in {stage})")


PROBE = ["-P", "-c", "import psycopg, hostlist, slurm_io.notify.hook, slurm_io.notify.hookspool"]


def chroot_hook_install(c: SlurmCluster, stage: Path) -> tuple[str, str | None, Path]:
    """The hook inside the cluster's chroot: the chroot's python3 with Debian's psycopg and
    hostlist, and a copy of the hook and slurm_io in `stage` (a path that is the same inside
    the chroot: the test's directory is bind-mounted there)."""
    _stage(stage, site_packages=False)
    python = "/usr/bin/python3"
    proc = c.run(["runuser", "-u", "slurm", "--", "/usr/bin/env", "-i", f"PYTHONPATH={stage}",
                  python, *PROBE], check=False)
    assert proc.returncode == 0, f"the chroot's Python cannot run the hook: {proc.stderr}"
    return python, str(stage), stage / "epilog" / "jobio-epilog"


def _stage(stage: Path, *, site_packages: bool = True) -> Path:
    """Copy the hook, slurm_io and the hook's dependencies (psycopg with typing_extensions,
    python-hostlist) where slurm can read them."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "epilog", stage / "epilog", ignore=ignore)
    shutil.copytree(REPO / "slurm_io", stage / "slurm_io", ignore=ignore)
    if not site_packages:
        _readable(stage)
        return stage
    purelib = Path(sysconfig.get_paths()["purelib"])
    site = stage / "site"
    site.mkdir()
    for item in purelib.iterdir():
        if item.name.startswith(("psycopg", "typing_extensions", "hostlist", "python_hostlist")):
            if item.is_dir():
                shutil.copytree(item, site / item.name, ignore=ignore)
            else:
                shutil.copy2(item, site / item.name)
    _readable(stage)
    return site


def _readable(top: Path) -> None:
    for d in [top, *top.rglob("*")]:  # readable (and directories searchable) by all
        os.chmod(d, d.stat().st_mode | 0o444 | (0o111 if d.is_dir() else 0))


class MailLab:
    """The hook's installation for the testbed, its database and the SMTP server."""

    def __init__(self, root: Path, sink: Sink, port: int, cluster: SlurmCluster) -> None:
        self.root = root
        self.cluster = cluster
        self.sink = sink
        self.port = port
        self.server = EmbeddedPostgres(root / "db")
        self.dsn = self.server.ensure()
        with psycopg.connect(self.dsn) as conn:
            migrate.upgrade(conn)
            # the hook's role: slurm logs in by peer authentication, writes as a collector
            conn.execute("CREATE ROLE slurm LOGIN IN ROLE jobio_collector")
        self.spool = root / "spool"
        self.spool.mkdir(mode=0o770)
        slurm = cluster.uid("slurm")  # the hook's user: the cluster's SlurmUser
        os.chown(self.spool, slurm, slurm)
        etc = root / "hook"
        etc.mkdir(mode=0o755)
        self.times = etc / "times.log"
        self.times.touch(mode=0o666)
        os.chmod(self.times, 0o666)
        self.config = etc / "config.toml"
        self.config.write_text(
            f"dsn = {make_conninfo(self.dsn, user='slurm')!r}\n"
            f"[hook]\nspool_dir = {str(self.spool)!r}\ndb_timeout = 10\n"
            f"[mail]\nhost = '127.0.0.1'\nport = {port}\ndomain = {DOMAIN!r}\n"
            f"from = 'jobio@{DOMAIN}'\npolicy = 'all'\n")
        os.chmod(self.config, 0o644)
        # the host side (report daemon, lookups) talks to the cluster through these commands;
        # the hook (inside a chroot) reads the config above, whose defaults are the chroot's
        self.host_config = etc / "host-config.toml"
        self.host_config.write_text(
            self.config.read_text() + f"[slurm]\nsacct = {cluster.command('sacct')!r}\n"
            f"scontrol = {cluster.command('scontrol')!r}\n")
        if cluster.chroot is None:
            python, pythonpath, hook = hook_install(etc / "install")
        else:
            python, pythonpath, hook = chroot_hook_install(cluster, etc / "install")
        self.wrapper = etc / "jobio-epilog-timed"
        lines = ["#!/bin/sh", "# generated by tests/e2e/test_mail_e2e.py: the site wrapper "
                 "of docs/hook.md, plus a stopwatch",
                 f"JOBIO_PYTHON={python}", f"SLURM_IO_CONFIG={self.config}",
                 "export JOBIO_PYTHON SLURM_IO_CONFIG"]
        if pythonpath:
            lines += [f"PYTHONPATH={pythonpath}", "export PYTHONPATH"]
        lines += ["t0=$(/bin/date +%s%N)", str(hook), "rc=$?", "t1=$(/bin/date +%s%N)",
                  f'echo "${{SLURM_JOB_ID:-?}} $rc $(( (t1 - t0) / 1000 ))" >> {self.times}',
                  "exit $rc"]
        self.wrapper.write_text("\n".join(lines) + "\n")
        os.chmod(self.wrapper, 0o755)
        self.state = root / "collector-state"

    def hook_runs(self) -> dict[int, tuple[int, float]]:
        """job -> (exit status, wall ms) of every hook run recorded so far."""
        out = {}
        for line in self.times.read_text().splitlines():
            job, rc, us = line.split()
            if job.isdigit():
                out[int(job)] = (int(rc), int(us) / 1000)
        return out

    def hook_runs_of(self, jobs: list[int]) -> dict[int, tuple[int, float]] | None:
        """hook_runs() once every job in `jobs` has one, else None."""
        runs = self.hook_runs()
        return runs if set(jobs) <= set(runs) else None

    def queue(self) -> dict[int, tuple[str, str, str | None]]:
        with psycopg.connect(self.dsn) as conn:
            return {j: (s, src, note) for j, s, src, note in conn.execute(
                "SELECT coalesce(j.job_raw, q.job), q.state, q.source, q.note "
                "FROM report_queue q LEFT JOIN job j USING (job)")}


@contextlib.contextmanager
def visible_in(cluster: SlurmCluster, path: Path) -> Iterator[None]:
    """`path` at the same path inside the cluster's chroot (a bind mount), if it has one."""
    if cluster.chroot is None:
        yield
        return
    target = cluster.host_path(path)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(path), str(target)], check=True)
    try:
        yield
    finally:
        if subprocess.run(["umount", str(target)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.fixture
def mail_lab(pg_tmp_path: Path, slurm_release: str) -> Iterator[tuple[MailLab, SlurmCluster]]:
    cluster = ensure_cluster(slurm_release)
    with smtp_server() as (sink, port), visible_in(cluster, pg_tmp_path):
        lab = MailLab(pg_tmp_path, sink, port, cluster)
        try:
            cluster = ensure_cluster(slurm_release, HOOK_EPILOG_SLURMCTLD=str(lab.wrapper))
            yield lab, cluster
        finally:
            try:
                ensure_cluster(slurm_release)  # the testbed's own EpilogSlurmctld again
            finally:
                lab.server.stop()


def jobio(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)
    return value


def raw_ids(lines: list[dict[str, str]]) -> dict[int, str]:
    """sacct lines -> {JobIDRaw: JobID}."""
    return {int(ln["JobIDRaw"]): ln["JobID"] for ln in lines}


def collect_for(lab: MailLab, jobs: list[int], reads: Path) -> dict:
    sacct = lab.cluster.command("sacct")
    records = fill_uids(SacctJobsSource(jobs, sacct).jobs(None, None))
    expected = reads_for_jobs([r for r in records if r.job in set(jobs)], reads)
    code, out = jobio("--dsn", lab.dsn, "--state-dir", str(lab.state), "collect",
                      "--from", str(reads))
    assert code == 0, out
    return expected


def report_until(lab: MailLab, done, timeout: float = 120) -> None:
    """`jobio report-daemon --once` (with a sweep) until `done()`."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not reported in time: {lab.queue()}"
        code, out = jobio("--dsn", lab.dsn, "report-daemon", "--once", "--interval", "1",
                          "--sweep-every", "1", "--sweep-hours", "1")
        assert code in (0, 1), out
        time.sleep(1)


def test_every_job_is_mailed_once_to_its_user_also_across_a_database_outage(
        mail_lab, tmp_path, monkeypatch, capsys):
    lab, c = mail_lab
    monkeypatch.setenv("SLURM_CONF", c.env["SLURM_CONF"])
    monkeypatch.setenv("SLURM_IO_CONFIG", str(lab.host_config))
    # the product's own mail (slurm_io.mail.builder), every job mailed (policy all)
    monkeypatch.delenv("SLURM_IO_MAIL_BUILDER", raising=False)

    # -- the database up ---------------------------------------------------------------------
    submitted = {
        "single": c.submit("alice", ["-J", "mail-single", "-N1", "--wrap", "sleep 4"]),
        "multi": c.submit("bob", ["-J", "mail-multi", "-N2", "--wrap", "sleep 4"]),
        "array": c.submit("alice", ["-J", "mail-array", "--array=1-2", "--wrap", "sleep 4"]),
        # two components, each its own job end: own raw id, own hook run, own mail
        "het": c.submit("alice", ["-J", "mail-het", "-N1", ":", "-N1", "--wrap", "sleep 4"]),
    }
    c.wait_running(submitted["single"])
    c.wait_running(submitted["multi"])
    # Needs every node to itself while the jobs above hold three of them: it pends, and is
    # cancelled while pending -- no epilog runs for it, and it must get no mail. (Not
    # `--hold`: a job never eligible does not appear in sacct's time-window listing at all.)
    submitted["held"] = c.submit("bob", ["-J", "mail-pending", "-N4", "--exclusive",
                                         "--wrap", "true"])
    assert c.squeue_state(submitted["held"]) == "PENDING"
    c.cancel("bob", submitted["held"])
    lines = c.wait_finished(submitted.values(), tasks={submitted["array"]: 2})
    ids = raw_ids(lines)
    held = submitted["held"]
    ran = sorted(j for j in ids if j != held)
    assert len(ran) == 6  # single, multi, two array tasks, two het components (each its own
    # raw id and hook run)
    user = {int(ln["JobIDRaw"]): ("bob" if ln["JobID"] in (str(submitted["multi"]),
                                                           str(held)) else "alice")
            for ln in lines}

    runs = wait_for(lambda: lab.hook_runs_of(ran), 120, "EpilogSlurmctld runs of every job")
    assert held not in runs
    assert {runs[j][0] for j in ran} == {0}
    # the hook's own background child (as slurm, no PATH) recorded every job
    wait_for(lambda: all(lab.queue().get(j, ("",))[0] == "queued" for j in ran), 30,
             "the hook's queue rows")
    assert {lab.queue()[j][1] for j in ran} == {"hook"}
    wait_for(lambda: not hookspool.pending(str(lab.spool)), 30, "the hook's spool to drain")
    # what the hook alone stored (no sacct sync yet): start and end from the environment
    # (23.02+) or from scontrol (22.05: the hook's child asks it after the spool is done),
    # the SLUID from the environment (25.11+)
    def hook_rows() -> dict | None:
        with psycopg.connect(lab.dsn) as conn:
            rows = {j: (s, e, sluid) for j, s, e, sluid in conn.execute(
                "SELECT job_raw, extract(epoch FROM start_time)::float8, "
                "extract(epoch FROM end_time)::float8, sluid FROM job WHERE job_raw = ANY(%s)",
                (ran,))}
        return rows if all(None not in rows[j][:2] for j in ran) else None

    stored_times = wait_for(hook_rows, 30, "start and end in the hook's records")
    sacct_end = {int(ln["JobIDRaw"]): ln["End"] for ln in lines}
    for j in ran:
        start, end, sluid = stored_times[j]
        assert start is not None and end is not None and start <= end, (j, stored_times[j])
        assert sacct_time(end) == sacct_end[j], j
        assert (sluid is not None) == (c.version >= (25, 11)), (j, sluid)

    expected = collect_for(lab, ran, tmp_path / "reads1")
    report_until(lab, lambda: all(lab.queue().get(j, ("",))[0] == "sent" for j in ran)
                 and lab.queue().get(held, ("",))[0] == "skipped")
    by_job = lab.sink.by_job()
    for j in ran:
        assert len(by_job[j]) == 1, j
        assert by_job[j][0].rcpt_tos == [f"{user[j]}@{DOMAIN}"], j
        assert by_job[j][0].message["X-Jobio-Data-Complete"] is None
    assert held not in by_job and "never ran" in lab.queue()[held][2]
    with psycopg.connect(lab.dsn) as conn:
        stored = dict(conn.execute("SELECT j.job_raw, (totals->>'write_bytes')::bigint "
                                   "FROM job_io JOIN job j USING (job) "
                                   "WHERE j.job_raw = ANY(%s)", (ran,)).fetchall())
    assert stored == {j: expected[j].write_bytes for j in ran}
    for j in ran:  # the mails' figures: both parts show what was generated for the job
        msg = by_job[j][0].message
        text = msg.get_body(("plain",)).get_content()
        html = msg.get_body(("html",)).get_content()
        written = human_bytes(expected[j].write_bytes)
        assert written in text and written in html, (j, written)
        assert msg.get_content_type() == "multipart/alternative"
    up = [runs[j][1] for j in ran]

    # -- the database down ---------------------------------------------------------------------
    lab.server.stop()
    down = c.submit("bob", ["-J", "mail-down", "--wrap", "sleep 3"])
    c.wait_finished([down])
    runs = wait_for(lambda: lab.hook_runs_of([down]), 60,
                    "the hook run while the database is down")
    assert runs[down][0] == 0
    time.sleep(1.5)  # the background attempt found no server and left the spool file
    assert [Path(p).name for p in hookspool.pending(str(lab.spool))] == [f"{down}.json"]
    lab.server.start()
    collect_for(lab, [down], tmp_path / "reads2")
    report_until(lab, lambda: lab.queue().get(down, ("",))[0] == "sent")
    assert lab.queue()[down][1] == "spool"
    code, out = jobio("--dsn", lab.dsn, "report-daemon", "--once", "--sweep-every", "0")
    assert code == 0, out
    by_job = lab.sink.by_job()
    assert len(by_job[down]) == 1 and by_job[down][0].rcpt_tos == [f"bob@{DOMAIN}"]
    assert all(len(by_job[j]) == 1 for j in [*ran, down])
    with capsys.disabled():
        print(f"\n[EpilogSlurmctld jobio-epilog under slurmctld {c.release}] database up: "
              f"{', '.join(f'{t:.0f}' for t in up)} ms (median {statistics.median(up):.0f}); "
              f"database down: {runs[down][1]:.0f} ms")
