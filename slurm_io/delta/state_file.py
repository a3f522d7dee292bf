"""Durable collector state: the last read of every target plus the last batch sequence number.

Saved atomically (temp file, fsync, rename, fsync of the directory) after the batch of a cycle
is spooled, so that a `kill -9` at any point leaves either the old state (the spooled batch is
then discarded at start-up and the interval is covered again by the next read) or the new one.

Written every cycle for ~100k entries, so it is encoded with `marshal` over plain tuples (about
faster than pickling NamedTuples; counter-name layouts are stored once and referenced). Nothing
here is untrusted input: the file is the collector's own, in its 0700 state directory.
"""

from __future__ import annotations

import marshal
import os
import tempfile
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from slurm_io.delta.engine import State, TargetState
from slurm_io.fsutil import fsync_dir
from slurm_io.model import ByteStats, Entry

_DIGEST = attrgetter("digest")

FORMAT_VERSION = 3


class CollectorState(NamedTuple):
    seq: int  # sequence number of the last batch handed to the spool (0: none yet)
    targets: State


class Encoder:
    """Encodes states to plain tuples, remembering the encoding of each entry by its digest.

    The parser hands unchanged entries over with the digest of their text, so a collector
    that keeps one Encoder re-encodes only the entries that changed; the others are looked
    up by C-level maps, with no Python code per entry. (Two entries with the same digest
    printed the same id and counters, so their encodings are interchangeable: the target
    is not part of an entry's encoding.)
    """

    def __init__(self) -> None:
        self._layouts: dict[tuple[str, ...], int] = {}
        self._cache: dict[int, tuple] = {}

    def _encode_entry(self, e: Entry) -> tuple:
        li = self._layouts.get(e.names)
        if li is None:
            li = self._layouts[e.names] = len(self._layouts)
        return (e.raw_id, None if e.job_id is e.raw_id else e.job_id, e.snapshot_time,
                e.start_time, li, e.samples, tuple((n, *st) for n, st in e.stats.items()),
                e.digest)

    def encode(self, state: State) -> tuple:
        old = self._cache
        new: dict[int, tuple] = {}
        targets = {}
        for target, ts in state.items():
            entries = list(ts.entries.values())
            digests = list(map(_DIGEST, entries))
            encs = list(map(old.get, digests))
            for i in [i for i, x in enumerate(encs) if x is None]:
                encs[i] = self._encode_entry(entries[i])
            new.update(zip(digests, encs, strict=True))
            targets[target] = (ts.read_time, encs, tuple(ts.gone), dict(ts.since))
        new.pop(0, None)  # entries without a digest (robust path) are never looked up
        self._cache = new
        order = sorted(self._layouts, key=self._layouts.__getitem__)
        return (order, targets)


def _decode(data: tuple) -> State:
    layouts, targets = data
    layouts = [tuple(x) for x in layouts]
    state: State = {}
    for target, (read_time, entries, gone, since) in targets.items():
        es = {}
        for raw, job, snap, start, li, samples, stats, digest in entries:
            es[raw] = Entry(target, raw, raw if job is None else job, snap, start, layouts[li],
                            samples, {st[0]: ByteStats(*st[1:]) for st in stats}, digest)
        state[target] = TargetState(read_time, es, frozenset(gone), since)
    return state


def load(path: Path) -> CollectorState:
    """The saved state, or an empty one when there is none yet."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return CollectorState(0, {})
    try:
        version, seq, targets = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as e:
        raise ValueError(f"{path}: unreadable collector state ({e})") from e
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: state format {version}, expected {FORMAT_VERSION}")
    return CollectorState(seq, _decode(targets))


def save(path: Path, state: CollectorState, encoder: Encoder | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    enc = (encoder or Encoder()).encode(state.targets)
    data = marshal.dumps((FORMAT_VERSION, state.seq, enc), 2)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
