"""`jobio` on a login node: the installed client, MUNGE, `jobio serve` over TLS.

The service runs as its own OS account (`jobiosvc`, a database role in jobio_service only),
with a private munged (its own key and socket); users run the installed `jobio` with
`server = "https://127.0.0.1:PORT"`. What alice gets through the service is compared with
what root reads from the database directly; forged, replayed, expired, misdirected and
missing credentials are refused with 401 and one line on the client.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from slurm_io import munge
from slurm_io.client.http import ServiceError, call
from slurm_io.service.protocol import request_payload
from tests.privacy.privacy_db import RUNUSER
from tests.site.conftest import Site, as_json, run_as
from tests.site.services import (
    ensure_service_role,
    free_port,
    private_munged,
    running_service,
    self_signed_cert,
)
from tests.site.test_users_cli import SHOW_VARIANTS, _settled

pytestmark = [pytest.mark.pg]
SERVICE_ACCOUNT = "jobiosvc"


class Service:
    def __init__(self, site: Site, url: str, ca: Path, sock: str, forger: str) -> None:
        self.site, self.url, self.ca, self.sock, self.forger = site, url, ca, sock, forger
        self.client = site.config(
            "client", f'server = "{url}"\nserver_ca = "{ca}"\n[munge]\nsocket = "{sock}"\n')

    def run(self, user: str | None, *args: str, config: Path | None = None):
        return run_as(user, self.site.jobio, list(args), config=config or self.client)


@contextmanager
def started_service(site: Site, dirname: str) -> Iterator[Service]:
    """`jobio serve` as its own account, TLS, a private munged (and a forger's), its files
    under `site.dir/dirname`."""
    ensure_service_role(site.superuser_dsn, SERVICE_ACCOUNT)
    base = site.dir / dirname
    base.mkdir()
    base.chmod(0o755)
    cert, key = self_signed_cert(base, SERVICE_ACCOUNT)
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    with private_munged(base, "munge") as sock, private_munged(base, "forger") as forger:
        cfg = site.config(dirname, f'dsn = "{site.user_dsn}"\n[munge]\nsocket = "{sock}"\n'
                          f'[service]\nlisten = "127.0.0.1"\ntls_cert = "{cert}"\n'
                          f'tls_key = "{key}"\n')
        with running_service(site.jobio, SERVICE_ACCOUNT, cfg, port, url, cert,
                             base / "service.log"):
            yield Service(site, url, cert, sock, forger)


@pytest.fixture(scope="module")
def service(site: Site) -> Iterator[Service]:
    with started_service(site, "service") as started:
        yield started


def root_local(site: Site, *args: str):
    return run_as(None, site.jobio, ["--dsn", site.superuser_dsn, *args])


@pytest.mark.parametrize("args", SHOW_VARIANTS, ids=lambda a: " ".join(a))
def test_show_through_the_service_is_what_root_reads_from_the_database(
        service: Service, args: list[str]) -> None:
    mine = service.run("alice", *args)
    assert mine.returncode == 0, mine.stderr
    theirs = root_local(service.site, *args).stdout
    if "-u" in args:
        assert _settled(json.loads(mine.stdout)) == _settled(json.loads(theirs))
    else:
        assert mine.stdout == theirs


def test_through_the_service_a_user_sees_no_other_users_job_and_an_admin_does(
        service: Service) -> None:
    proc = service.run("alice", "show", "8301")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "jobio: job 8301: no such job, or no I/O recorded for it\n"
    carol = service.run("carol", "show", "8301", "--json")
    assert as_json(carol) == as_json(root_local(service.site, "show", "8301", "--json"))
    bob = as_json(service.run("bob", "show", "8301", "--json"))
    assert bob == as_json(carol)


def test_through_the_service_a_job_not_started_says_what_is_missing_as_locally(
        service: Service, unstarted_jobs: dict[int, tuple[str, str]]) -> None:
    ids = [str(j) for j in unstarted_jobs]
    proc = service.run("alice", "show", *ids)
    assert (proc.returncode, proc.stdout) == (1, "")
    local = run_as("alice", service.site.jobio, ["show", *ids], config=service.site.config(
        "alice-local", f'dsn = "{service.site.user_dsn}"\n'))
    assert proc.stderr == local.stderr
    assert proc.stderr.splitlines() == [
        f"jobio: {line}" if owner == "alice" else f"jobio: job {job}: no such job, or no I/O "
        "recorded for it" for job, (owner, line) in unstarted_jobs.items()]
    # the service's answer to alice: the ids as before, and the line for each beside them
    target = "/v1/show?jobid=8110&jobid=8310"
    cred = subprocess.run(
        [RUNUSER, "-u", "alice", "--", "munge", "-S", service.sock],
        input=request_payload("GET", target, b""), capture_output=True, check=True,
    ).stdout.decode().strip()
    doc = call(service.url, "GET", "/v1/show", [("jobid", "8110"), ("jobid", "8310")],
               ca_file=service.ca, credential=cred)
    assert (doc["jobs"], doc["missing"]) == ([], ["8110", "8310"])
    assert doc["why"] == ["job 8110 is pending: no I/O before it starts",
                          "job 8310: no such job, or no I/O recorded for it"]


def test_report_and_mail_through_the_service(service: Service) -> None:
    text = service.run("alice", "report", "8101")
    assert text.returncode == 0, text.stderr
    assert text.stdout == root_local(service.site, "report", "8101").stdout
    out = service.site.dir / "alice-service-out"
    out.mkdir(exist_ok=True)
    out.chmod(0o777)
    files = service.run("alice", "report", "8101", "--eml", str(out / "r.eml"), "--html",
                        str(out / "r.html"))
    assert files.returncode == 0, files.stderr
    assert b"Subject:" in (out / "r.eml").read_bytes()
    assert "<html" in (out / "r.html").read_text().lower()
    assert service.run("alice", "report", "8301").returncode == 1

    assert service.run("bob", "mail", "off").returncode == 0
    status = service.run("bob", "mail", "status")
    assert "mails:   off" in status.stdout and "user:    bob" in status.stdout
    local = run_as("bob", service.site.jobio, ["mail", "status"],
                   config=service.site.config("bob-local", f'dsn = "{service.site.user_dsn}"\n'))
    assert local.stdout == status.stdout
    assert service.run("bob", "mail", "on").returncode == 0
    refused = service.run("bob", "mail", "off", "--user", "alice")
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and "refused" in refused.stderr


def test_usage_through_the_service_is_the_users_own_load(service: Service) -> None:
    window = ["usage", "-S", "2024-04-03T08:00", "-E", "2024-04-03T11:00", "--json"]
    remote = as_json(service.run("alice", *window))
    local = as_json(run_as("alice", service.site.jobio, window,
                           config=service.site.config("alice-local",
                                                      f'dsn = "{service.site.user_dsn}"\n')))
    assert remote == local
    assert remote != as_json(root_local(service.site, *window))


def _cred(sock: str, target: str, method: str = "GET", ttl: int | None = None) -> str:
    return munge.encode(request_payload(method, target, b""), socket=sock, ttl=ttl)


def test_forged_replayed_expired_misdirected_and_missing_credentials_get_401(
        service: Service) -> None:
    target = "/v1/show?jobid=8101"

    def refusal(credential: str, path: str = "/v1/show",
                params: list[tuple[str, str]] | None = None) -> ServiceError:
        with pytest.raises(ServiceError) as e:
            call(service.url, "GET", path, params or [("jobid", "8101")], ca_file=service.ca,
                 credential=credential)
        assert e.value.status == 401
        return e.value

    forged = str(refusal(_cred(service.forger, target)))  # another munged's key
    assert forged.startswith("the jobio service refused: MUNGE credential refused: ")
    good = subprocess.run(  # alice's own credential, minted by munge run as alice
        [RUNUSER, "-u", "alice", "--", "munge", "-S", service.sock],
        input=request_payload("GET", target, b""), capture_output=True, check=True,
    ).stdout.decode().strip()
    assert call(service.url, "GET", "/v1/show", [("jobid", "8101")], ca_file=service.ca,
                credential=good)["jobs"]
    assert "Replayed credential" in str(refusal(good))
    misdirected = _cred(service.sock, "/v1/show?jobid=8301")
    assert "not made for this request" in str(refusal(misdirected))
    expired = _cred(service.sock, target, ttl=1)
    time.sleep(2.5)
    assert "Expired credential" in str(refusal(expired))
    assert "armor" in str(refusal("MUNGE:not-a-credential")).lower()
    req = urllib.request.Request(f"{service.url}{target}")
    import ssl

    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(service.ca)))
    assert e.value.code == 401
    assert "no credential" in json.loads(e.value.read())["error"]


def test_a_user_whose_munged_has_another_key_gets_one_line(service: Service) -> None:
    cfg = service.site.config("client-forged", f'server = "{service.url}"\n'
                              f'server_ca = "{service.ca}"\n'
                              f'[munge]\nsocket = "{service.forger}"\n')
    proc = service.run("alice", "show", "8101", config=cfg)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("Error: the jobio service refused: MUNGE credential "
                                  "refused: ")
    assert proc.stderr.endswith("(HTTP 401)\n") and proc.stderr.count("\n") == 1


def test_the_service_down_or_untrusted_is_one_line_on_the_client(service: Service) -> None:
    down = service.site.config("client-down", f'server = "https://127.0.0.1:{free_port()}"\n'
                               f'server_ca = "{service.ca}"\n'
                               f'[munge]\nsocket = "{service.sock}"\n')
    proc = service.run("alice", "8101", config=down)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: cannot reach the jobio service at https://")
    assert proc.stderr.count("\n") == 1
    untrusted = service.site.config("client-untrusted", f'server = "{service.url}"\n'
                                    f'[munge]\nsocket = "{service.sock}"\n')
    proc = service.run("alice", "8101", config=untrusted)
    assert proc.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in proc.stderr and proc.stderr.count("\n") == 1


def test_commands_the_service_does_not_answer_say_so_in_one_line(service: Service) -> None:
    proc = service.run("alice", "top", "--once")
    assert proc.returncode == 2
    assert "does not work through the jobio service" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_uid_without_a_database_role_gets_403(service: Service) -> None:
    proc = subprocess.run([RUNUSER, "-u", "nobody", "--", str(service.site.jobio), "8101"],
                          capture_output=True, text=True, cwd="/", check=False,
                          env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(service.client)})
    assert proc.returncode == 1
    assert "no database role for nobody" in proc.stderr and "(HTTP 403)" in proc.stderr


def test_several_service_processes_share_the_port_and_still_refuse_replays(
        service: Service) -> None:
    base = service.site.dir / "service"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cfg = service.site.config("service-2", f'dsn = "{service.site.user_dsn}"\n'
                              f'[munge]\nsocket = "{service.sock}"\n'
                              f'[service]\nlisten = "127.0.0.1"\nprocesses = 2\n')
    with running_service(service.site.jobio, SERVICE_ACCOUNT, cfg, port, url, None,
                         base / "service-2.log") as proc:
        children = subprocess.run(["pgrep", "-f", "-g", str(proc.pid), "jobio serve"],
                                  capture_output=True, text=True, check=False).stdout.split()
        assert len(children) == 3  # runuser, the server and its forked sibling
        client = service.site.config("client-2", f'server = "{url}"\n'
                                     f'[munge]\nsocket = "{service.sock}"\n')
        for _ in range(4):
            shown = service.run("alice", "8101", config=client)
            assert shown.returncode == 0, shown.stderr
        target = "/v1/show?jobid=8101"
        cred = subprocess.run([RUNUSER, "-u", "alice", "--", "munge", "-S", service.sock],
                              input=request_payload("GET", target, b""), capture_output=True,
                              check=True).stdout.decode().strip()
        assert call(url, "GET", "/v1/show", [("jobid", "8101")], credential=cred)["jobs"]
        for _ in range(4):  # whichever process gets it
            with pytest.raises(ServiceError) as e:
                call(url, "GET", "/v1/show", [("jobid", "8101")], credential=cred)
            assert e.value.status == 401 and "Replayed" in str(e.value)


def test_clients_that_connect_and_say_nothing_hold_up_no_one(service: Service) -> None:
    """The TLS handshake runs in the asyncio front end under its own deadline: silent
    connections (a client stuck before its ClientHello) hold no worker, so others are
    served (tests/site/test_service_limits.py tries it with more of them)."""
    import socket

    port = int(service.url.rsplit(":", 1)[1])
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        for _ in range(3):
            doc = call(service.url, "GET", "/v1/health", munge_socket=service.sock,
                       ca_file=service.ca, timeout=5)
            assert doc["status"] == "ok"
        assert service.run("alice", "8101").returncode == 0
    finally:
        for s in silent:
            s.close()


def test_usage_table_through_the_service_is_the_local_table(service: Service) -> None:
    """The client makes the usage records again from the service's JSON: alice's table and
    attribution lines read the same through the service as from her own database role."""
    window = ["usage", "-S", "2024-04-03T08:00", "-E", "2024-04-03T11:00", "--attribution"]
    remote = service.run("alice", *window)
    local = run_as("alice", service.site.jobio, window,
                   config=service.site.config("alice-local",
                                              f'dsn = "{service.site.user_dsn}"\n'))
    assert remote.returncode == 0, remote.stderr
    assert local.returncode == 0, local.stderr
    assert "by id class:" in remote.stdout and "where the I/O went" in remote.stdout
    assert remote.stdout == local.stdout


def test_an_answer_says_where_its_service_time_went(service: Service) -> None:
    """Server-Timing: `app` for every answer; an authenticated one adds its parts, `prep`
    (credential, until queued), `wait` (in the uid's fair queue) and `run` (in a worker),
    which add up to `app` (docs/service.md)."""
    import ssl

    target = "/v1/show?jobid=8101"
    good = subprocess.run(
        [RUNUSER, "-u", "alice", "--", "munge", "-S", service.sock],
        input=request_payload("GET", target, b""), capture_output=True, check=True,
    ).stdout.decode().strip()
    context = ssl.create_default_context(cafile=str(service.ca))
    req = urllib.request.Request(f"{service.url}{target}",
                                 headers={"Authorization": f"MUNGE {good}"})
    with urllib.request.urlopen(req, context=context) as resp:
        assert json.loads(resp.read())["jobs"]
        timing = resp.headers["Server-Timing"]
    parts = dict(m.strip().split(";dur=") for m in timing.split(","))
    assert list(parts) == ["app", "prep", "wait", "run"], timing
    ms = {k: float(v) for k, v in parts.items()}
    assert all(v >= 0 for v in ms.values()), timing
    assert abs(ms["prep"] + ms["wait"] + ms["run"] - ms["app"]) < 0.05, timing
    with pytest.raises(urllib.error.HTTPError) as e:  # refused before any queue: app alone
        urllib.request.urlopen(urllib.request.Request(f"{service.url}{target}"),
                               context=context)
    assert e.value.code == 401
    assert e.value.headers["Server-Timing"].startswith("app;dur=")
    assert "," not in e.value.headers["Server-Timing"]
