"""Issue 18, the read service's doors: each finding as the attack that showed it, against a
real `jobio serve` (TLS, private munged, the installed client run as alice, bob and carol).

The service runs with 4 worker threads and tight deadlines (tests/site/hostile.py LIMITS) so
that every attack is bounded to a few seconds and a few dozen loopback connections. Times are
compared with each other (the honest answer came before the attackers were cut), never with
a fixed bound.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from slurm_io.client.http import ServiceError, call
from tests.site.conftest import Site
from tests.site.hostile import (
    LIMITS,
    HostileSite,
    hostile_site,
    raw_request,
    silent,
    status_of,
    trickle,
)

pytestmark = [pytest.mark.pg]
THREADS = int(LIMITS["threads"])


@pytest.fixture(scope="module")
def svc(site: Site) -> Iterator[HostileSite]:
    with hostile_site(site, "limits") as h:
        yield h


def _attack(n: int, fn: Callable[[], float]) -> tuple[list[threading.Thread], list[float]]:
    ends: list[float] = []
    threads = [threading.Thread(target=lambda: ends.append(fn())) for _ in range(n)]
    for t in threads:
        t.start()
    return threads, ends


def _honest_while(svc: HostileSite, threads: list[threading.Thread], ends: list[float]
                  ) -> float:
    time.sleep(0.5)  # the attackers hold their connections
    shown = svc.run("alice", "8101", "--json")
    done = time.monotonic()
    for t in threads:
        t.join()
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)[0]["jobid"] == "8101"
    return done


def test_trickling_connections_hold_up_no_one_and_are_cut(svc: HostileSite) -> None:
    """Finding 1: 2 x threads connections sending a header byte every 0.25 s held every
    worker (cheroot's timeout is per read); alice's `jobio 8101` waited for all of them."""
    until = time.monotonic() + 12
    line = b"GET /v1/show?jobid=8101 HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 64
    threads, ends = _attack(2 * THREADS, lambda: trickle(svc, line, 0.25, until))
    done = _honest_while(svc, threads, ends)
    assert done < min(ends), "alice was answered only after the trickling clients ended"
    assert max(ends) < until, "a trickling connection was never cut"


def test_silent_connections_hold_up_no_one_and_are_cut(svc: HostileSite) -> None:
    """Finding 1: connections that send nothing (not even a TLS hello) held workers."""
    until = time.monotonic() + 12
    threads, ends = _attack(2 * THREADS, lambda: silent(svc, until))
    done = _honest_while(svc, threads, ends)
    assert done < min(ends), "alice was answered only after the silent clients ended"
    assert max(ends) < until, "a silent connection was never cut"


def test_a_big_header_is_refused_before_it_is_read_whole(svc: HostileSite) -> None:
    """Finding 2: a 100 MB header was read whole, before authentication. Here 1 MiB: the
    service answers 431 after its head cap and closes."""
    head = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"
    answer = raw_request(svc, head)
    assert status_of(answer) == 431, answer[:200]
    long_line = b"GET /v1/health?" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert status_of(raw_request(svc, long_line)) == 414
    many = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 20000 + b"\r\n"
    assert status_of(raw_request(svc, many)) == 431
    body = b"POST /v1/mail HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n" + b"a" * 70000
    assert status_of(raw_request(svc, body)) == 413


def test_connections_from_one_address_are_capped(svc: HostileSite) -> None:
    """No cap per peer before: one address could hold every file descriptor."""
    import socket

    cap = int(LIMITS["max_per_peer"])
    held = [socket.create_connection(("127.0.0.1", svc.port)) for _ in range(cap)]
    try:
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", svc.port), timeout=5) as extra:
            assert extra.recv(1) == b"", "a connection over the cap was kept"
    finally:
        for s in held:
            s.close()
    time.sleep(0.3)
    assert svc.run("alice", "8101").returncode == 0  # the address is served again


def test_unauthenticated_connections_are_capped_in_all(svc: HostileSite) -> None:
    """Connections from many addresses (here 127.0.0.2-5) that send no credential: at most
    `max_unauthenticated` are held, whatever their addresses."""
    import socket

    per_peer, cap = int(LIMITS["max_per_peer"]), int(LIMITS["max_unauthenticated"])
    held = []
    try:
        for i in range(cap):
            s = socket.socket()
            held.append(s)
            s.bind((f"127.0.0.{2 + i // per_peer}", 0))
            s.connect(("127.0.0.1", svc.port))
        time.sleep(0.3)
        with socket.socket() as extra:
            extra.bind((f"127.0.0.{3 + cap // per_peer}", 0))
            extra.settimeout(5)
            extra.connect(("127.0.0.1", svc.port))
            assert extra.recv(1) == b"", "a connection over the cap was kept"
    finally:
        for s in held:
            s.close()
    time.sleep(0.3)
    assert svc.run("alice", "8101").returncode == 0


def test_ids_per_request_are_capped_and_deduplicated(svc: HostileSite) -> None:
    """Finding 3: 50,000 copies of jobid= cost 44 s of CPU: copies count once, and more
    distinct ids than `max_ids` are one 400."""
    params = [("jobid", "8101")] * 1000
    target = "/v1/show?" + "&".join("jobid=8101" for _ in range(1000))
    cred = svc.mint("alice", "GET", target)[0]
    doc = call(svc.url, "GET", "/v1/show", params, ca_file=svc.ca, credential=cred)
    assert [j["jobid"] for j in doc["jobs"]] == ["8101"]
    many = [("jobid", str(100000 + i)) for i in range(int(LIMITS["max_ids"]) + 1)]
    target = "/v1/show?" + "&".join(f"jobid={v}" for _, v in many)
    with pytest.raises(ServiceError) as e:
        call(svc.url, "GET", "/v1/show", many, ca_file=svc.ca,
             credential=svc.mint("alice", "GET", target)[0])
    assert e.value.status == 400 and "at most 256" in str(e.value)


BAD = [  # finding 6: each was a 500 (or a 200 for a uid that does not exist)
    ("GET", "/v1/show", [("jobid", str(2**63))], "not a job id"),
    ("GET", "/v1/show", [("jobid", "1\n")], "not a job id"),
    ("GET", "/v1/show", [("jobid", "8101"), ("clusters", "a\x00b")], "clusters: not a name"),
    ("GET", "/v1/show", [("user", "ali\x00ce")], "user: not a name"),
    ("GET", "/v1/show", [("user", "alice"), ("start", "nan")], "start: not a number"),
    ("GET", "/v1/show", [("user", "alice"), ("end", "inf")], "end: not a number"),
    ("GET", "/v1/show", [("user", "alice"), ("start", "1e18")], "start: not a number"),
    ("GET", "/v1/usage", [("start", "nan")], "start: not a number"),
    ("GET", "/v1/report", [("jobid", "8101\n")], "not a job id"),
    ("POST", "/v1/mail", [("enabled", "false"), ("user", "99999999999999999999")],
     "not a uid"),
    ("GET", "/v1/mail", [("user", "99999999999999999999")], "not a uid"),
    ("GET", "/v1/mail", [("user", "4000000000")], "no such user"),
]


@pytest.mark.parametrize(("method", "path", "params", "words"), BAD,
                         ids=[f"{m} {p} {q!r}" for m, p, q, _ in BAD])
def test_bad_parameters_are_one_400_line(svc: HostileSite, method: str, path: str,
                                         params: list[tuple[str, str]], words: str) -> None:
    import urllib.parse

    target = f"{path}?{urllib.parse.urlencode(params)}"
    with pytest.raises(ServiceError) as e:
        call(svc.url, method, path, params, ca_file=svc.ca,
             credential=svc.mint("alice", method, target)[0])
    assert e.value.status == 400, str(e.value)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_path_cannot_write_a_line_into_the_log(svc: HostileSite) -> None:
    """Finding 7: the decoded path was logged raw, so `%0A` forged a log line."""
    forged = "2026-01-01 00:00:00,000 INFO slurm_io.service.app: GET /v1/show uid=0 200"
    path = "/v1/x%0A" + forged.replace(" ", "%20") + "%0D%0Aend"
    answer = raw_request(svc, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert status_of(answer) == 404
    time.sleep(0.3)
    lines = svc.log.read_text(errors="replace").splitlines()
    assert any("/v1/x\\x0a2026-01-01" in ln for ln in lines), lines[-5:]
    assert not any(ln.startswith("2026-01-01 00:00:00,000") for ln in lines)


def test_mail_status_of_another_user_is_refused_not_not_set(svc: HostileSite) -> None:
    """Finding 8: alice asking bob's choice through the service got "not set" where bob had
    chosen "off": row-level security hid the row. Refused like `mail off --user bob`."""
    assert svc.run("bob", "mail", "off").returncode == 0
    try:
        status = svc.run("alice", "mail", "status", "--user", "bob")
        assert status.returncode == 1, status.stdout
        assert status.stderr.count("\n") == 1
        assert "the database refused: you may read your own choice only" in status.stderr
        off = svc.run("alice", "mail", "off", "--user", "bob")
        assert off.returncode == 1 and "the database refused: you may change your own " \
            "choice only" in off.stderr
        admin = svc.run("carol", "mail", "status", "--user", "bob")
        assert admin.returncode == 0, admin.stderr
        assert "mails:   off" in admin.stdout
        own = svc.run("alice", "mail", "status", "--user", "alice")
        assert own.returncode == 0 and "user:    alice" in own.stdout
    finally:
        assert svc.run("bob", "mail", "on").returncode == 0
