"""A whole site on one machine, hosts as network namespaces.

    oss   (10.77.1.2) --- 10.77.1.1 [db] 10.77.2.1 --- (10.77.2.2) login

`db` runs PostgreSQL (TLS, scram-sha-256 for TCP, peer on its socket) and `jobio serve`
(HTTPS, MUNGE); `oss` runs the collector, which reaches PostgreSQL only over TCP; `login`
has the users, whose installed `jobio` reaches only the service. The oss cannot reach the
service, the login node cannot reach PostgreSQL. alice on the login node gets her job's
I/O, as root reads it on the database host; bob gets "no such job" for it.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from slurm_io.simulate import simulate
from slurm_io.store import accounts, migrate
from tests import needs
from tests.privacy.privacy_db import RUNUSER, uids  # noqa: F401  (fixture)
from tests.site.remote_pg import tls_postgres
from tests.site.services import ensure_service_account, private_munged, running_service

pytestmark = [pytest.mark.pg, needs.root("netns: root")]
REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests/collect/fake_lctl.py"
DB_OSS, OSS, DB_LOGIN, LOGIN = "10.77.1.1", "10.77.1.2", "10.77.2.1", "10.77.2.2"
SVC = "jobiosvc"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def hosts() -> Iterator[dict[str, str]]:
    tag = str(os.getpid() % 100000)
    ns = {h: f"sio{h}{tag}" for h in ("db", "oss", "login")}
    for name in ns.values():
        ip("netns", "add", name)
        ip("-n", name, "link", "set", "lo", "up")
    try:
        for host, db_ip, peer_ip in (("oss", DB_OSS, OSS), ("login", DB_LOGIN, LOGIN)):
            a, b = f"d{host[0]}{tag}", f"{host[0]}d{tag}"
            ip("link", "add", a, "netns", ns["db"], "type", "veth", "peer", "name", b,
               "netns", ns[host])
            ip("-n", ns["db"], "addr", "add", f"{db_ip}/24", "dev", a)
            ip("-n", ns[host], "addr", "add", f"{peer_ip}/24", "dev", b)
            ip("-n", ns["db"], "link", "set", a, "up")
            ip("-n", ns[host], "link", "set", b, "up")
        yield ns
    finally:
        for name in ns.values():
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def in_ns(ns: str, cmd: list[str], *, user: str | None = None, env: dict[str, str] | None = None,
          timeout: float = 180) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *([RUNUSER, "-u", user, "--"] if user else []), *cmd]
    return subprocess.run(full, capture_output=True, text=True, timeout=timeout, cwd="/",
                          check=False, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
                                            "LC_ALL": "C.UTF-8", **(env or {})})


def test_a_user_on_the_login_node_sees_what_the_collector_on_the_oss_stored(
        hosts: dict[str, str], uids: dict[str, int], public_dir: Path,  # noqa: F811
        public_venv: Path, tmp_path: Path) -> None:
    base = public_dir / "netns"
    base.mkdir()
    base.chmod(0o755)
    ensure_service_account(SVC)
    with tls_postgres(base, netns=hosts["db"], listen=DB_OSS, clients="10.77.1.0/24",
                      also_for=(DB_LOGIN,)) as (admin, ca, port):
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE slurmio")
        dsn = make_conninfo(admin, dbname="slurmio")
        with psycopg.connect(dsn) as conn:
            migrate.upgrade(conn)
            conn.execute("CREATE ROLE collector_oss1 LOGIN BYPASSRLS PASSWORD 'oss-pw-1' "
                         "IN ROLE jobio_collector")
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE jobio_service").format(
                sql.Identifier(SVC)))
            accounts.sync_accounts(conn, [("alice", uids["alice"]), ("bob", uids["bob"])], [])
            conn.commit()
        # the oss: one collector cycle per recorded read, to db over TLS
        out = tmp_path / "cluster"
        simulate(out, seed=5, start=1_795_200_000.0, hours=0.3, n_nodes=8, n_oss=1,
                 jobs_per_hour=30, outage=False)
        pgpass = tmp_path / "pgpass"
        pgpass.write_text(f"{DB_OSS}:{port}:slurmio:collector_oss1:oss-pw-1\n")
        pgpass.chmod(0o600)
        collector_dsn = make_conninfo("", host=DB_OSS, port=port, dbname="slurmio",
                                      user="collector_oss1", sslmode="verify-full",
                                      sslrootcert=str(ca), passfile=str(pgpass),
                                      connect_timeout=5)
        for _ in sorted((out / "oss01").glob("*.txt")):
            p = in_ns(hosts["oss"], [sys.executable, "-m", "slurm_io.cli", "--dsn",
                                     collector_dsn, "--state-dir", str(tmp_path / "state"),
                                     "collect", "--once", "--name", "oss01", "--command",
                                     f"{sys.executable} {FAKE} {out / 'oss01'}"],
                      env={"PYTHONPATH": str(REPO)})
            assert p.returncode == 0, p.stderr[-2000:]
            assert "database unavailable" not in p.stderr, p.stderr[-2000:]
        # the job record of one generated job, given to alice (as `jobio jobs sync` would)
        truth = json.loads((out / "truth.json").read_text())
        with psycopg.connect(dsn) as conn:
            stored = {r[0] for r in conn.execute(
                "SELECT DISTINCT job FROM jobstats_delta WHERE job IS NOT NULL")}
            job = min(int(j) for j in truth["jobs"] if int(j) in stored)
            info = truth["jobs"][str(job)]
            conn.execute(
                "INSERT INTO job (job, jobid, uid, user_name, nodes, start_time, end_time, "
                "state, source) VALUES (%s, %s, %s, 'alice', %s, to_timestamp(%s), "
                "to_timestamp(%s), 'COMPLETED', 'test')",
                (job, str(job), uids["alice"], info["nodes"], info["start"], info["end"]))
            conn.commit()
        # db: the service, HTTPS on the login side, the socket for PostgreSQL
        with private_munged(base, "munge") as sock:
            key = base / "service.key"  # the same certificate, its key readable by SVC
            shutil.copy(base / "tlspg/server.key", key)
            os.chown(key, pwd.getpwnam(SVC).pw_uid, -1)
            svc_cfg = base / "service.toml"
            svc_cfg.write_text(
                f'dsn = "{make_conninfo(dsn, user=SVC)}"\n[munge]\nsocket = "{sock}"\n'
                f'[service]\nlisten = "{DB_LOGIN}"\nport = 8453\n'
                f'tls_cert = "{base / "tlspg/server.crt"}"\ntls_key = "{key}"\n')
            svc_cfg.chmod(0o644)
            url = f"https://{DB_LOGIN}:8453"
            with running_service(public_venv / "jobio", SVC, svc_cfg, 8453, url, ca,
                                 base / "service.log", netns=hosts["db"],
                                 probe_netns=hosts["login"]):
                client = base / "client.toml"
                client.write_text(f'server = "{url}"\nserver_ca = "{ca}"\n'
                                  f'[munge]\nsocket = "{sock}"\n')
                client.chmod(0o644)
                env = {"SLURM_IO_CONFIG": str(client)}
                mine = in_ns(hosts["login"], [str(public_venv / "jobio"), str(job), "--json"],
                             user="alice", env=env)
                assert mine.returncode == 0, mine.stderr
                root = in_ns(hosts["db"], [str(public_venv / "jobio"), "--dsn", dsn,
                                           str(job), "--json"])
                assert root.returncode == 0, root.stderr
                # the same document, but for the elapsed time of a job without an end (the
                # simulation may stop while it runs): it moves between the two calls
                assert _steady(mine.stdout) == _steady(root.stdout)
                assert json.loads(mine.stdout)[0]["totals"].get("read_bytes", 0) > 0
                theirs = in_ns(hosts["login"], [str(public_venv / "jobio"), str(job)],
                               user="bob", env=env)
                assert theirs.returncode == 1
                assert "no such job" in theirs.stderr
                # the login node cannot reach PostgreSQL, the oss cannot reach the service
                direct = in_ns(hosts["login"], [str(public_venv / "jobio"), "--dsn",
                                                collector_dsn, str(job)], user="alice")
                assert direct.returncode != 0
                probe = in_ns(hosts["oss"], ["/usr/bin/python3", "-c",
                                             f"import socket; socket.create_connection("
                                             f"('{DB_LOGIN}', 8453), timeout=3)"])
                assert probe.returncode != 0


def _steady(out: str) -> list[dict]:
    """`jobio --json` documents without what moves with the clock (a running job's elapsed)."""
    docs = json.loads(out)
    for d in docs:
        if d.get("end") is None:
            d.pop("elapsed", None)
    return docs
