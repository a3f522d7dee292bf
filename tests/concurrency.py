"""Run the same database action from two connections at once (race tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import psycopg

T = TypeVar("T")


def on_two_connections(dsn: str, action: Callable[[psycopg.Connection], T]) -> list[T]:
    """`action` in two threads, each on its own connection, released together by a barrier.
    Returns both results; an exception in either thread is re-raised."""
    results: list[T] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            with psycopg.connect(dsn) as conn:
                barrier.wait()
                results.append(action(conn))
        except BaseException as exc:  # reported after both threads ended
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
