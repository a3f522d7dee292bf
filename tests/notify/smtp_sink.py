"""A real SMTP server for tests: aiosmtpd on 127.0.0.1, a random free port, in a thread of
the test process. It keeps what it accepted and can refuse on command (550/451 at RCPT or
at the end of DATA), or run a callback when a message's final "." arrives (to stop or kill
the reporter exactly between the server's acceptance and the reporter's bookkeeping)."""

from __future__ import annotations

import email
import email.policy
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    @property
    def job(self) -> int:
        return int(self.message["X-Jobio-Job"])


@dataclass
class Sink:
    """The handler: accepted messages, and knobs the tests turn."""

    received: list[Received] = field(default_factory=list)
    rcpt_reply: str | None = None  # e.g. "550 5.1.1 no such user"
    data_reply: str | None = None  # e.g. "451 4.3.0 try again later"
    on_data: Callable[[Received], None] | None = None  # after accepting, before replying
    refused: int = 0  # transactions refused
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        if self.rcpt_reply:
            with self.lock:
                self.refused += 1
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.data_reply:
            with self.lock:
                self.refused += 1
            return self.data_reply
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        got = Received(envelope.mail_from, list(envelope.rcpt_tos), msg)  # type: ignore[arg-type]
        with self.lock:
            self.received.append(got)
        if self.on_data is not None:
            self.on_data(got)
        return "250 2.0.0 queued as test"

    def by_job(self) -> dict[int, list[Received]]:
        out: dict[int, list[Received]] = {}
        with self.lock:
            for r in self.received:
                out.setdefault(r.job, []).append(r)
        return out

    def wait_for(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.received) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.received)} message(s) received, wanted {n}")
            time.sleep(0.05)


class _AnyPortController(Controller):
    """aiosmtpd's Controller on port 0: the kernel's free port, read back after binding."""

    def _trigger_server(self) -> None:
        assert self.server is not None
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


@contextmanager
def smtp_server() -> Iterator[tuple[Sink, int]]:
    sink = Sink()
    controller = _AnyPortController(sink, hostname="127.0.0.1", port=0)
    controller.start()
    try:
        yield sink, controller.port
    finally:
        controller.stop()
