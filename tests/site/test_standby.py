"""Readers on a hot standby (issue 20, item 4): a real primary and its streaming standby.

`jobio collect --from` writes to the primary; `jobio show`, the exporter, `jobio daily` and
`jobio serve` read the standby named by `read_dsn` and say how far behind it is; writes
(`jobio mail off`, `jobio attribute`, the LASSi hours `daily` lacks, a mail choice through the
service) go to the primary. Where a reader must not touch the primary at all, its `dsn`
names a port nobody listens on: the command works only if it reads the standby alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from slurm_io.simulate import simulate
from tests.cli.installed import command_for
from tests.collect.test_collector import stored_rows
from tests.privacy.privacy_db import RUNUSER, uids  # noqa: F401  (fixture)
from tests.site.remote_pg import free_port
from tests.site.services import (
    ensure_service_account,
    health_probe,
    private_munged,
    self_signed_cert,
    stop_session,
)
from tests.site.standby_pg import Pair, primary_and_standby

pytestmark = [pytest.mark.pg]
# a scenario of a few hours ago: the exporter shows collectors of the last 7 days
START = float(int(time.time()) // 3600 * 3600 - 3 * 3600)
DAY = datetime.fromtimestamp(START, UTC).date().isoformat()
SERVICE_ACCOUNT = "jobiosvc"
JOBIO = str(Path(sys.executable).with_name("jobio"))


@dataclass(frozen=True)
class Standby:
    pair: Pair
    dir: Path  # 0755: configs, outputs
    alice_jobs: tuple[str, ...]  # finished jobs of alice (the OS account)

    def config(self, name: str, *, read: bool = True, superuser: bool = True,
               dead_primary: bool = False, extra: str = "") -> Path:
        """A config whose `dsn` is the primary (or a port nobody listens on) and whose
        `read_dsn` is the standby (when `read`)."""
        p = self.pair
        primary = p.dsn(free_port() if dead_primary else p.primary_port, superuser=superuser)
        text = f'dsn = "{primary}"\n'
        if read:
            text += f'read_dsn = "{p.dsn(p.standby_port, superuser=superuser)}"\n'
        path = self.dir / f"{name}.toml"
        path.write_text(text + extra)
        path.chmod(0o644)
        return path


def jobio(user: str | None, *args: str, config: Path | None = None, timeout: float = 300
          ) -> subprocess.CompletedProcess[str]:
    """The installed `jobio` as OS account `user` (None: root), with a clean environment."""
    argv, env = command_for(user, RUNUSER) if user else ([JOBIO], {})
    environ = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PGCONNECT_TIMEOUT": "10",
               "SLURM_IO_TRACEBACK": "1", **env}
    if config is not None:
        environ["SLURM_IO_CONFIG"] = str(config)
    cmd = [*argv, *args]
    if user:
        cmd = [RUNUSER, "-u", user, "--", "env", *(f"{k}={v}" for k, v in environ.items()),
               *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, cwd="/", timeout=timeout,
                          env=environ, check=False)


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def standby(pg_base_dir: Path, uids: dict[str, int]) -> Iterator[Standby]:  # noqa: F811
    """The primary with a collected scenario (alice's jobs given her real uid), jobs
    imported and attributed, `jobio db users alice`; the standby caught up."""
    d = Path(pg_base_dir) / f"standby-{os.getpid()}"
    d.mkdir()
    d.chmod(0o755)
    with primary_and_standby(d) as pair:
        sim = d / "cluster"
        simulate(sim, seed=17, start=START, hours=1.0, n_nodes=8, n_oss=2, jobs_per_hour=14)
        sacct = sim / "sacct.txt"
        sacct.write_text(sacct.read_text().replace(
            "|alice|1411|alice|1411|", f"|alice|{uids['alice']}|alice|{uids['alice']}|"))
        alice_jobs = tuple(line.split("|")[0] for line in sacct.read_text().splitlines()
                           if f"|alice|{uids['alice']}|" in line and "|COMPLETED|" in line)
        assert alice_jobs
        root = ["--dsn", pair.primary]
        ok(jobio(None, *root, "db", "upgrade"))
        ok(jobio(None, *root, "db", "users", "alice"))
        ok(jobio(None, *root, "jobs", "import", str(sacct)))
        ok(jobio(None, *root, "--state-dir", str(d / "state"), "collect", "--from", str(sim)))
        site = Standby(pair, d, alice_jobs)
        # attribution results are a write: with read_dsn set they are stored on the primary
        ok(jobio(None, "attribute", "--since", "now-2days", config=site.config("attr")))
        pair.wait_replayed()
        yield site


@pytest.fixture
def primary_writing(standby: Standby) -> Iterator[None]:
    """The primary takes writes all along (a table of its own, committed every 20 ms)."""
    stop = threading.Event()
    with psycopg.connect(standby.pair.primary, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS standby_test_load (t float8)")

    def write() -> None:
        with psycopg.connect(standby.pair.primary, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute("INSERT INTO standby_test_load VALUES (%s)", (time.time(),))
                time.sleep(0.02)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def test_collected_rows_reach_the_standby(standby: Standby) -> None:
    rows = stored_rows(standby.pair.primary)
    assert len(rows) > 100
    assert stored_rows(standby.pair.standby) == rows
    with psycopg.connect(standby.pair.standby) as conn:
        assert conn.execute("SELECT count(*) FROM job_io").fetchone()[0] > 0  # type: ignore[index]


@pytest.mark.parametrize("user", [None, "alice"], ids=["root", "alice"])
def test_show_on_the_standby_gives_the_primarys_figures_and_its_lag(
        standby: Standby, primary_writing: None, user: str | None) -> None:
    su = user is None
    on_primary = standby.config(f"plain-{user}", read=False, superuser=su)
    on_standby = standby.config(f"read-{user}", superuser=su, dead_primary=True)
    jobs = standby.alice_jobs
    want = json.loads(ok(jobio(user, "show", *jobs, "--json", config=on_primary)))
    got = json.loads(ok(jobio(user, "show", *jobs, "--json", config=on_standby)))
    assert [d["jobid"] for d in want] == list(jobs)
    assert all("replication_lag" not in d for d in want)  # no read_dsn: as before
    lags = [d.pop("replication_lag") for d in got]
    assert all(isinstance(lag, float) and 0 <= lag < 60 for lag in lags)
    assert got == want
    text = ok(jobio(user, "show", jobs[0], config=on_standby))
    assert "s behind the primary]" in text and "read from a standby" in text
    assert "standby" not in ok(jobio(user, "show", jobs[0], config=on_primary))
    if su:  # an explicit --dsn reads that database, whatever read_dsn the config names
        flagged = jobio(user, "--dsn", standby.pair.primary, "show", *jobs, "--json",
                        config=on_standby)
        assert json.loads(ok(flagged)) == want


def test_the_lag_is_how_far_replay_is_behind(standby: Standby) -> None:
    """Replay paused while the primary commits: the lag grows with the wait; resumed: 0."""
    pair = standby.pair
    cfg = standby.config("lag", dead_primary=True)
    with psycopg.connect(pair.standby, autocommit=True) as s:
        s.execute("SELECT pg_wal_replay_pause()")
        try:
            time.sleep(2.0)
            with psycopg.connect(pair.primary, autocommit=True) as p:
                p.execute("CREATE TABLE IF NOT EXISTS standby_test_load (t float8)")
                p.execute("INSERT INTO standby_test_load VALUES (1)")
                lsn = p.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
            while s.execute("SELECT pg_last_wal_receive_lsn() >= %s::pg_lsn",
                            (lsn,)).fetchone() != (True,):
                time.sleep(0.1)
            doc = json.loads(ok(jobio(None, "show", standby.alice_jobs[0], "--json",
                                      config=cfg)))
            assert doc[0]["replication_lag"] >= 2.0
        finally:
            s.execute("SELECT pg_wal_replay_resume()")
    pair.wait_replayed()
    doc = json.loads(ok(jobio(None, "show", standby.alice_jobs[0], "--json", config=cfg)))
    assert doc[0]["replication_lag"] == 0


def _mail_enabled(dsn: str, uid: int) -> bool | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT enabled FROM mail_preference WHERE uid = %s",
                           (uid,)).fetchone()
    return None if row is None else bool(row[0])


def test_mail_off_with_a_standby_to_read_writes_to_the_primary(
        standby: Standby, uids: dict[str, int]) -> None:  # noqa: F811
    cfg = standby.config("alice-mail", superuser=False)
    ok(jobio("alice", "mail", "off", config=cfg))
    assert _mail_enabled(standby.pair.primary, uids["alice"]) is False
    standby.pair.wait_replayed()
    assert _mail_enabled(standby.pair.standby, uids["alice"]) is False
    ok(jobio("alice", "mail", "on", config=cfg))
    assert _mail_enabled(standby.pair.primary, uids["alice"]) is True


def _series(text: str, prefix: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line.startswith(prefix))


def test_the_exporter_reads_the_standby_and_exports_its_lag(
        standby: Standby, primary_writing: None) -> None:
    primary = ok(jobio(None, "exporter", "--once",
                       config=standby.config("exp-primary", read=False)))
    assert "jobio_database_replication_lag_seconds" not in primary
    text = ok(jobio(None, "exporter", "--once",
                    config=standby.config("exp-standby", dead_primary=True)))
    lag = _series(text, "jobio_database_replication_lag_seconds ")
    assert len(lag) == 1 and 0 <= float(lag[0].split()[1]) < 60
    batches = _series(primary, "jobio_collector_last_read_timestamp_seconds{")
    assert len(batches) == 3  # mds01, oss01, oss02
    assert _series(text, "jobio_collector_last_read_timestamp_seconds{") == batches
    assert _series(text, "jobio_up ") == ["jobio_up 1.0"]


def test_daily_on_the_standby_stores_lassi_hours_on_the_primary(standby: Standby) -> None:
    pair = standby.pair
    out = standby.dir / "daily"
    proc = jobio(None, "daily", "--date", DAY, "--out", str(out),
                 config=standby.config("daily"))
    ok(proc)
    assert f"computed LASSi metrics of {DAY}" in proc.stderr
    assert (out / "index.html").is_file()
    counts = []
    for dsn in (pair.primary, pair.standby):
        with psycopg.connect(dsn) as conn:
            counts.append(conn.execute("SELECT count(*) FROM lassi_fs_hour").fetchone()[0])  # type: ignore[index]
    assert counts[0] > 0 and counts[0] == counts[1]
    # the day is stored now: a second report only reads, and reads the standby alone
    again = jobio(None, "daily", "--date", DAY, "--out", str(standby.dir / "daily2"),
                  config=standby.config("daily2"))
    ok(again)
    assert "computed LASSi" not in again.stderr


def test_top_usage_and_slowdown_read_the_standby_alone(standby: Standby) -> None:
    # these reading commands give the primary's answers with the primary gone, as root
    # and as alice (an unprivileged OS user with her own database role)
    standby.pair.wait_replayed()
    start, end = (datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")
                  for t in (START, START + 3 * 3600))
    commands = ((("top", "--once", "--json"), "alice"), (("top", "--once", "-g", "user"), "alice"),
                (("usage", "-S", start, "-E", end, "--json"), "by_class"),
                (("slowdown", "-u", "alice", "-S", start, "-E", end, "--json"), "elapsed"))
    for user in (None, "alice"):  # an admin, and a user with a role of her own
        su = user is None
        on_primary = standby.config(f"views-primary-{user}", read=False, superuser=su)
        on_standby = standby.config(f"views-standby-{user}", dead_primary=True, superuser=su)
        for argv, shown in commands:
            want = ok(jobio(user, *argv, config=on_primary))
            assert shown in want, (user, argv, want)
            assert ok(jobio(user, *argv, config=on_standby)) == want, (user, argv)


def test_the_service_reads_the_standby_and_writes_mail_choices_to_the_primary(
        standby: Standby, uids: dict[str, int]) -> None:  # noqa: F811
    ensure_service_account(SERVICE_ACCOUNT)
    with psycopg.connect(standby.pair.primary, autocommit=True) as conn:
        if conn.execute("SELECT FROM pg_roles WHERE rolname = %s",
                        (SERVICE_ACCOUNT,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE jobio_service").format(
                sql.Identifier(SERVICE_ACCOUNT)))
    standby.pair.wait_replayed()
    base = standby.dir / "service"
    base.mkdir()
    base.chmod(0o755)
    cert, key = self_signed_cert(base, SERVICE_ACCOUNT)
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    with private_munged(base, "munge") as sock:
        cfg = standby.config("service", superuser=False, extra=(
            f'[munge]\nsocket = "{sock}"\n[service]\nlisten = "127.0.0.1"\n'
            f'tls_cert = "{cert}"\ntls_key = "{key}"\n'))
        argv, env = command_for(SERVICE_ACCOUNT, RUNUSER)
        environ = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "SLURM_IO_CONFIG": str(cfg),
                   **env}
        with open(base / "service.log", "wb") as log:
            proc = subprocess.Popen(
                [RUNUSER, "-u", SERVICE_ACCOUNT, "--", "env",
                 *(f"{k}={v}" for k, v in environ.items()), *argv, "serve", "--port",
                 str(port)], stdout=log, stderr=subprocess.STDOUT, env=environ, cwd="/",
                start_new_session=True)
        try:
            for _ in range(300):
                if health_probe(url, cert) or proc.poll() is not None:
                    break
                time.sleep(0.1)
            assert proc.poll() is None, (base / "service.log").read_text()
            client = standby.dir / "client.toml"
            client.write_text(f'server = "{url}"\nserver_ca = "{cert}"\n'
                              f'[munge]\nsocket = "{sock}"\n')
            client.chmod(0o644)
            jobs = standby.alice_jobs
            got = json.loads(ok(jobio("alice", "show", *jobs, "--json", config=client)))
            want = json.loads(ok(jobio("alice", "show", *jobs, "--json",
                                       config=standby.config("svc-want", read=False,
                                                             superuser=False))))
            assert all(0 <= d.pop("replication_lag") < 60 for d in got)
            assert got == want
            ok(jobio("alice", "mail", "off", config=client))  # a POST: on the primary
            assert _mail_enabled(standby.pair.primary, uids["alice"]) is False
            ok(jobio("alice", "mail", "on", config=client))
            assert _mail_enabled(standby.pair.primary, uids["alice"]) is True
        finally:
            stop_session(proc)
