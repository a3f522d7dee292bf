"""The exporter's HTTP door, bounded: whoever reaches its port (anyone on the network when
`exporter.listen` is not loopback) costs it a bounded amount of time, memory and threads.

prometheus_client's own `start_http_server` is a thread per connection with no socket
timeout: a client that connects and says nothing holds a thread for ever, a few thousand such
connections hold a few thousand threads, and a request head may be read up to 100 lines of
64 KiB each. Here, on the same WSGI application:

- a **deadline for the request head** (10 s from accept, not per read: one byte every few
  seconds does not keep it alive) and one for the **whole exchange** (60 s, a client that
  never reads the answer): the socket is shut down when it passes;
- at most 16 KiB are ever read from a connection (a scrape is a GET without a body);
- at most 4 connections from one address (one more is closed at once, before a thread is
  started for it or a byte read) and 128 in all: when all are taken, a new connection takes
  the slot of the one that has waited longest for its head (an honest scrape sends its head
  at once), so that many addresses holding silent connections never lock Prometheus out.
  One thread watches every deadline.

(`Limits` holds these; a test passes shorter ones.)

Prometheus scrapes one target with one connection at a time, so the caps never meet it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer


@dataclass(frozen=True)
class Limits:
    """The bounds of the door (docs/exporter.md, docs/security.md)."""

    head_deadline: float = 10.0  # seconds from accept to the end of the request head
    exchange_deadline: float = 60.0  # seconds from accept to the last byte of the answer
    head_max: int = 16 * 1024  # bytes read from one connection, at most
    max_connections: int = 128
    max_per_peer: int = 4


LIMITS = Limits()
log = logging.getLogger("slurm_io.exporter")
REAP_EVERY = 0.25  # seconds between two looks at the deadlines


class _CappedReader:
    """A file's readline/read that give EOF once `cap` bytes have been read in all."""

    def __init__(self, raw: Any, cap: int) -> None:
        self.raw, self.left = raw, cap

    def readline(self, size: int = -1) -> bytes:
        n = self.left if size is None or size < 0 else min(size, self.left)
        data: bytes = self.raw.readline(n) if n > 0 else b""
        self.left -= len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        n = self.left if size is None or size < 0 else min(size, self.left)
        data: bytes = self.raw.read(n) if n > 0 else b""
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.raw.close()


def _cut(sock: socket.socket) -> None:
    """Stop a connection whose deadline passed: its blocked read or write returns at once."""
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


class _Handler(WSGIRequestHandler):
    """One request per connection (HTTP/1.0), within the deadlines and the byte cap."""

    server: BoundedServer

    def setup(self) -> None:
        lim = self.server.limits
        self.timeout = lim.head_deadline  # per read too: no read outlives the head's deadline
        super().setup()
        self.rfile = _CappedReader(self.rfile, lim.head_max)  # type: ignore[assignment]
        self._accepted = time.monotonic()
        self.server.watch(self.connection, self._accepted + lim.head_deadline)

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok and self.rfile.left <= 0:  # type: ignore[attr-defined]  # the cap, not the end
            self.send_error(431, "Request Header Fields Too Large")
            return False
        if ok:  # the head is in: the scrape may take its time, up to the exchange's deadline
            lim = self.server.limits
            self.server.head_done(self.connection)
            self.server.watch(self.connection, self._accepted + lim.exchange_deadline)
            self.connection.settimeout(lim.exchange_deadline)
        return ok

    def finish(self) -> None:
        self.server.unwatch(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent, like prometheus_client's own handler: a scrape is not news."""


class _Conn:
    """A connection being served: where from, since when, whether its head is still due."""

    __slots__ = ("accepted", "in_head", "peer")

    def __init__(self, peer: str, accepted: float) -> None:
        self.peer, self.accepted, self.in_head = peer, accepted, True


class BoundedServer(ThreadingMixIn, WSGIServer):
    """A thread per connection, never more than `limits.max_per_peer` from one address and
    `limits.max_connections` in all. When all are taken, a new connection takes the slot of
    the connection that has waited longest for its request head (an honest scrape sends its
    head at once, so it is never that one); with no such connection it is closed."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # the listen backlog (socketserver's default is 5)
    limits = LIMITS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conns: dict[Any, _Conn] = {}
        self._lock = threading.Lock()
        self._deadlines: dict[socket.socket, float] = {}
        self._closing = threading.Event()
        super().__init__(*args, **kwargs)
        # one thread cuts every connection past its deadline (not a timer per connection)
        threading.Thread(target=self._reap, name="exporter-deadlines", daemon=True).start()

    def watch(self, sock: socket.socket, deadline: float) -> None:
        with self._lock:
            self._deadlines[sock] = deadline

    def unwatch(self, sock: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(sock, None)

    def head_done(self, sock: socket.socket) -> None:
        with self._lock:
            c = self._conns.get(sock)
            if c is not None:
                c.in_head = False

    def _reap(self) -> None:
        while not self._closing.wait(REAP_EVERY):
            now = time.monotonic()
            with self._lock:
                late = [s for s, t in self._deadlines.items() if t <= now]
                for s in late:
                    del self._deadlines[s]
            for s in late:
                _cut(s)

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()

    def process_request(self, request: Any, client_address: Any) -> None:
        peer = str(client_address[0])
        victim = None
        with self._lock:
            mine = sum(1 for c in self._conns.values() if c.peer == peer)
            ok = mine < self.limits.max_per_peer
            if ok and len(self._conns) >= self.limits.max_connections:
                waiting = [(c.accepted, i, s) for i, (s, c) in enumerate(self._conns.items())
                           if c.in_head]
                if waiting:
                    victim = min(waiting)[2]
                    del self._conns[victim]  # its slot is this connection's from now on
                    self._deadlines.pop(victim, None)
                else:
                    ok = False
            if ok:
                self._conns[request] = _Conn(peer, time.monotonic())
        if victim is not None:
            _cut(victim)
        if not ok:
            self.shutdown_request(request)  # refused before any thread or read
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: Any) -> None:
        with self._lock:
            self._conns.pop(request, None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection cut at its deadline, or reset by its client, is no news; anything
        else is one line in the log, never a traceback on stderr per connection."""
        import sys

        e = sys.exc_info()[1]
        if not isinstance(e, OSError):
            log.warning("exporter: %s from %s: %s", type(e).__name__, client_address[0], e)

    def connections(self) -> int:
        """Connections being served now (for tests and the log)."""
        with self._lock:
            return len(self._conns)


def start(app: Callable[..., Any], host: str, port: int, limits: Limits = LIMITS
          ) -> tuple[BoundedServer, threading.Thread]:
    """Serve the WSGI `app` on host:port (IPv4 or IPv6) in a daemon thread."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

    class _Server(BoundedServer):
        address_family = family

    _Server.limits = limits

    httpd = _Server((host, port), _Handler)
    httpd.set_app(app)
    t = threading.Thread(target=httpd.serve_forever, name="exporter-http", daemon=True)
    t.start()
    return httpd, t
