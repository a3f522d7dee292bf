"""A durable local spool of batches, so a collector survives database outages losslessly.

Every batch is spooled (written, fsync'ed, renamed into place, directory fsync'ed) before it
is sent, and its file is removed only after the database has it. A crash or outage at any
point therefore leaves the batch either in the spool or in the database -- possibly both,
which is harmless because `write_batch` is idempotent per (collector, seq).

Files are named `<collector>.<seq:012d>.batch` so that a directory listing gives the replay
order. The format is marshal over plain tuples (store.batch_file; pickles of older versions
are still read). Neither marshal nor pickle is meant for data of others, which is acceptable
only because the directory is private: it is created mode 0700, files are 0600, and a spool
directory owned by another user is refused rather than read.

Nothing in the spool may block the batches after it: a file that cannot be read, or a batch
the database refuses even row by row (store.writer), is moved to `quarantine/` in the spool
directory, recorded as a problem and logged; a batch made from a collector state of another
database (its `db` is not this database's identity) is moved to `set-aside/`, untouched.

With a replay window (`[collect] replay_window`), a batch the database committed is not
removed but kept, compressed, in `kept/` for that long (store.kept), so that a database
restored from a backup can be given it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import stat
from collections.abc import Callable
from pathlib import Path

import psycopg

from slurm_io.fsutil import durable_replace, fsync_dir, pid_alive
from slurm_io.model import Batch
from slurm_io.store import batch_file, problems
from slurm_io.store.embedded import EmbeddedPostgresError
from slurm_io.store.kept import Kept
from slurm_io.store.writer import RECORD_ERRORS, write_batch

SUFFIX = ".batch"
QUARANTINE = "quarantine"  # batch files that cannot be read or written
SET_ASIDE = "set-aside"  # batches of a collector state made for another database
_TMP_SUFFIX = ".tmp"


def _parse_name(name: str) -> tuple[str, int] | None:
    """(collector, seq) of a spool file name; None for anything else (temp files, ...)."""
    if name.startswith(".") or not name.endswith(SUFFIX):
        return None
    collector, _, seq = name[: -len(SUFFIX)].rpartition(".")
    if not collector or len(seq) != 12 or not seq.isdigit():
        return None
    return collector, int(seq)



class Spool:
    """Batches waiting for the database, one file each, in a private directory."""

    def __init__(self, dir: Path, replay_window: float | None = None) -> None:
        """`replay_window`: seconds to keep committed batches (None: removed at once)."""
        self.dir = Path(dir)
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = self.dir.stat()
        if st.st_uid != os.geteuid():
            raise PermissionError(
                f"spool directory {self.dir} belongs to uid {st.st_uid}; refusing to load "
                "batches another user could have written"
            )
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(self.dir, 0o700)
        self._last: tuple[Path, Batch] | None = None
        self.kept = None if replay_window is None else Kept(self.dir, replay_window)

    # -- files --------------------------------------------------------------------------------

    def put(self, batch: Batch) -> Path:
        """Store `batch` durably; when this returns, the batch survives a crash or power cut."""
        collector = batch.collector
        if not collector or "/" in collector or "\0" in collector or collector.startswith("."):
            raise ValueError(f"collector name {collector!r} cannot name a spool file")
        if batch.seq < 0:
            raise ValueError(f"negative batch seq {batch.seq}")
        path = self.path_of(collector, batch.seq)
        with durable_replace(path) as out:
            batch_file.write(batch, out)
        # the batch just written is usually flushed right away: keep it so that the flush
        # does not decode what is still in memory (the file is the durable copy)
        self._last = (path, batch)
        return path

    def path_of(self, collector: str, seq: int) -> Path:
        """Where batch `seq` of `collector` is spooled."""
        return self.dir / f"{collector}.{seq:012d}{SUFFIX}"

    def pending(self, collector: str | None = None) -> list[Path]:
        """Spooled batches in replay order: by collector, then by seq."""
        found: list[tuple[str, int, Path]] = []
        for entry in os.scandir(self.dir):
            key = _parse_name(entry.name)
            if key and (collector is None or key[0] == collector):
                found.append((key[0], key[1], Path(entry.path)))
        found.sort(key=lambda item: (item[0], item[1]))
        return [path for _, _, path in found]

    def load(self, path: Path) -> Batch:
        """The batch in `path` (ValueError when the file holds no batch)."""
        if self._last is not None and self._last[0] == path and path.exists():
            return self._last[1]
        try:
            return batch_file.decode(path.read_bytes())
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e

    def remove(self, path: Path) -> None:
        if self._last is not None and self._last[0] == path:
            self._last = None
        """Forget a batch the database has (a missing file is fine: already removed)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def depth(self) -> int:
        """Number of batches waiting (a health figure: it grows during an outage)."""
        return len(self.pending())

    def discard_after(self, collector: str, seq: int) -> int:
        """Remove `collector`'s batches with a seq above `seq`; return how many.

        Used at start-up: a batch spooled after the last committed collector state was
        computed from a state that is now lost, so the collector will read those intervals
        again and re-spooling them under the same numbers must not count them twice. Temp
        files of writers that died are removed too.
        """
        removed = 0
        for path in self.pending(collector):
            key = _parse_name(path.name)
            if key and key[1] > seq:
                self.remove(path)
                removed += 1
        self._remove_dead_temps()
        if removed:
            fsync_dir(self.dir)
        return removed

    def _remove_dead_temps(self) -> None:
        for entry in os.scandir(self.dir):
            if not (entry.name.startswith(".") and entry.name.endswith(_TMP_SUFFIX)):
                continue
            pid_text = entry.name[: -len(_TMP_SUFFIX)].rpartition(".")[2]
            if pid_text.isdigit() and pid_alive(int(pid_text)):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)

    # -- replay -------------------------------------------------------------------------------

    def flush(
        self,
        conn_factory: Callable[[], psycopg.Connection],
        *,
        log: logging.Logger | logging.LoggerAdapter,
    ) -> tuple[int, int]:
        """Send pending batches in order; return (batches written, batches still spooled).

        `conn_factory` is called once (only when something is pending); the connection is left
        open for the caller to reuse (a daemon keeps one connection and its id caches across
        cycles; see collect.daemon.DatabaseLink). Each file is removed after write_batch
        succeeded, or returned False (the batch was already in the database). Never raises
        for database trouble: an outage (OperationalError, a server that cannot start) stops
        the replay and keeps the remaining files for the next flush; any other database error
        is logged with the file name and also keeps the files, since dropping a batch would
        lose data. A file that cannot be decoded is renamed to *.corrupt so it cannot block
        the spool.
        """
        paths = self.pending()
        if not paths:
            return 0, 0
        written = 0
        current: Path | None = None
        try:
            conn = conn_factory()
            identity = _identity(conn)
            for current in paths:
                try:
                    batch = self.load(current)
                except FileNotFoundError:
                    continue  # replayed and removed by a concurrent flush
                except (EOFError, pickle.UnpicklingError, ValueError, AttributeError,
                        ImportError, IndexError, TypeError, KeyError) as exc:
                    self._quarantine(conn, current, f"unreadable spool file: {exc}", log)
                    continue
                if batch.db is not None and batch.db != identity:
                    self.set_aside(current, batch.db, log)
                    continue
                try:
                    stored = write_batch(conn, batch)
                except RECORD_ERRORS as exc:
                    conn.rollback()
                    self._quarantine(conn, current, f"batch refused by the database: {exc}",
                                     log, lost=f"{len(batch.deltas)} delta rows of "
                                     f"{batch.collector} seq {batch.seq}")
                    continue
                if stored:
                    written += 1
                else:
                    log.info("spooled batch %s was already in the database", current.name)
                if self.kept is not None:
                    if self._last is not None and self._last[0] == current:
                        self._last = None
                    self.kept.keep(current, batch.collector, batch.seq, identity)
                else:
                    self.remove(current)
        except (psycopg.OperationalError, EmbeddedPostgresError) as exc:
            log.warning("database unavailable, batches stay spooled: %s", exc)
        except psycopg.Error as exc:
            name = current.name if current else paths[0].name
            log.error("writing spooled batch %s failed, it stays spooled: %s", name, exc)
        return written, self.depth()

    def set_aside(self, path: Path, db: str | None,
                  log: logging.Logger | logging.LoggerAdapter) -> Path:
        """Move a batch out of the way, untouched (made for another database)."""
        folder = self.dir / SET_ASIDE / (db or "unbound")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = folder / path.name
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, target)
            fsync_dir(self.dir)
        if self._last is not None and self._last[0] == path:
            self._last = None
        log.warning("spooled batch %s belongs to database %s, not this one: moved to %s",
                    path.name, db, target)
        return target

    def _quarantine(self, conn: psycopg.Connection, path: Path, reason: str,
                    log: logging.Logger | logging.LoggerAdapter, lost: str | None = None
                    ) -> None:
        """Move a batch file that cannot be read or written to quarantine/, and say so."""
        folder = self.dir / QUARANTINE
        folder.mkdir(mode=0o700, exist_ok=True)
        target = folder / path.name
        try:
            record = path.read_bytes()[: problems.MAX_RECORD_BYTES]
        except OSError:
            record = None
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, target)
            fsync_dir(self.dir)
        if self._last is not None and self._last[0] == path:
            self._last = None
        log.error("spool file %s moved to %s: %s", path.name, target, reason)
        with conn.transaction():
            problems.record(conn, [problems.Problem(
                "batch", reason, origin=str(target), record=record,
                lost=lost or f"the batch in {target.name}")])


def _identity(conn: psycopg.Connection) -> str:
    """The database's identity, in a transaction of its own (the connection stays idle)."""
    with conn.transaction():
        return problems.database_identity(conn)

