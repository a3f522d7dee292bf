"""A thread pool that shares its workers fairly between uids.

Why: the service's workers each hold a database connection and run attribution (Python,
under the GIL). With one first-come queue, a user who sends a thousand requests at once
puts every other user's `jobio JOBID` behind all of them. Here each uid has its own queue
(at most `max_queued` waiting: more is refused at once, 503) and the workers take the uids
in turn; one uid runs at most `max_running` requests at a time, so with W workers and at
most W // max_running - 1 busy uids a newcomer's request starts at once, and in any case it
waits for at most one request of each other uid that has work (round robin).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any


class Busy(Exception):
    """The uid already has `max_queued` requests waiting."""


class FairPool:
    def __init__(self, workers: int, *, max_queued: int, max_running: int,
                 name: str = "jobio-worker") -> None:
        self.max_queued, self.max_running = max_queued, max(1, max_running)
        self._queues: dict[Hashable, deque[tuple[Future[Any], Callable[[], Any]]]] = {}
        self._ready: deque[Hashable] = deque()  # uids with work waiting, in turn order
        self._running: dict[Hashable, int] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(max(1, workers))]
        for t in self._threads:
            t.start()

    def submit(self, key: Hashable, fn: Callable[[], Any]) -> Future[Any]:
        """Run `fn()` on a worker in `key`'s turn; Busy when `key` has too much waiting."""
        fut: Future[Any] = Future()
        with self._cond:
            q = self._queues.setdefault(key, deque())
            if len(q) >= self.max_queued:
                raise Busy(f"{len(q)} requests of yours are waiting already")
            q.append((fut, fn))
            if len(q) == 1:
                self._ready.append(key)
            self._cond.notify()
        return fut

    def _take(self) -> tuple[Hashable, Future[Any], Callable[[], Any]] | None:
        """The next request in turn (with the lock held), or None when none may run now."""
        for _ in range(len(self._ready)):
            key = self._ready.popleft()
            if self._running.get(key, 0) >= self.max_running:
                self._ready.append(key)
                continue
            q = self._queues[key]
            fut, fn = q.popleft()
            if q:
                self._ready.append(key)
            else:
                del self._queues[key]
            self._running[key] = self._running.get(key, 0) + 1
            return key, fut, fn
        return None

    def _work(self) -> None:
        while True:
            with self._cond:
                job = self._take()
                while job is None and not self._stopped:
                    self._cond.wait()
                    job = self._take()
                if job is None:
                    return
            key, fut, fn = job
            try:
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(fn())
                    except BaseException as e:  # handed to the waiting connection
                        fut.set_exception(e)
            finally:
                with self._cond:
                    self._running[key] -= 1
                    if not self._running[key]:
                        del self._running[key]
                    # one more request of `key` may run now: this thread looks for it at
                    # the top of its loop and one idle worker is woken in case this one
                    # takes another. Not notify_all: with one busy uid at max_running,
                    # waking every idle worker at each answer cost 4-5 % of the service's
                    # GIL time and a GIL hand-off per worker (bench_service, 50 clients)
                    self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
