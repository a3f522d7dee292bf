"""Committed batches kept for a window, so that a database restored from a backup gets them again.

Why: the database is the authority on what was stored, and a spooled batch is removed once
the database has it. A database restored from last night's backup (or a standby promoted
while it lagged) has lost the batches committed since, but keeps its identity (sql/0009), so
the collector's state, its numbers and its spool all say "stored". Without a copy those
intervals are gone and nobody is told.

So a committed batch is not removed but moved here, zlib-compressed (level 1: a 100k-entry
batch shrinks ~3x for ~50 ms of CPU, bench/bench_replay_window.py), as
`<spool>/kept/<database identity>/<collector>.<seq:012d>.batch.z`, and kept for the window
(`[collect] replay_window`, counted from the commit: the file's mtime). The newest batch of
each collector is always kept, whatever the window: it is the mark of how far this
database got, without which a loss older than the window could not even be told.

The check (`Collector.recover`, at every flush: one index probe) compares the database's
newest `ingest_batch.seq` of a collector with the newest kept one; when the database is
behind, the kept batches after its newest are copied back into the spool and sent in order,
and the numbers before the oldest kept one are a loss (counted, logged once, recorded).

Kept files are written without fsync: they are a second copy of data the database has
committed; one cut by a power failure is unreadable, skipped and counted as lost if needed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import zlib
from pathlib import Path
from typing import NamedTuple

from slurm_io import clock
from slurm_io.fsutil import durable_replace

FOLDER = "kept"
SUFFIX = ".batch.z"
LEVEL = 1  # zlib level: most of the gain of level 6 at a third of its CPU
PRUNE_EVERY = 60.0  # seconds between scans for files older than the window


class Gap(NamedTuple):
    """What a database behind the kept batches lacks: the kept ones to send again, and the
    numbers no longer kept (first, last), or None."""

    resend: list[int]
    lost: tuple[int, int] | None


def gap(db_seq: int, kept: list[int]) -> Gap:
    """The batches after the database's newest (`db_seq`) that were committed once: those
    kept are sent again, those before the oldest kept one are lost (pure)."""
    resend = sorted(s for s in kept if s > db_seq)
    if not resend or resend[0] == db_seq + 1:
        return Gap(resend, None)
    return Gap(resend, (db_seq + 1, resend[0] - 1))


def _seq_of(name: str, collector: str) -> int | None:
    prefix = collector + "."
    if not (name.startswith(prefix) and name.endswith(SUFFIX)):
        return None
    seq = name[len(prefix): -len(SUFFIX)]
    return int(seq) if len(seq) == 12 and seq.isdigit() else None


class Kept:
    """The kept copies of committed batches, per database identity and collector."""

    def __init__(self, spool_dir: Path, window: float) -> None:
        self.dir = Path(spool_dir) / FOLDER
        self.window = max(0.0, window)
        self._newest: dict[tuple[str, str], int] = {}  # (identity, collector) -> seq
        self._pruned_at = -float("inf")
        self.current: str | None = None  # the identity of the database batches go to now

    def _folder(self, identity: str) -> Path:
        return self.dir / identity

    def path(self, identity: str, collector: str, seq: int) -> Path:
        return self._folder(identity) / f"{collector}.{seq:012d}{SUFFIX}"

    def keep(self, src: Path, collector: str, seq: int, identity: str) -> None:
        """The database committed the batch in spool file `src`: keep it compressed here and
        remove it from the spool. An error writing the copy only costs the copy."""
        self.current = identity
        target = self.path(identity, collector, seq)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            data = zlib.compress(src.read_bytes(), LEVEL)
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, target)
        except OSError:
            # a full disk: the database has the batch, only the second copy is missing
            with contextlib.suppress(OSError):
                tmp.unlink()
        else:
            key = (identity, collector)
            if seq > self._newest.get(key, -1):
                self._newest[key] = seq
        with contextlib.suppress(FileNotFoundError):
            os.unlink(src)
        self.prune()

    def seqs(self, collector: str, identity: str) -> list[int]:
        """Numbers of `collector`'s kept batches for database `identity`, ascending."""
        try:
            names = os.listdir(self._folder(identity))
        except FileNotFoundError:
            return []
        return sorted(s for n in names if (s := _seq_of(n, collector)) is not None)

    def newest(self, collector: str, identity: str) -> int:
        """The newest kept number (0: none); from memory after the first look."""
        key = (identity, collector)
        if key not in self._newest:
            found = self.seqs(collector, identity)
            self._newest[key] = found[-1] if found else 0
        return self._newest[key]

    def restore(self, collector: str, seq: int, identity: str, spool_path: Path) -> bool:
        """Copy kept batch `seq` back into the spool (as `spool_path`, durably); False when
        its copy is unreadable or gone."""
        try:
            data = zlib.decompress(self.path(identity, collector, seq).read_bytes())
        except (OSError, zlib.error):
            return False
        with durable_replace(spool_path) as out:
            out.write(data)
        return True

    def free(self) -> int:
        """The disk is full: the spool and the state come first, so every kept copy but the
        marks (each collector's newest) goes. Returns the files removed."""
        return self.prune(force=True, window=-1.0)

    def prune(self, now: float | None = None, *, force: bool = False,
              window: float | None = None) -> int:
        """Remove kept batches committed longer than the window ago, except each collector's
        newest (of the current database); folders of other databases go once all their files
        are older. Scans at most once a minute (a listing of a few thousand names), or a
        tenth of a shorter window. Returns the files removed."""
        # ages are mtimes, on the wall clock; the window and the scan interval are on the
        # daemons' (slurm_io/clock.py: the same unless a soak compresses it)
        now = time.time() if now is None else now
        window = clock.wall_seconds(self.window if window is None else window)
        if not force and now - self._pruned_at < clock.wall_seconds(
                min(PRUNE_EVERY, self.window / 10)):
            return 0
        self._pruned_at = now
        removed = 0
        try:
            folders = list(os.scandir(self.dir))
        except FileNotFoundError:
            return 0
        for folder in folders:
            if not folder.is_dir(follow_symlinks=False):
                continue
            files = []
            for e in os.scandir(folder.path):
                if e.name.endswith(SUFFIX) and not e.name.startswith("."):
                    with contextlib.suppress(FileNotFoundError):
                        files.append((e.name.rsplit(".", 3)[0], e.name, e.stat().st_mtime))
            # the newest of each collector marks how far this database got; a folder of
            # another database (the collector moved on) marks nothing any more
            newest: dict[str, str] = {}
            if folder.name == self.current:
                for collector, name, _ in files:
                    newest[collector] = max(name, newest.get(collector, ""))
            left = len(files)
            for collector, name, mtime in files:
                if now - mtime > window and name != newest.get(collector):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(folder.path, name))
                    removed += 1
                    left -= 1
            if not left and folder.name != self.current:
                shutil.rmtree(folder.path, ignore_errors=True)
        return removed
