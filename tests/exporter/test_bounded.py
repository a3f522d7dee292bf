"""The exporter's door (slurm_io/exporter/bounded.py) against silent, trickling, big-header and
crowding clients on loopback, while Prometheus-like scrapes go on: the installed `jobio
exporter` on a real database, with its shipped limits, bounded in count and time. Outcomes are
asserted (served, refused, cut), never durations. prometheus_client's own server, used before
issue 18, keeps every one of these connections open.

Each attacker connects from its own loopback address (127.0.0.2 ...) so that the per-address
cap is seen apart from the total one; the honest scraper comes from 127.0.0.1.
"""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator

import pytest

from slurm_io.exporter import bounded
from tests.exporter.test_exporter import started_exporter

LIMITS = bounded.LIMITS
WAIT = LIMITS.head_deadline + 10  # how long a test waits for an outcome (not a figure asserted)


@pytest.fixture()
def exporter(db_dsn: str) -> Iterator[int]:
    with started_exporter(db_dsn) as (port, _proc, _last):
        yield port


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT) as r:
        return r.read().decode()


def _connect(port: int, source: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT,
                                 source_address=(source, 0))
    return s


def _closed_by_server(s: socket.socket, within: float = WAIT) -> bool:
    """Whether the server closes `s` (EOF or reset) before `within` seconds pass."""
    s.settimeout(within)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _still_open(s: socket.socket) -> bool:
    """Whether the server has neither closed nor answered `s` yet (asked without waiting)."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)
        s.settimeout(WAIT)


def test_silent_clients_are_capped_per_address_and_cut_at_the_head_deadline(exporter):
    port = exporter
    held = [_connect(port, "127.0.0.2") for _ in range(LIMITS.max_per_peer)]
    extra = _connect(port, "127.0.0.2")  # one more from the same address: closed at once,
    assert _closed_by_server(extra, LIMITS.head_deadline / 2)  # not by the head's deadline
    assert all(_still_open(s) for s in held)
    assert "jobio_up 1.0" in _scrape(port)  # another address is served meanwhile
    for s in held:  # nothing sent: the head deadline cuts them
        assert _closed_by_server(s)
        s.close()
    extra.close()
    assert "jobio_up 1.0" in _scrape(port)


def test_a_trickling_client_is_cut_although_every_read_brings_a_byte(exporter):
    port = exporter
    s = _connect(port, "127.0.0.3")
    head = b"GET /metrics HTTP/1.0\r\n" + b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"
    cut = False
    for i in range(len(head)):  # one byte every 0.1 s: 23 s for the head, were it let
        try:
            s.sendall(head[i:i + 1])
        except OSError:
            cut = True
            break
        if not _still_open(s):
            cut = True
            break
        time.sleep(0.1)
    assert cut, "the server waited for the whole trickled head"
    s.close()
    assert "jobio_up 1.0" in _scrape(port)


def test_a_huge_request_head_is_not_read_past_the_cap(exporter):
    """Header lines of 60 KB each, 200 of them (12 MB): http.server reads 100 of them (6 MB)
    before it answers 431. The bounded door stops reading at its 16 KiB cap, so what the
    client manages to send is what the kernel buffers take (a few hundred KB here), then the
    connection is shut."""
    port = exporter
    s = _connect(port, "127.0.0.4")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)
    s.settimeout(5)
    line = b"X-Big: " + b"b" * 60_000 + b"\r\n"
    sent = 0
    try:
        s.sendall(b"GET /metrics HTTP/1.0\r\n")
        for _ in range(200):
            s.sendall(line)
            sent += len(line)
    except OSError:  # reset by the server, or blocked: it reads no more either way
        pass
    assert sent < 2_000_000, f"the server read {sent} bytes of request head"
    assert _closed_by_server(s)
    s.close()
    small = _connect(port, "127.0.0.4")  # a head just over the cap: one 431 line
    small.sendall(b"GET /metrics HTTP/1.0\r\nX-Big: " + b"c" * (LIMITS.head_max + 10)
                  + b"\r\n\r\n")
    small.settimeout(WAIT)
    answer = b""
    try:
        while chunk := small.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    small.close()
    assert answer.startswith(b"HTTP/1.0 431 "), answer[:200]
    assert "jobio_up 1.0" in _scrape(port)


def test_when_every_slot_is_taken_the_longest_silent_connection_makes_room(exporter):
    """128 silent connections from 32 addresses hold every slot: a scrape from another
    address still gets in, in the place of the connection that waited longest for its head;
    the others stay until their own deadline."""
    port = exporter
    crowd = [_connect(port, f"127.0.0.{10 + i // LIMITS.max_per_peer}")
             for i in range(LIMITS.max_connections)]
    time.sleep(0.5)  # every one of them accepted and waiting (the order matters, not the time)
    assert "jobio_up 1.0" in _scrape(port)  # served although every slot was taken
    assert _closed_by_server(crowd[0], LIMITS.head_deadline / 2)  # the oldest made room
    assert sum(_still_open(s) for s in crowd[1:]) == LIMITS.max_connections - 1
    for s in crowd:
        s.close()
    assert "jobio_up 1.0" in _scrape(port)
