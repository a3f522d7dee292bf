"""The service's front end: asyncio reads every request whole, under deadlines and caps,
before a worker thread sees it.

Why this shape (issue 18): under cheroot a connection held a worker thread from its first
byte, its timeout was per read, and the TLS handshake ran in the worker, so 16 connections
sending one byte every 5 s (or nothing) stalled every user, and a 100 MB header was read
whole. Here a connection costs a coroutine and its buffers until it has sent a complete
request: the TLS handshake has one deadline (`handshake_timeout`), the whole request head
and body another (`head_timeout`, from the first byte, and from the accept for the first
request), h11 refuses a head over `max_head` bytes, a line over `max_line` is refused, one
address holds at most `max_per_peer` connections and all connections that have not yet sent
an accepted credential at most `max_unauthenticated`. A complete request is routed, parsed
and authenticated (munged, a few small threads), then queued per uid in a FairPool whose
workers run the app (app.py) with their own database connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import h11

from slurm_io.config import Config
from slurm_io.service.app import (
    STATUS_TEXT,
    Incoming,
    Prepared,
    ServiceApp,
    log_text,
    refusal,
)
from slurm_io.service.fair import Busy, FairPool

log = logging.getLogger(__name__)
MAX_BODY = 65536
SMALL_ANSWER = 1 << 20  # bytes of an answer written in one piece with its head
CLOSE_GRACE = 2.0  # seconds an answer has to leave a closed connection
AUTH_THREADS = 4  # munged decodes take ~0.1-1 ms; a few threads keep them off the loop


class Closed(Exception):
    """The connection is to be closed, after `answer` (status, message) when given."""

    def __init__(self, answer: tuple[int, str] | None = None) -> None:
        super().__init__(answer)
        self.answer = answer


class Front:
    def __init__(self, cfg: Config, app: ServiceApp, tls: ssl.SSLContext | None) -> None:
        self.cfg, self.app, self.tls = cfg, app, tls
        self.per_peer: Counter[str] = Counter()
        self.unauthenticated = 0
        self.auth_pool = ThreadPoolExecutor(AUTH_THREADS, thread_name_prefix="jobio-auth")
        self.pool = FairPool(cfg.service_threads, max_queued=cfg.service_max_queued,
                             max_running=cfg.service_max_running)

    async def serve(self, host: str, port: int, *, reuse_port: bool,
                    stop: asyncio.Event) -> None:
        server = await asyncio.start_server(self.connection, host, port, backlog=128,
                                            reuse_port=reuse_port or None,
                                            limit=self.cfg.service_max_head)
        async with server:
            await stop.wait()
        self.pool.stop()
        self.auth_pool.shutdown(wait=False, cancel_futures=True)

    async def connection(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        peer = str((writer.get_extra_info("peername") or ("?",))[0])
        if (self.per_peer[peer] >= self.cfg.service_max_per_peer
                or self.unauthenticated >= self.cfg.service_max_unauthenticated):
            writer.transport.abort()  # before TLS: costs the service nothing more
            return
        self.per_peer[peer] += 1
        self.unauthenticated += 1
        graceful = False
        state = {"authenticated": False, "open": True}

        def accepted() -> None:  # on the loop, when a credential of this connection passed
            if state["open"] and not state["authenticated"]:
                state["authenticated"] = True
                self.unauthenticated -= 1
        raw = writer.transport  # the TCP transport, under TLS once started
        loop = asyncio.get_running_loop()
        try:
            deadline = loop.time() + self.cfg.service_head_timeout
            if self.tls is not None:
                async with asyncio.timeout(self.cfg.service_handshake_timeout):
                    await writer.start_tls(self.tls)
            conn = h11.Connection(h11.SERVER,
                                  max_incomplete_event_size=self.cfg.service_max_head)
            while True:
                try:
                    incoming = await self.read_request(reader, conn, deadline)
                except Closed as e:
                    if e.answer is not None:
                        log.info("%s: %d %s", log_text(peer, 60), *e.answer)
                        await self.send_error(writer, conn, *e.answer)
                        await linger(reader)
                    graceful = True
                    return
                status, body, ms, split = await self.answer(incoming, accepted)
                if not await self.send(writer, conn, status, body, ms, split,
                                       head_only=incoming.method == "HEAD"):
                    graceful = True
                    return
                deadline = None  # the next head has head_timeout from its first byte
        except (TimeoutError, OSError, ssl.SSLError, h11.LocalProtocolError):
            return
        except Exception:  # a bug: logged once, the connection closed, the service goes on
            log.exception("connection from %s failed", log_text(peer, 60))
        finally:
            state["open"] = False
            self.per_peer[peer] -= 1
            if not self.per_peer[peer]:
                del self.per_peer[peer]
            if not state["authenticated"]:
                self.unauthenticated -= 1
            close(raw, writer, graceful, loop)

    async def read_request(self, reader: asyncio.StreamReader, conn: h11.Connection,
                           deadline: float | None) -> Incoming:
        """The next complete request on `conn`, or Closed (with the answer to send)."""
        loop = asyncio.get_running_loop()
        head: h11.Request | None = None
        body = bytearray()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as e:
                status = e.error_status_hint if e.error_status_hint != 400 else 400
                raise Closed((status, f"bad request: {log_text(str(e), 100)}")) from None
            if event is h11.NEED_DATA:
                if deadline is None:  # keep-alive: wait for the next request's first byte
                    async with asyncio.timeout(self.cfg.service_idle_timeout):
                        data = await reader.read(65536)
                    deadline = loop.time() + self.cfg.service_head_timeout
                else:
                    late = Closed((408, "the request took too long") if conn.their_state
                                  is not h11.IDLE else None)
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        raise late
                    try:
                        async with asyncio.timeout(remaining):
                            data = await reader.read(65536)
                    except TimeoutError:
                        raise late from None
                conn.receive_data(data)
                if not data and conn.their_state is h11.IDLE:
                    raise Closed()
                continue
            if isinstance(event, h11.Request):
                head = event
                self.check_lines(event)
                length = dict(event.headers).get(b"content-length", b"0")
                if length.isdigit() and int(length) > MAX_BODY:
                    raise Closed((413, f"body over {MAX_BODY} bytes"))
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY:
                    raise Closed((413, f"body over {MAX_BODY} bytes"))
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                return incoming(head, bytes(body))
            elif isinstance(event, h11.ConnectionClosed | h11.PAUSED):
                raise Closed()

    def check_lines(self, head: h11.Request) -> None:
        limit = self.cfg.service_max_line
        if len(head.target) > limit:
            raise Closed((414, f"request target over {limit} bytes"))
        for name, value in head.headers:
            if len(name) + len(value) + 2 > limit:
                raise Closed((431, f"a header line over {limit} bytes"))

    async def answer(self, incoming: Incoming, accepted: Callable[[], None]
                     ) -> tuple[int, bytes, float, str]:
        """(status, body, ms, Server-Timing's parts) of a complete request.

        An auth thread prepares it (route, parameters, credential) and queues it in the uid's
        fair turn itself; the loop hears only the answer. Why: under 50 clients the loop is
        the busiest thread (py-spy: 80 % of the GIL), and a hop back to it between the
        credential and the queue delayed every request's turn by the loop's backlog. The
        parts: `prep` until queued, `wait` in the uid's queue, `run` in the worker."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[int, bytes, float, str]] = loop.create_future()

        def to_loop(fn: Callable[..., None], *args: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the service stops
                loop.call_soon_threadsafe(fn, *args)

        def settle(result: tuple[int, bytes, float, str]) -> None:
            if not done.done():
                done.set_result(result)

        def fail(e: BaseException) -> None:
            if not done.done():
                done.set_exception(e)

        def admit() -> None:  # in an auth thread
            try:
                prepared = self.app.prepare(incoming)
                if prepared.uid is None:
                    to_loop(settle, (*self.app.answer(prepared), ""))
                    return
                to_loop(accepted)
                queue(prepared)
            except BaseException as e:  # handed to the connection, which logs a bug
                to_loop(fail, e)

        def queue(prepared: Prepared) -> None:
            queued = time.perf_counter()

            def work() -> tuple[float, tuple[int, bytes, float]]:
                started = time.perf_counter()
                return started, self.app.answer(prepared)

            def finished(fut: Future[tuple[float, tuple[int, bytes, float]]]) -> None:
                try:
                    started, (status, body, ms) = fut.result()
                except BaseException as e:  # the same
                    to_loop(fail, e)
                    return
                prep, wait = 1000 * (queued - prepared.t0), 1000 * (started - queued)
                to_loop(settle, (status, body, ms, f", prep;dur={prep:.2f}, wait;dur="
                                 f"{wait:.2f}, run;dur={ms - prep - wait:.2f}"))

            try:
                self.pool.submit(prepared.uid, work).add_done_callback(finished)
            except Busy as e:
                to_loop(settle, (503, json.dumps(refusal(503, f"too busy: {e}")).encode(),
                                 0.0, ""))

        self.auth_pool.submit(admit)
        return await done

    async def send(self, writer: asyncio.StreamWriter, conn: h11.Connection, status: int,
                   body: bytes, ms: float, split: str = "", *, head_only: bool = False
                   ) -> bool:
        """Write one answer; whether the connection may carry another request."""
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                   ("Server-Timing", f"app;dur={ms:.2f}{split}")]
        out = [conn.send(h11.Response(status_code=status, headers=headers,
                                      reason=STATUS_TEXT.get(status, "").encode()))]
        if not head_only:  # HEAD: the GET's Content-Length, no body
            out.append(conn.send(h11.Data(data=body)))
        out.append(conn.send(h11.EndOfMessage()))
        # a usual answer in one write: each write is a pass through asyncio's TLS layer
        # (Python), a TLS record and a send(); a big one is not copied once more for that
        for chunk in [b"".join(out)] if len(body) <= SMALL_ANSWER else out:
            writer.write(chunk)
        async with asyncio.timeout(self.cfg.service_idle_timeout):
            await writer.drain()
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            return True
        return False

    async def send_error(self, writer: asyncio.StreamWriter, conn: h11.Connection,
                         status: int, message: str) -> None:
        body = json.dumps(refusal(status, message), sort_keys=True).encode()
        with contextlib.suppress(h11.LocalProtocolError, TimeoutError, OSError):
            if conn.our_state is h11.IDLE or conn.our_state is h11.SEND_RESPONSE:
                writer.write(conn.send(h11.Response(
                    status_code=status, reason=STATUS_TEXT.get(status, "").encode(),
                    headers=[("Content-Type", "application/json"),
                             ("Content-Length", str(len(body))), ("Connection", "close")])))
                writer.write(conn.send(h11.Data(data=body)))
                writer.write(conn.send(h11.EndOfMessage()))
                async with asyncio.timeout(1):
                    await writer.drain()


async def linger(reader: asyncio.StreamReader) -> None:
    """Read and drop what the client still sends (at most 1 s, 2 MiB) before closing, so
    that the kernel does not reset the connection, and the refusal with it, while unread
    data waits (a "lingering close", as nginx does)."""
    with contextlib.suppress(TimeoutError, OSError, ssl.SSLError):
        async with asyncio.timeout(1):
            n = 0
            while n < 2 << 20 and (chunk := await reader.read(65536)):
                n += len(chunk)


def close(raw: asyncio.BaseTransport, writer: asyncio.StreamWriter, graceful: bool,
          loop: asyncio.AbstractEventLoop) -> None:
    """Close a connection without reading from it any more.

    Why: a TLS transport's graceful close waits up to 30 s for the peer's close_notify and
    meanwhile buffers everything the peer sends, unbounded (asyncio's sslproto): four
    connections streaming a header took the service to 350 MB that way. Here reading stops,
    what was written has `CLOSE_GRACE` s to leave, then the socket is aborted. A connection
    that broke a deadline or failed is aborted at once."""
    with contextlib.suppress(OSError, RuntimeError, AttributeError):
        if not graceful:
            writer.transport.abort()
            raw.abort()
            return
        if isinstance(raw, asyncio.ReadTransport):
            raw.pause_reading()
        writer.close()
        loop.call_later(CLOSE_GRACE, raw.abort)


def incoming(head: h11.Request, body: bytes) -> Incoming:
    """The request's fields as the app reads them (latin-1 keeps every byte as sent)."""
    target = head.target.decode("latin-1")
    raw_path, _, query = target.partition("?")
    path = urllib.parse.unquote(raw_path, encoding="utf-8", errors="surrogateescape")
    auth = next((v.decode("latin-1") for n, v in head.headers if n == b"authorization"),
                None)
    return Incoming(head.method.decode("latin-1"), path, query, target, auth, body)


def tls_context(cfg: Config) -> ssl.SSLContext | None:
    if cfg.service_tls_cert is None:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cfg.service_tls_cert), str(cfg.service_tls_key
                                                       or cfg.service_tls_cert))
    # no TLS 1.3 session tickets: each `jobio` is a new process that cannot resume a
    # session, and making two tickets per handshake was ~20 % of its CPU
    ctx.num_tickets = 0
    return ctx


def run(cfg: Config, app: ServiceApp, *, reuse_port: bool) -> None:
    """Serve until SIGTERM or SIGINT."""
    import signal

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        front = Front(cfg, app, tls_context(cfg))
        await front.serve(cfg.service_listen, cfg.service_port, reuse_port=reuse_port,
                          stop=stop)

    asyncio.run(main())
