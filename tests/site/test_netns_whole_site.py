"""A whole site on one machine: hosts as network namespaces, the real Slurm testbed as `ctl`.

    oss1 10.78.1.2 ---+
    oss2 10.78.2.2 ---+--- [db] .1 on each link --- 10.78.5.2  ctl (the root namespace)
    mds1 10.78.3.2 ---+                                           |
    login 10.78.4.2 --+           login 10.78.6.2 --- 10.78.6.1 --+

`ctl` is the root namespace, because the shared Slurm 22.05 testbed (slurmctld, slurmd,
munged; scripts/setup-slurm.sh) runs there: its EpilogSlurmctld is the project's hook (as
tests/e2e/test_mail_e2e.py installs it, restored at the end), and the reporter runs there
too; both write to PostgreSQL on `db` over TCP (TLS with the test's CA, scram-sha-256, role
slurm_hook), the reporter mails to a real SMTP server (aiosmtpd) in ctl. `db` runs
PostgreSQL (listening on its four link addresses) and `jobio serve` (HTTPS on the login
link, MUNGE with its own munged). alice and bob submit with sbatch inside `login`: slurm.conf
names the controller 127.0.0.1, so a TCP forwarder on the login node's 127.0.0.1 port takes
sbatch to slurmctld over login's own veth to ctl (munge's socket is a file, shared by every
namespace). Once the jobs ended, job_stats reads are generated for them (their nodes, uids
and times from sacct: slurm_io.simulate.for_jobs), and live collectors (`jobio collect
--interval 2`, one per server namespace) read them through `--command` (tests/collect/
fake_lctl.py: one read per cycle). During the collection the link between oss1 and db is
cut (`ip link set down` on oss1's side) for three of oss1's cycles, then restored.

Checks: each user's `jobio JOBID --json`, run in `login` through the service, shows the
generated figures of their own jobs, and "no such job" for the other user's; a credential
captured on the wire in front of the service (a capturing HTTP relay in `login`) is refused
with 401 when replayed; the stored figures equal the generated ones (nothing lost during the
cut, nothing doubled); every job is mailed exactly once, to its user. Everything started is
stopped by its PID, the namespaces are deleted by name and ctl's veths removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from slurm_io.jobs.uids import fill_uids
from slurm_io.notify.reporter import SacctJobsSource
from slurm_io.report.counters import human_bytes
from slurm_io.simulate.for_jobs import reads_for_jobs
from slurm_io.store import accounts, migrate
from tests import needs
from tests.e2e.test_mail_e2e import hook_install, wait_for
from tests.notify.smtp_sink import smtp_server
from tests.privacy.privacy_db import RUNUSER, uids  # noqa: F401  (fixture)
from tests.site.remote_pg import tls_postgres
from tests.site.services import (
    ensure_service_account,
    private_munged,
    running_service,
    stop_session,
)
from tests.slurm_fixtures import HOST_RELEASE, SlurmCluster, ensure_cluster

pytestmark = [pytest.mark.pg, pytest.mark.slow,
              needs.root("netns and Slurm testbed: root")]
REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests/collect/fake_lctl.py"
RELAYS = Path(__file__).with_name("netns_relays.py")
SERVERS = ("oss1", "oss2", "mds1")
LINK = {"oss1": 1, "oss2": 2, "mds1": 3, "login": 4}  # 10.78.N.1 (db) -- 10.78.N.2 (host)
DB_CTL, CTL = "10.78.5.1", "10.78.5.2"
CTL_LOGIN, LOGIN_CTL = "10.78.6.1", "10.78.6.2"
SVC = "jobiosvc"
DOMAIN = "lab.example"
SVC_PORT = 8453
INTERVAL = 2


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def db_ip(host: str) -> str:
    return f"10.78.{LINK[host]}.1"


@contextlib.contextmanager
def namespaces() -> Iterator[dict[str, str]]:
    """The hosts: namespace per host name, veths as in the module's picture."""
    tag = str(os.getpid() % 100000)
    ns = {h: f"sio{h}{tag}" for h in ("db", *SERVERS, "login")}
    ctl_links = [f"sc5{tag}", f"sc6{tag}"]  # ctl's ends, in the root namespace
    try:
        for name in ns.values():
            ip("netns", "add", name)
            ip("-n", name, "link", "set", "lo", "up")
        for host, n in LINK.items():
            a, b = f"sd{n}{tag}", f"sh{n}{tag}"
            ip("link", "add", a, "netns", ns["db"], "type", "veth", "peer", "name", b,
               "netns", ns[host])
            ip("-n", ns["db"], "addr", "add", f"10.78.{n}.1/24", "dev", a)
            ip("-n", ns[host], "addr", "add", f"10.78.{n}.2/24", "dev", b)
            ip("-n", ns["db"], "link", "set", a, "up")
            ip("-n", ns[host], "link", "set", b, "up")
        for root_end, peer, (mine, theirs), other in (
                (ctl_links[0], ns["db"], (CTL, DB_CTL), f"sd5{tag}"),
                (ctl_links[1], ns["login"], (CTL_LOGIN, LOGIN_CTL), f"sh6{tag}")):
            ip("link", "add", root_end, "type", "veth", "peer", "name", other, "netns", peer)
            ip("addr", "add", f"{mine}/24", "dev", root_end)
            ip("-n", peer, "addr", "add", f"{theirs}/24", "dev", other)
            ip("link", "set", root_end, "up")
            ip("-n", peer, "link", "set", other, "up")
        yield ns
    finally:
        for link in ctl_links:
            subprocess.run(["ip", "link", "del", link], check=False, capture_output=True)
        for name in ns.values():
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


@contextlib.contextmanager
def started(cmd: list[str], log: Path, env: dict[str, str] | None = None
            ) -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours (its own session), stopped by its PID at the end of the block."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd="/",
                                env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
                                     "LC_ALL": "C.UTF-8", **(env or {})},
                                start_new_session=True)
    try:
        yield proc
    finally:
        stop_session(proc)


def in_ns(ns: str, cmd: list[str], *, user: str | None = None, env: dict[str, str] | None = None,
          cwd: str = "/", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *([RUNUSER, "-u", user, "--"] if user else []), *cmd]
    return subprocess.run(full, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          check=False, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
                                            "LC_ALL": "C.UTF-8", **(env or {})})


def readable(path: Path, owner: str | None = None, mode: int = 0o644) -> Path:
    if owner:
        os.chown(path, pwd.getpwnam(owner).pw_uid, -1)
    path.chmod(mode)
    return path


def cycles(reads: Path) -> int:
    """How many times a collector's `--command` ran (fake_lctl.py counts its calls)."""
    counter = reads / ".next"
    return int(counter.read_text()) if counter.exists() else 0


def batches(dsn: str, collector: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM ingest_batch WHERE collector = %s",
                            (collector,)).fetchone()[0]


def test_a_whole_site_users_see_their_jobs_a_cut_link_loses_nothing_mail_once(
        uids: dict[str, int], public_dir: Path, public_venv: Path,  # noqa: F811
        tmp_path: Path) -> None:
    base = public_dir / "whole-site"
    base.mkdir()
    base.chmod(0o755)
    ensure_service_account(SVC)
    jobio = str(public_venv / "jobio")
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(namespaces())
        listen = ",".join([*(db_ip(h) for h in SERVERS), DB_CTL])
        admin, ca, port = stack.enter_context(tls_postgres(
            base, netns=hosts["db"], listen=listen, clients="10.78.0.0/16",
            also_for=(db_ip("login"),)))
        readable(ca)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE slurmio")
        dsn = make_conninfo(admin, dbname="slurmio")
        with psycopg.connect(dsn) as conn:
            migrate.upgrade(conn)
            for server in SERVERS:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN BYPASSRLS PASSWORD {} IN ROLE "
                                     "jobio_collector").format(
                    sql.Identifier(f"collector_{server}"), sql.Literal(f"pw-{server}")))
            conn.execute("CREATE ROLE slurm_hook LOGIN PASSWORD 'pw-hook' "
                         "IN ROLE jobio_collector")
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE jobio_service").format(
                sql.Identifier(SVC)))
            accounts.sync_accounts(conn, [("alice", uids["alice"]), ("bob", uids["bob"])], [])
            conn.commit()

        def remote_dsn(user: str, address: str, passfile: Path) -> str:
            return make_conninfo("", host=address, port=port, dbname="slurmio", user=user,
                                 sslmode="verify-full", sslrootcert=str(ca),
                                 passfile=str(passfile), connect_timeout=3)

        # -- ctl: the hook as EpilogSlurmctld, its config and the reporter's ---------------
        sink, smtp_port = stack.enter_context(smtp_server())
        etc = base / "ctl"
        etc.mkdir(mode=0o755)
        hook_pass = etc / "hook.pgpass"
        hook_pass.write_text(f"{DB_CTL}:{port}:slurmio:slurm_hook:pw-hook\n")
        readable(hook_pass, "slurm", 0o600)
        spool = etc / "spool"
        spool.mkdir(mode=0o770)
        os.chown(spool, pwd.getpwnam("slurm").pw_uid, pwd.getpwnam("slurm").pw_gid)
        hook_dsn = remote_dsn("slurm_hook", DB_CTL, hook_pass)
        config = etc / "config.toml"
        config.write_text(
            f"dsn = {hook_dsn!r}\n[hook]\nspool_dir = {str(spool)!r}\ndb_timeout = 10\n"
            f"[mail]\nhost = '127.0.0.1'\nport = {smtp_port}\ndomain = {DOMAIN!r}\n"
            f"from = 'jobio@{DOMAIN}'\npolicy = 'all'\n"
            f"[slurm]\nsacct = '/usr/bin/sacct'\nscontrol = '/usr/bin/scontrol'\n")
        readable(config)
        python, pythonpath, hook = hook_install(etc / "install")
        wrapper = etc / "jobio-epilog"
        wrapper.write_text("\n".join([
            "#!/bin/sh", "# generated by tests/site/test_netns_whole_site.py (docs/hook.md)",
            f"JOBIO_PYTHON={python}", f"SLURM_IO_CONFIG={config}",
            "export JOBIO_PYTHON SLURM_IO_CONFIG",
            *([f"PYTHONPATH={pythonpath}", "export PYTHONPATH"] if pythonpath else []),
            f"exec {hook}"]) + "\n")
        readable(wrapper, mode=0o755)
        cluster = ensure_cluster(HOST_RELEASE, HOOK_EPILOG_SLURMCTLD=str(wrapper))
        stack.callback(ensure_cluster, HOST_RELEASE)  # the testbed's own hook again

        # -- login: sbatch reaches slurmctld over login's own link --------------------------
        ctld_port = next(line.split("=", 1)[1].strip() for line in
                         Path(cluster.env["SLURM_CONF"]).read_text().splitlines()
                         if line.startswith("SlurmctldPort="))
        stack.enter_context(started(
            ["ip", "netns", "exec", hosts["login"], "/usr/bin/python3", str(RELAYS), "forward",
             f"127.0.0.1:{ctld_port}", f"{CTL_LOGIN}:{ctld_port}"], base / "forward.log"))
        jobs = _submit_from_login(cluster, hosts["login"])
        owner = jobs
        lines = cluster.wait_finished(jobs)
        ran = sorted(int(ln["JobIDRaw"]) for ln in lines)
        assert set(ran) == set(jobs)

        # -- the servers: reads generated for the jobs that ran, live collectors ------------
        records = fill_uids(SacctJobsSource(ran, "/usr/bin/sacct").jobs(None, None))
        records = [r for r in records if r.job in set(ran)]
        gen_a, gen_b = tmp_path / "gen-a", tmp_path / "gen-b"
        # every id names its job: the live collectors stamp deltas with their own clock,
        # after the jobs' ends, so job-missing ids (recovered by time) are left out here
        exp_a = reads_for_jobs(records, gen_a, seed=3, hidden_share=0.0)  # mds1, oss1
        exp_b = reads_for_jobs(records, gen_b, seed=4, fs="lab2", hidden_share=0.0)  # oss2
        reads = {"oss1": gen_a / "oss1", "mds1": gen_a / "mds1", "oss2": gen_b / "oss1"}
        expected = {j: {"read_bytes": exp_a[j].read_bytes + exp_b[j].read_bytes,
                         "write_bytes": exp_a[j].write_bytes + exp_b[j].write_bytes,
                         "open": exp_a[j].open}  # oss2's reads come without an MDS
                    for j in ran}
        n_reads = len(list(reads["oss1"].glob("*.txt")))
        assert n_reads >= 8
        collectors = {}
        for server in SERVERS:
            passfile = tmp_path / f"{server}.pgpass"
            passfile.write_text(f"{db_ip(server)}:{port}:slurmio:collector_{server}:"
                                f"pw-{server}\n")
            passfile.chmod(0o600)
            collectors[server] = stack.enter_context(started(
                ["ip", "netns", "exec", hosts[server], sys.executable, "-m", "slurm_io.cli",
                 "--dsn", remote_dsn(f"collector_{server}", db_ip(server), passfile),
                 "--state-dir", str(tmp_path / f"state-{server}"), "collect",
                 "--interval", str(INTERVAL), "--name", server, "--command",
                 f"{sys.executable} {FAKE} {reads[server]}"],
                tmp_path / f"collect-{server}.log", env={"PYTHONPATH": str(REPO)}))
        # the cut: oss1's side of its link down for three of its cycles, then up again
        wait_for(lambda: batches(dsn, "oss1") >= 2, 60, "oss1's first batches")
        veth = f"sh{LINK['oss1']}{hosts['oss1'].removeprefix('siooss1')}"
        ip("-n", hosts["oss1"], "link", "set", veth, "down")
        try:
            stored_before, first = batches(dsn, "oss1"), cycles(reads["oss1"])
            wait_for(lambda: cycles(reads["oss1"]) >= first + 3, 120, "three cycles of oss1")
            time.sleep(0.5)  # the third cycle's attempt to reach db
            stored_during = batches(dsn, "oss1")
        finally:
            ip("-n", hosts["oss1"], "link", "set", veth, "up")
        assert stored_during <= stored_before + 1  # at most a batch sent before the cut
        assert first + 3 < n_reads, "the cut came after oss1 had read everything"
        log = (tmp_path / "collect-oss1.log").read_text()
        assert "database unavailable" in log, log[-2000:]
        for server in SERVERS:  # every read and two more cycles, the spool sent
            wait_for(lambda s=server: cycles(reads[s]) >= n_reads + 2
                     and batches(dsn, s) >= cycles(reads[s]) - 1, 120,
                     f"{server} to read and store everything")
        for server in SERVERS:
            proc = collectors[server]
            assert proc.poll() is None, (tmp_path / f"collect-{server}.log").read_text()
        with psycopg.connect(dsn) as conn:
            seqs = conn.execute("SELECT collector, count(*), count(DISTINCT seq) "
                                "FROM ingest_batch GROUP BY collector").fetchall()
        assert all(n == distinct for _, n, distinct in seqs), seqs

        # -- db: the service; login: the users ----------------------------------------------
        sock = stack.enter_context(private_munged(base, "munge"))
        key = base / "service.key"
        shutil.copy(base / "tlspg/server.key", key)
        readable(key, SVC, 0o400)
        svc_cfg = base / "service.toml"
        svc_cfg.write_text(
            f'dsn = "{make_conninfo(dsn, user=SVC)}"\n[munge]\nsocket = "{sock}"\n'
            f'[service]\nlisten = "{db_ip("login")}"\nport = {SVC_PORT}\n'
            f'tls_cert = "{base / "tlspg/server.crt"}"\ntls_key = "{key}"\n')
        readable(svc_cfg)
        url = f"https://{db_ip('login')}:{SVC_PORT}"
        stack.enter_context(running_service(
            public_venv / "jobio", SVC, svc_cfg, SVC_PORT, url, ca, base / "service.log",
            netns=hosts["db"], probe_netns=hosts["login"]))
        client = base / "client.toml"
        client.write_text(f'server = "{url}"\nserver_ca = "{ca}"\n'
                          f'[munge]\nsocket = "{sock}"\n')
        readable(client)
        env = {"SLURM_IO_CONFIG": str(client)}
        for user in ("alice", "bob"):
            for j in ran:
                got = in_ns(hosts["login"], [jobio, str(j), "--json"], user=user, env=env)
                if owner[j] != user:
                    assert got.returncode == 1 and "no such job" in got.stderr, (user, j, got)
                    continue
                assert got.returncode == 0, got.stderr
                doc = json.loads(got.stdout)
                assert len(doc) == 1, doc
                totals = {k: doc[0]["totals"].get(k, 0) for k in expected[j]}
                assert totals == expected[j], (user, j)

        # a credential captured on the wire in front of the service, replayed: 401
        captured = base / "captured.jsonl"
        stack.enter_context(started(
            ["ip", "netns", "exec", hosts["login"], "/usr/bin/python3", str(RELAYS), "capture",
             "8080", url, str(ca), str(captured)], base / "capture.log"))
        via = base / "client-via-capture.toml"
        via.write_text(f'server = "http://127.0.0.1:8080"\n[munge]\nsocket = "{sock}"\n')
        readable(via)
        alices = next(j for j in ran if owner[j] == "alice")
        wait_for(lambda: in_ns(hosts["login"], ["/usr/bin/python3", "-c", (
            "import socket; socket.create_connection(('127.0.0.1', 8080), 1)")]
                               ).returncode == 0, 30, "the capturing relay")
        seen = in_ns(hosts["login"], [jobio, str(alices), "--json"], user="alice",
                     env={"SLURM_IO_CONFIG": str(via)})
        assert seen.returncode == 0, seen.stderr
        request = json.loads(captured.read_text().splitlines()[-1])
        replay = in_ns(hosts["login"], ["/usr/bin/python3", "-c", REPLAY, url + request["target"],
                                        request["authorization"], str(ca)])
        status, error = replay.stdout.split(" ", 1)
        assert status == "401", replay
        assert "Replayed credential" in error

        # -- ctl: the reporter mails every job once -------------------------------------------
        reporter_pass = etc / "reporter.pgpass"
        reporter_pass.write_text(hook_pass.read_text())
        reporter_pass.chmod(0o600)
        reporter_env = {"SLURM_IO_CONFIG": str(config), "PYTHONPATH": str(REPO),
                        "SLURM_CONF": cluster.env["SLURM_CONF"]}
        reporter_dsn = remote_dsn("slurm_hook", DB_CTL, reporter_pass)

        def report() -> None:
            p = subprocess.run([sys.executable, "-m", "slurm_io.cli", "--dsn", reporter_dsn,
                                "report-daemon", "--once", "--interval", "1",
                                "--sweep-every", "1", "--sweep-hours", "1"],
                               env={"PATH": "/usr/bin:/bin", **reporter_env},
                               capture_output=True, text=True, timeout=120, check=False)
            assert p.returncode in (0, 1), p.stderr[-2000:]

        def all_mailed() -> bool:
            report()
            return set(ran) <= set(sink.by_job())

        wait_for(all_mailed, 120, "a mail for every job")
        report()  # once more: nothing is sent twice
        by_job = sink.by_job()
        for j in ran:
            assert len(by_job[j]) == 1, j
            assert by_job[j][0].rcpt_tos == [f"{owner[j]}@{DOMAIN}"], j
            text = by_job[j][0].message.get_body(("plain",)).get_content()
            assert human_bytes(expected[j]["write_bytes"]) in text, j


REPLAY = """
import ssl, sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": sys.argv[2]})
try:
    urllib.request.urlopen(req, timeout=20, context=ssl.create_default_context(cafile=sys.argv[3]))
    print("200 accepted")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
"""


def _submit_from_login(cluster: SlurmCluster, login: str) -> dict[int, str]:
    """job id -> user, for jobs alice and bob submit with sbatch on the login node."""
    jobs = {}
    for user, args in (("alice", ["-J", "site-a1", "-N1", "--wrap", "sleep 8"]),
                       ("alice", ["-J", "site-a2", "-N2", "--wrap", "sleep 6"]),
                       ("bob", ["-J", "site-b1", "-N1", "--wrap", "sleep 7"])):
        p = in_ns(login, ["sbatch", "--parsable", *args], user=user,
                  env={"SLURM_CONF": cluster.env["SLURM_CONF"]},
                  cwd=str(cluster.job_dir(user)))
        assert p.returncode == 0, p.stderr
        jobs[int(p.stdout.strip().split(";")[0])] = user
    return jobs
