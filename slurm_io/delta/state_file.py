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
from array import array
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import BinaryIO, NamedTuple

from slurm_io.delta.engine import State, TargetState
from slurm_io.fsutil import durable_replace
from slurm_io.model import ByteStats, Entry, counts
from slurm_io.text import clean

# 6: the database identity the state is bound to; 5: samples as the bytes of their u64 array
# (4: tuples of ints)
FORMAT_VERSION = 6
_READABLE_VERSIONS = (3, 4, 5, 6)
_MAGIC = "slurm-io collector state"
# entries per marshal record: the file is written record by record, so the bytes of the
# whole state (~30 MB for a 100k-entry OST) never sit in memory at once
_RECORD_ENTRIES = 5000


class CollectorState(NamedTuple):
    seq: int  # sequence number of the last batch handed to the spool (0: none yet)
    targets: State
    # identity of the database the state's batches go to (None: not bound yet, or a state
    # written before format 6); a state of another database is set aside (collect.binding)
    identity: str | None = None


# the identity of a state written before format 6: bound to the database that already has
# its collector's batches (an upgrade), set aside by one that has none
LEGACY = "legacy"


class Encoder:
    """Encodes states to plain tuples (what marshal can write), a record at a time.

    Written every cycle for ~100k entries per target, so the conversion is done column-wise
    by C-level zip/map over a slice of entries rather than by Python code per entry, and
    nothing of it is kept between cycles (a cache of encodings cost ~45 MB per 100k entries).
    Counter layouts get small indexes, listed once at the end of the file.
    """

    def __init__(self) -> None:
        self._layouts: dict[tuple[str, ...], int] = {}

    def _layout_indexes(self, names: tuple[tuple[str, ...], ...]) -> list[int]:
        out = list(map(self._layouts.get, names))
        for i in [i for i, x in enumerate(out) if x is None]:
            out[i] = self._layouts.setdefault(names[i], len(self._layouts))
        return out  # type: ignore[return-value]

    def encode(self, entries: list[Entry]) -> list[tuple]:
        """(raw, job or None, snapshot, start, layout, samples, stat names, stats, digest)."""
        if not entries:
            return []
        _, raws, jobs, snaps, starts, names, samples, stats, digests = zip(*entries,
                                                                            strict=True)
        jobs = [None if j is r else j for r, j in zip(raws, jobs, strict=True)]
        try:
            samples = list(map(array.tobytes, samples))
        except TypeError:  # entries made by hand (tests, simulator) may hold tuples
            samples = [counts(s).tobytes() for s in samples]
        keys = list(map(tuple, stats))
        counts = list(map(len, stats))
        flat = list(map(tuple, chain.from_iterable(map(dict.values, stats))))
        if min(counts) == max(counts) == 2:
            it = iter(flat)
            per_entry: list[tuple] = list(zip(it, it, strict=True))
        else:
            per_entry, pos = [], 0
            for c in counts:
                per_entry.append(tuple(flat[pos:pos + c]))
                pos += c
        return list(zip(raws, jobs, snaps, starts, self._layout_indexes(names), samples, keys,
                        per_entry, digests, strict=True))

    def records(self, state: State) -> Iterator[object]:
        """The marshal records of `state`, in file order (see `save`)."""
        yield (_MAGIC, FORMAT_VERSION, len(state))
        for target, ts in state.items():
            entries = list(ts.entries.values())
            n_records = -(-len(entries) // _RECORD_ENTRIES)
            yield (target, ts.read_time, tuple(ts.gone), dict(ts.since), n_records)
            for i in range(0, len(entries), _RECORD_ENTRIES):
                yield self.encode(entries[i:i + _RECORD_ENTRIES])
        yield self.layouts()

    def layouts(self) -> list[tuple[str, ...]]:
        """The layouts in index order (what encoded entries' layout numbers refer to)."""
        return sorted(self._layouts, key=self._layouts.__getitem__)


def decode_entries(target: str, entries: list, layouts: list[tuple[str, ...]]
                   ) -> dict[str, Entry]:
    """raw id -> Entry of encoded entries (format 3 or 4) of one target."""
    es = {}
    for enc in entries:
        if len(enc) == 8:  # format 3: stats as (name, *values)
            raw, job, snap, start, li, samples, stats, digest = enc
            stat_dict = {st[0]: ByteStats(*st[1:]) for st in stats}
        else:
            raw, job, snap, start, li, samples, keys, stats, digest = enc
            stat_dict = dict(zip(keys, map(ByteStats._make, stats), strict=True))
        if not raw.isascii():  # written before ids were cleaned where they are parsed
            raw = clean(raw)
        # bytes (format 5) or a tuple of ints (3, 4): counts() takes both
        es[raw] = Entry(target, raw, raw if job is None else job, snap, start, layouts[li],
                        counts(samples), stat_dict, digest)
    return es


def _decode(layouts: list, targets: dict) -> State:
    layouts = [tuple(x) for x in layouts]
    state: State = {}
    for target, (read_time, entries, gone, since) in targets.items():
        state[target] = TargetState(read_time, decode_entries(target, entries, layouts),
                                    frozenset(gone), since)
    return state


def _read(f: BinaryIO) -> tuple[int, dict, list, str | None]:
    """(seq, targets, layouts, identity) of a format 4-6 file after its header record."""
    head = marshal.load(f)
    seq, n_targets = head[:2]
    identity = head[2] if len(head) > 2 else LEGACY
    targets = {}
    for _ in range(n_targets):
        target, read_time, gone, since, n_records = marshal.load(f)
        entries: list = []
        for _ in range(n_records):
            entries.extend(marshal.load(f))
        targets[target] = (read_time, entries, gone, since)
    layouts = marshal.load(f)
    if f.read(1):
        raise ValueError("trailing data")
    return seq, targets, layouts, identity


def load(path: Path) -> CollectorState:
    """The saved state, or an empty one when there is none yet."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the version dispatch
    except FileNotFoundError:
        return CollectorState(0, {})
    identity = None
    with f:
        try:
            head = marshal.load(f)
            if (isinstance(head, tuple) and len(head) == 3 and head[0] == 3
                    and isinstance(head[2], tuple)):
                # format 3: one record (3, seq, (layouts, targets))
                seq, (layouts, targets) = head[1], head[2]
                identity = LEGACY
            elif isinstance(head, tuple) and len(head) == 3 and head[0] == _MAGIC and (
                    head[1] in (4, 5, FORMAT_VERSION)):
                seq, targets, layouts, identity = _read(f)
            else:
                version = head[1] if isinstance(head, tuple) and len(head) == 3 else head
                raise ValueError(f"state format {version!r}, expected one of "
                                 f"{_READABLE_VERSIONS}")
            state = CollectorState(seq, _decode(layouts, targets), identity)
        except Exception as e:
            raise ValueError(f"{path}: unreadable collector state ({e})") from e
    return state


def save(path: Path, state: CollectorState, encoder: Encoder | None = None) -> None:
    """Write the state to a temporary file record by record, fsync it, rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with durable_replace(path) as f:
        records = (encoder or Encoder()).records(state.targets)
        marshal.dump(next(records), f, 2)
        marshal.dump((state.seq, len(state.targets), state.identity), f, 2)
        for record in records:
            marshal.dump(record, f, 2)
