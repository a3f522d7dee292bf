"""One server's collector: its state, its batch numbers, and their binding to a database.

The database is the authority on what was stored. A state records the identity of the
database it was made for (`db_identity`, sql/0009); before any of its batches is sent the
collector `bind`s to the database behind the connection:

- a state of another database is set aside (its files renamed, its spooled batches moved to
  the spool's `set-aside/`): everything is collected (or replayed) into this one afresh;
- a state behind the database (removed, damaged, restored from an old copy) cannot give
  deltas for the reads after the database's newest one without counting stored intervals
  again: its entries are dropped, reads up to that one are skipped, and the interval up to
  the next read is lost -- counted, logged and recorded as a problem with what was lost;
- batch numbers continue after the larger of the state's and the database's, so a number
  is never used twice (a reused number would be dropped as "already stored").

A database that lost batches it had committed (restored from a backup, a standby promoted
while it lagged) keeps its identity, so `bind` sees nothing; `recover`, at every flush,
compares the database's newest batch number with the newest batch kept after its commit
(store.kept, `[collect] replay_window`): the kept batches the database lacks are spooled
again and sent in order; the numbers before the oldest kept one are lost -- counted,
logged once at WARNING and recorded as a problem with what was lost.

A full disk (or any local I/O error) while spooling or saving the state changes nothing:
the batch file is removed, the state is read back as it was saved, and the caller retries
with the next read (`LocalStorageError`).
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

from slurm_io.collect.cycle import CycleResult, run_cycle
from slurm_io.delta import state_file
from slurm_io.delta.state_store import StateStore
from slurm_io.model import Entry, ParseResult
from slurm_io.repair.jobid import ClassifyCache
from slurm_io.store import kept, problems
from slurm_io.store.problems import Problem
from slurm_io.store.spool import Spool
from slurm_io.store.writer import newest_batch

log = logging.getLogger("slurm_io.collect")

MAX_PARSE_PROBLEMS = 200  # parse problems kept per read in the quarantine (all are counted)
MAX_WAITING = 5000  # problems kept in memory while the database is unreachable


class LocalStorageError(RuntimeError):
    """The batch or the state could not be written locally (full disk, I/O error).

    Nothing was changed: the read is not stored and the next one covers its interval.
    """


def _utc(t: float) -> str:
    if not math.isfinite(t):
        return "an unknown time"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _window(seconds: float) -> str:
    return f"{seconds / 86400:g}d" if seconds >= 86400 else f"{seconds:g}s"


class Collector:
    """State, spool and sequence numbers of one server's collector."""

    def __init__(self, name: str, state_dir: Path, spool: Spool, classify: ClassifyCache,
                 period: float) -> None:
        self.name = name
        self.state_path = state_dir / "collector" / f"{name}.state"
        self.spool = spool
        self.classify = classify
        self.period = period
        self.problems: list[Problem] = []  # waiting to be recorded in the database
        self.problems_dropped = 0  # beyond MAX_WAITING (a long outage): counted only
        self.bound = False
        self.lost_since: float | None = None  # the next baselines lose I/O since then
        self.floor = -math.inf  # reads up to this time are stored already
        self._lost_told: set[tuple[str, int]] = set()  # (database, first seq) of losses told
        self._store = StateStore(self.state_path)
        self._load()
        if self._store.reset:
            self._after_spooled()
        dropped = spool.discard_after(name, self.seq)
        if dropped:
            log.warning("%s: discarded %d spooled batch(es) whose state was never saved "
                        "(crash); the next read covers their interval", name, dropped)

    def _load(self) -> None:
        st = self._store.load()
        if self._store.torn_records:
            log.warning("%s: the last state save was cut by a crash; its batch is discarded "
                        "and the next read covers its interval", self.name)
        self.seq, self.targets, self.identity = st.seq, st.targets, st.identity
        store = self._store
        if store.damage:
            lost = (f"{self.name}: I/O after {_utc(store.floor)} up to the next read of each "
                    "target") if store.reset else None
            for line in store.damage:
                log.warning("%s: collector state %s: %s%s", self.name, self.state_path, line,
                            f"; lost: {lost}" if lost else "")
                # the loss itself is recorded with its interval at the next read (_note)
                self.problems.append(Problem("state", line, origin=str(self.state_path)))
        if store.reset:
            self.floor = max(self.floor, store.floor)
            self.lost_since = store.floor

    def _after_spooled(self) -> None:
        """A damaged state may not know its last batches: those still spooled are kept
        (and sent); numbers and reads continue after the newest of them."""
        for path in reversed(self.spool.pending(self.name)):
            try:
                last = self.spool.load(path)
            except (OSError, ValueError, EOFError, TypeError, KeyError):
                continue  # the flush quarantines it
            self.seq = max(self.seq, last.seq)
            self.floor = max(self.floor, last.read_time)
            self.lost_since = self.floor
            return

    @property
    def previous(self) -> dict[str, dict[str, Entry]]:
        """The last read's entries per target, for the parser to reuse unchanged ones."""
        return {t: s.entries for t, s in self.targets.items()}

    @property
    def last_read_time(self) -> float:
        """Reads up to this time are done (by this state, or stored in the database)."""
        return max(max((t.read_time for t in self.targets.values()), default=-math.inf),
                   self.floor)

    # -- the database -------------------------------------------------------------------------
    def bind(self, conn: Any) -> None:
        """Check the state against the database behind `conn` (see the module docstring)."""
        with conn.transaction():
            identity = problems.database_identity(conn)
            if self.bound and identity == self.identity:
                return
            newest = newest_batch(conn, self.name)
        db_seq, db_time = (newest.seq, newest.read_time) if newest else (0, None)
        why = None
        if self.identity == state_file.LEGACY:
            if db_seq == 0 and self.targets:
                why = "names no database and this database has none of its batches"
        elif self.identity is not None and self.identity != identity:
            why = f"was made for database {self.identity}, not this one ({identity})"
        if why:
            self._set_aside(why, keep_spooled=set())
        # (read_time is stored to the microsecond: a rounding is no difference)
        if db_time is not None and db_time > self.last_read_time + 1e-3:
            # the database has reads this state does not know: never count them again
            had = bool(self.targets)
            if had:
                self._set_aside(f"is older than the newest read stored ({_utc(db_time)})",
                                keep_spooled={identity})
            self.floor = db_time
            self.lost_since = db_time
            reason = ("state older than the database" if had else
                      "no collector state, but the database has reads of this collector")
            lost = f"{self.name}: I/O after {_utc(db_time)} up to the next read of each target"
            log.warning("%s: %s (newest stored read %s, batch %d); reads up to it are "
                        "skipped; lost: %s", self.name, reason, _utc(db_time), db_seq, lost)
            self.problems.append(Problem("state", reason, origin=str(self.state_path)))
        if db_seq > self.seq:
            # a spooled batch numbered at or below db_seq would be taken for a stored one
            for path in self.spool.pending(self.name):
                self.spool.set_aside(path, self.identity, log)
            self.seq = db_seq
        self.identity, self.bound = identity, True

    def recover(self, conn: Any) -> int:
        """Spool again the kept batches the database lost since it committed them (see the
        module docstring); count what the window no longer holds. Returns the batches
        spooled again. Cheap when nothing was lost: the newest kept number is in memory and
        the database's is one index probe."""
        store, identity = self.spool.kept, self.identity
        if store is None or identity is None or identity == state_file.LEGACY:
            return 0
        newest = store.newest(self.name, identity)
        if newest == 0:
            return 0
        with conn.transaction():  # one probe of ingest_batch's key: cheap at every flush
            stored = newest_batch(conn, self.name)
        db_seq, db_time = (stored.seq, stored.read_time) if stored else (0, None)
        if newest <= db_seq:
            return 0
        todo = kept.gap(db_seq, store.seqs(self.name, identity))
        spooled = {p.name for p in self.spool.pending(self.name)}
        again = 0
        for seq in todo.resend:
            path = self.spool.path_of(self.name, seq)
            if path.name not in spooled and store.restore(self.name, seq, identity, path):
                again += 1
        since = "the collector's first read" if db_time is None else _utc(db_time)
        if again:
            log.warning("%s: the database lacks batches %d..%d that it had committed (restored "
                        "from a backup, or a standby that lagged; newest stored: batch %d of "
                        "%s): %d kept batch(es) spooled again", self.name, db_seq + 1, newest,
                        db_seq, since, again)
        if todo.lost is not None and (identity, todo.lost[0]) not in self._lost_told:
            self._lost_told.add((identity, todo.lost[0]))
            first, last = todo.lost
            lost = (f"{self.name}: {last - first + 1} batch(es) {first}..{last}: I/O after "
                    f"{since} up to the read before batch {last + 1}")
            log.warning("%s: the database lost batches older than the replay window (%s); "
                        "lost: %s", self.name, _window(store.window), lost)
            self.problems.append(Problem(
                "restore", "batches committed to the database are missing from it and are "
                f"no longer kept (replay window {_window(store.window)})", origin=self.name,
                lost=lost))
        return again

    def _set_aside(self, why: str, keep_spooled: set[str | None]) -> None:
        moved = self._store.set_aside("set-aside")
        n = 0
        for path in self.spool.pending(self.name):
            try:
                db = self.spool.load(path).db
            except (OSError, ValueError, EOFError, TypeError, KeyError):
                continue  # the flush quarantines it
            if db not in keep_spooled:
                self.spool.set_aside(path, db, log)
                n += 1
        log.warning("%s: collector state %s %s: set aside (%s), %d spooled batch(es) with "
                    "it; collecting afresh", self.name, self.state_path, why,
                    ", ".join(p.name for p in moved) or "no files yet", n)
        self.targets = {}
        self.floor = -math.inf

    def record_problems(self, conn: Any) -> None:
        """Write the problems waiting in memory into the quarantine (own transaction)."""
        if self.problems_dropped:
            self.problems.append(Problem(
                "jobstats", f"{self.problems_dropped} more problems while the database was "
                "unreachable (logged; counted in ingest_batch.n_problems)", origin=self.name))
        if self.problems:
            with conn.transaction():
                problems.record(conn, self.problems)
            self.problems, self.problems_dropped = [], 0

    # -- one read -----------------------------------------------------------------------------
    def process(self, read_time: float, parsed: ParseResult) -> CycleResult:
        res = run_cycle(self.targets, parsed, read_time, collector=self.name,
                        seq=self.seq + 1, classify=self.classify, period=self.period)
        batch = res.batch._replace(
            db=None if self.identity == state_file.LEGACY else self.identity)
        try:
            path = self.spool.put(batch)
        except OSError as e:
            raise LocalStorageError(f"cannot spool the batch in {self.spool.dir}: {e}") from e
        # drop the previous state before saving the new one (the entries it replaced would
        # otherwise double the peak memory); a failed save reads the saved one back
        self.targets = res.state
        try:
            self._store.save(state_file.CollectorState(self.seq + 1, res.state, self.identity),
                             res.changed)
        except OSError as e:
            self._store.rewind_journal()
            self.spool.remove(path)
            self._load()
            raise LocalStorageError(f"cannot save the state {self.state_path}: {e}") from e
        self.seq += 1
        self._note(read_time, parsed, res)
        return res

    def _note(self, read_time: float, parsed: ParseResult, res: CycleResult) -> None:
        """Log and keep (for the quarantine) what was wrong with this read."""
        for p in parsed.problems[:20]:
            log.warning("%s: %s line %d id=%r: %s: %r", self.name, p.target, p.line, p.raw_id,
                        p.message, p.text)
        if len(parsed.problems) > 20:
            log.warning("%s: ... and %d more problems", self.name, len(parsed.problems) - 20)
        at = _utc(read_time)
        room = max(0, MAX_WAITING - len(self.problems))
        kept = parsed.problems[:min(MAX_PARSE_PROBLEMS, room)]
        self.problems_dropped += min(len(parsed.problems), MAX_PARSE_PROBLEMS) - len(kept)
        for p in kept:
            self.problems.append(Problem(
                "jobstats", p.message, origin=f"{self.name} {p.target} read {at} line {p.line}"
                + (f" id {p.raw_id!r}" if p.raw_id is not None else ""), record=p.text))
        if len(parsed.problems) > MAX_PARSE_PROBLEMS:
            self.problems.append(Problem(
                "jobstats", f"{len(parsed.problems) - MAX_PARSE_PROBLEMS} more problems in "
                "this read (counted in ingest_batch.n_problems)",
                origin=f"{self.name} read {at}"))
        for target in res.stale_targets:
            log.warning("%s: read %s of %s is stale (older than the state): skipped",
                        self.name, at, target)
            self.problems.append(Problem(
                "jobstats", "stale read: its entries are older than the collector state "
                "(an old capture filed late?); skipped, the next read covers the interval",
                origin=f"{self.name} {target} read {at}"))
        if self.lost_since is not None and res.baseline_targets:
            lost = (f"I/O of {', '.join(res.baseline_targets)} after "
                    f"{_utc(self.lost_since)} up to {at} (this read is a baseline)")
            log.warning("%s: lost %s", self.name, lost)
            self.problems.append(Problem("state", "collector state lost or damaged",
                                         origin=self.name, lost=lost))
            self.lost_since = None
