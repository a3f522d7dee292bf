"""The collector daemon (`jobio collect`): the imperative shell around collect.cycle.

Per read, in this order, so that a crash anywhere neither loses nor double-counts an interval:

1. parse + classify + delta (pure, collect.cycle)
2. spool the batch durably (fsync) with the next sequence number
3. save the state recording that sequence number (a journal record or a snapshot, both
   durable before the next step: delta.state_store)
4. flush the spool into PostgreSQL (each batch exactly once: ingest_batch (collector, seq))

At start-up, spooled batches with a sequence number above the saved state's are discarded:
they were spooled but their state never committed, so the next read covers their interval
again. A database outage only makes the spool grow; it is replayed in order when the
database is back.
"""

from __future__ import annotations

import logging
import math
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slurm_io import clock
from slurm_io.collect.collector import Collector, LocalStorageError
from slurm_io.collect.cycle import CycleResult
from slurm_io.collect.gc_policy import CycleGC
from slurm_io.collect.source import LctlError, captured_reads, parse_file, read_lctl
from slurm_io.repair.jobid import ClassifyCache
from slurm_io.store.db import DatabaseLink
from slurm_io.store.errors import DatabaseError
from slurm_io.store.spool import Spool

log = logging.getLogger("slurm_io.collect")

__all__ = ["Collector", "DatabaseLink", "LiveDaemon", "flush", "live", "replay"]


def flush(spool: Spool, link: DatabaseLink, collectors: list[Collector] | tuple = ()
          ) -> tuple[int, int]:
    """Bind the collectors to the database, record their problems, send spooled batches;
    on a database error keep everything for the next cycle."""
    try:
        if collectors:
            conn = link()
            for c in collectors:
                c.bind(conn)
                c.recover(conn)
                c.record_problems(conn)
        written, remaining = spool.flush(link, log=log)
    except (DatabaseError, RuntimeError) as e:
        log.warning("database unavailable (%s); %d batch(es) kept in the spool",
                    str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
                    spool.depth())
        link.reset()
        return 0, spool.depth()
    if remaining:
        link.reset()
    return written, remaining


def free_kept(spool: Spool) -> None:
    """Local storage is full: drop the kept copies of committed batches (store.kept) so that
    the spool and the state, which nothing else holds, get the space."""
    if spool.kept is None:
        return
    n = spool.kept.free()
    if n:
        log.warning("no space for the spool or the state: %d kept committed batch(es) "
                    "removed; a database restored from a backup now would lose them", n)


def _log_cycle(c: Collector, res: CycleResult, depth: int, written: int) -> None:
    b = res.batch
    classes = " ".join(f"{k}={v}" for k, v in sorted(res.by_class.items()))
    log.info(
        "cycle %s seq=%d read=%s entries=%d problems=%d rows=%d repaired=%d unattributable=%d "
        "spool_depth=%d batches_written=%d%s%s [%s]",
        c.name, b.seq, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b.read_time)),
        b.n_entries, b.n_problems, len(b.deltas), b.n_repaired, b.n_unattributable, depth,
        written,
        f" baseline={','.join(res.baseline_targets)}" if res.baseline_targets else "",
        f" stale={','.join(res.stale_targets)}" if res.stale_targets else "",
        classes,
    )


class StopFlag:
    """Set by SIGTERM/SIGINT: the current cycle finishes, then the loop exits."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handler)

    def _handler(self, signum: int, frame: Any) -> None:
        log.info("signal %d: finishing the current cycle, then exiting", signum)
        self.event.set()

    @property
    def stopped(self) -> bool:
        return self.event.is_set()


def replay(root: Path, *, state_dir: Path, spool: Spool, link: DatabaseLink,
           classify: ClassifyCache, period: float, stop: StopFlag | None = None,
           on_read: Callable[[str, float], None] | None = None) -> dict[str, int]:
    """`--from DIR`: process captured reads in time order exactly as the live loop would.

    Reads not newer than a server's saved state are skipped, so replaying a folder again (or
    after a crash) neither loses nor double-counts anything.
    """
    reads = captured_reads(root)
    collectors = {s: Collector(s, state_dir, spool, classify, period)
                  for s in sorted({r.server for r in reads})}
    everyone = list(collectors.values())
    flush(spool, link, everyone)  # bind each state to the database before the first read
    pause = CycleGC()
    totals = {"reads": 0, "skipped": 0, "stale": 0, "rows": 0, "problems": 0, "entries": 0}
    for r in reads:
        if stop is not None and stop.stopped:
            break
        c = collectors[r.server]
        if r.read_time <= c.last_read_time:
            totals["skipped"] += 1
            continue
        with pause.cycle():
            try:
                res = c.process(r.read_time, parse_file(r.path, c.previous))
            except LocalStorageError as e:
                # keep what is spooled, send it (that may free the space), try once more
                log.error("%s: %s; the read %s is not stored yet, spooled batches are kept "
                          "and sent first", c.name, e, r.path.name)
                free_kept(spool)
                flush(spool, link, everyone)
                try:
                    res = c.process(r.read_time, parse_file(r.path, c.previous))
                except LocalStorageError as e2:
                    log.error("%s: %s: replay stopped at %s; run it again when there is "
                              "space (nothing is lost or counted twice)", c.name, e2, r.path)
                    totals["stopped"] = 1
                    break
            written, remaining = flush(spool, link, everyone)
        _log_cycle(c, res, remaining, written)
        totals["reads"] += 1
        totals["stale"] += bool(res.stale_targets)
        totals["rows"] += len(res.batch.deltas)
        totals["problems"] += res.batch.n_problems
        totals["entries"] += res.batch.n_entries
        if on_read is not None:
            on_read(r.server, r.read_time)
    flush(spool, link, everyone)
    totals["spool_depth"] = spool.depth()
    return totals


def next_tick(now: float, interval: float) -> float:
    """The next multiple of the interval on the wall clock (reads align across servers)."""
    return (math.floor(now / interval) + 1) * interval


def live(*, name: str, command: str, command_timeout: float, interval: float, state_dir: Path,
         spool: Spool, link: DatabaseLink, classify: ClassifyCache, once: bool,
         stop: StopFlag) -> int:
    """The live loop: read lctl every `interval` seconds aligned to the wall clock."""
    return LiveDaemon(name=name, command=command, command_timeout=command_timeout,
                      interval=interval, state_dir=state_dir, spool=spool, link=link,
                      classify=classify, once=once, stop=stop).run()


class LiveDaemon:
    """The live collector: `_run_cycle` is one read (read, process, flush), `run` the loop.

    One class so that what a read does and what the loop does between reads (waiting for
    the next tick, stopping) are apart, as in patroni's daemon.
    """

    def __init__(self, *, name: str, command: str, command_timeout: float, interval: float,
                 state_dir: Path, spool: Spool, link: DatabaseLink, classify: ClassifyCache,
                 once: bool, stop: StopFlag) -> None:
        self.name, self.command, self.command_timeout = name, command, command_timeout
        self.interval, self.spool, self.link = interval, spool, link
        self.once, self.stop = once, stop
        self.collector = Collector(name, state_dir, spool, classify, interval)
        self.cycles = 0
        self._pause = CycleGC()

    def run(self) -> int:
        """Read until stopped (or once); 1 when the single read of `once` failed."""
        flush(self.spool, self.link, [self.collector])
        while not self.stop.stopped:
            if not self.once:
                now = clock.now()
                delay = clock.wall_seconds(next_tick(now, self.interval) - now)
                if self.stop.event.wait(max(0.0, delay)):
                    break
            ok = self._run_cycle()
            if self.once:
                return self._shutdown(0 if ok else 1)
        return self._shutdown(0)

    def _run_cycle(self) -> bool:
        """One read; False when it failed (the next read covers its interval)."""
        c, name = self.collector, self.name
        with self._pause.cycle():
            try:
                read_time, parsed = read_lctl(self.command, self.command_timeout, c.previous)
            except LctlError as e:
                log.error("%s: read failed: %s (the next read covers this interval)", name, e)
                return False
            try:
                res = c.process(read_time, parsed)
            except LocalStorageError as e:
                log.error("%s: %s; this read is not stored (the next one covers its "
                          "interval), spooled batches are kept and sent", name, e)
                del parsed
                free_kept(self.spool)
                flush(self.spool, self.link, [c])
                return False
            written, remaining = flush(self.spool, self.link, [c])
            del parsed
        _log_cycle(c, res, remaining, written)
        self.cycles += 1
        return True

    def _shutdown(self, rc: int) -> int:
        """Stopped: nothing is held open between reads (the state and spool are durable
        after each one), so there is nothing to release; say how far it got."""
        log.debug("%s: stopped after %d read(s)", self.name, self.cycles)
        return rc
