"""The collector's garbage-collector policy: no collections during a cycle, freeze after it.

Why: a cycle allocates about a million small objects (entries, counters, deltas, rows) and
keeps a third of them as the next state, on top of the millions of objects of the current
state. CPython's cyclic collector would walk those live objects again and again while the
cycle runs (measured: ~0.35 s of a ~2 s cycle on a 100k-entry OST), although they are all
plain tuples, dicts and numbers that reference counting frees on its own.

So a cycle runs with the collector paused, and afterwards everything still alive is moved to
the permanent generation (`gc.freeze`), where it is never scanned. Frozen objects are still
freed by reference counting when the next state replaces them; only garbage *cycles* (a
dropped database connection, an exception's traceback) would wait, so every
`full_every`-th cycle unfreezes and runs one full collection (hourly at the default period).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FULL_COLLECTION_EVERY = 30


class CycleGC:
    def __init__(self, full_every: int = FULL_COLLECTION_EVERY) -> None:
        self.full_every = max(1, full_every)
        self.cycles = 0

    @contextmanager
    def cycle(self) -> Iterator[None]:
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            self.cycles += 1
            if self.cycles % self.full_every == 0:
                gc.unfreeze()
                gc.collect()
            gc.freeze()
            if enabled:
                gc.enable()
