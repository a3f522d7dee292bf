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

import psycopg

from slurm_io.collect.cycle import CycleResult, run_cycle
from slurm_io.collect.gc_policy import CycleGC
from slurm_io.collect.source import LctlError, captured_reads, parse_file, read_lctl
from slurm_io.delta import state_file
from slurm_io.delta.state_store import StateStore
from slurm_io.model import Entry, ParseResult
from slurm_io.repair.jobid import ClassifyCache
from slurm_io.store.db import DatabaseLink
from slurm_io.store.spool import Spool

log = logging.getLogger("slurm_io.collect")

__all__ = ["Collector", "DatabaseLink", "flush", "live", "replay"]


class Collector:
    """State, spool and sequence numbers of one server's collector."""

    def __init__(self, name: str, state_dir: Path, spool: Spool, classify: ClassifyCache,
                 period: float) -> None:
        self.name = name
        self.state_path = state_dir / "collector" / f"{name}.state"
        self.spool = spool
        self.classify = classify
        self.period = period
        self._store = StateStore(self.state_path)
        st = self._store.load()
        if self._store.torn_records:
            log.warning("%s: the last state save was cut by a crash; its batch is discarded "
                        "and the next read covers its interval", name)
        self.seq = st.seq
        self.targets = st.targets
        dropped = spool.discard_after(name, self.seq)
        if dropped:
            log.warning("%s: discarded %d spooled batch(es) whose state was never saved "
                        "(crash); the next read covers their interval", name, dropped)

    @property
    def previous(self) -> dict[str, dict[str, Entry]]:
        """The last read's entries per target, for the parser to reuse unchanged ones."""
        return {t: s.entries for t, s in self.targets.items()}

    @property
    def last_read_time(self) -> float:
        return max((t.read_time for t in self.targets.values()), default=-math.inf)

    def process(self, read_time: float, parsed: ParseResult) -> CycleResult:
        res = run_cycle(self.targets, parsed, read_time, collector=self.name,
                        seq=self.seq + 1, classify=self.classify, period=self.period)
        self.spool.put(res.batch)
        # drop the previous state before saving the new one (the entries it replaced would
        # otherwise double the peak memory); if the save fails, the exception ends the
        # daemon and a restart loads the saved state, so nothing relies on the old one
        self.targets = res.state
        self._store.save(state_file.CollectorState(self.seq + 1, res.state), res.changed)
        self.seq += 1
        for p in parsed.problems[:20]:
            log.warning("%s: %s line %d id=%r: %s: %r", self.name, p.target, p.line, p.raw_id,
                        p.message, p.text)
        if len(parsed.problems) > 20:
            log.warning("%s: ... and %d more problems", self.name, len(parsed.problems) - 20)
        return res


def flush(spool: Spool, link: DatabaseLink) -> tuple[int, int]:
    """Send spooled batches; on a database error keep them for the next cycle."""
    try:
        written, remaining = spool.flush(link, log=log)
    except psycopg.Error as e:
        log.warning("database unavailable (%s); %d batch(es) kept in the spool",
                    str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
                    spool.depth())
        link.reset()
        return 0, spool.depth()
    if remaining:
        link.reset()
    return written, remaining


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
    collectors: dict[str, Collector] = {}
    pause = CycleGC()
    totals = {"reads": 0, "skipped": 0, "rows": 0, "problems": 0, "entries": 0}
    for r in captured_reads(root):
        if stop is not None and stop.stopped:
            break
        c = collectors.get(r.server)
        if c is None:
            c = collectors[r.server] = Collector(r.server, state_dir, spool, classify, period)
        if r.read_time <= c.last_read_time:
            totals["skipped"] += 1
            continue
        with pause.cycle():
            res = c.process(r.read_time, parse_file(r.path, c.previous))
            written, remaining = flush(spool, link)
        _log_cycle(c, res, remaining, written)
        totals["reads"] += 1
        totals["rows"] += len(res.batch.deltas)
        totals["problems"] += res.batch.n_problems
        totals["entries"] += res.batch.n_entries
        if on_read is not None:
            on_read(r.server, r.read_time)
    flush(spool, link)
    totals["spool_depth"] = spool.depth()
    return totals


def next_tick(now: float, interval: float) -> float:
    """The next multiple of the interval on the wall clock (reads align across servers)."""
    return (math.floor(now / interval) + 1) * interval


def live(*, name: str, command: str, command_timeout: float, interval: float, state_dir: Path,
         spool: Spool, link: DatabaseLink, classify: ClassifyCache, once: bool,
         stop: StopFlag) -> int:
    """The live loop: read lctl every `interval` seconds aligned to the wall clock."""
    c = Collector(name, state_dir, spool, classify, interval)
    flush(spool, link)
    cycles = 0
    pause = CycleGC()
    while not stop.stopped:
        if not once:
            delay = next_tick(time.time(), interval) - time.time()
            if stop.event.wait(max(0.0, delay)):
                break
        with pause.cycle():
            try:
                read_time, parsed = read_lctl(command, command_timeout, c.previous)
            except LctlError as e:
                log.error("%s: read failed: %s (the next read covers this interval)", name, e)
                if once:
                    return 1
                continue
            res = c.process(read_time, parsed)
            written, remaining = flush(spool, link)
            del parsed
        _log_cycle(c, res, remaining, written)
        cycles += 1
        if once:
            break
    return 0
