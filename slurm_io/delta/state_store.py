"""The collector's durable state as a snapshot plus an append-only journal of changes.

Why: between two reads only the entries that moved change (a third on a busy OSS), yet
rewriting the whole state (~30 MB, 100k entries) every cycle costs ~0.3 s of CPU. So a
cycle appends one journal record with what changed (entries replaced or removed, per
target) and fsyncs it; every `snapshot_every` cycles (and at the first save after a start)
the whole state is written as a snapshot (state_file: temp file + rename) and the journal
is removed; so it is, earlier, when the journal has grown as large as the snapshot, which
bounds the disk space to twice a snapshot and the work of a load to reading both.

Crash safety, the same contract as a snapshot per cycle: a save is durable once its
record is fsync'ed. Each record is framed (length, CRC-32), so a record torn by a crash is
recognised on load, ignored (its batch is then discarded from the spool, as for a state that
was never saved) and cut off before anything is appended after it. A journal left over from
before the newest snapshot (a crash between the snapshot's rename and the journal's removal)
only holds records whose sequence number the snapshot already covers: they are skipped.

Damage is not a crash, and it never double counts. A record that fails its CRC but is
followed by readable records is damage in the middle, not a torn tail; a journal whose
records do not follow its snapshot (the snapshot is missing, or was damaged) cannot be
applied; a snapshot that cannot be read is moved aside. In each case the entries are
unknown (`reset`): the next read of every target is a baseline, so the interval since the
newest read the files still name (`floor`) is lost -- counted and reported by the caller --
and batch numbers continue after the largest number any readable record holds, so that
no number is used twice.
"""

from __future__ import annotations

import marshal
import os
import struct
import time
import zlib
from collections.abc import Mapping
from pathlib import Path

from slurm_io.delta import state_file
from slurm_io.delta.engine import State, TargetState
from slurm_io.delta.state_file import CollectorState
from slurm_io.fsutil import fsync_dir

SNAPSHOT_EVERY = 30  # cycles: one snapshot an hour at the default 120 s period
_FRAME = struct.Struct("<II")  # payload length, CRC-32 of the payload
_PART_ENTRIES = 5000


class StateStore:
    """Loads and saves one collector's state (`<path>` snapshot, `<path>.journal`)."""

    def __init__(self, path: Path, snapshot_every: int = SNAPSHOT_EVERY) -> None:
        self.path = path
        self.journal = path.with_name(path.name + ".journal")
        self.snapshot_every = max(1, snapshot_every)
        self._encoder = state_file.Encoder()
        self._known = False  # whether the files hold the state of seq `_seq`
        self._seq = 0
        self._since_snapshot = 0
        self._snapshot_bytes = 0
        self._journal_bytes = 0
        self.torn_records = 0  # records cut off at load (a crash during a save)
        # set by load(): what was wrong with the files (one line each), whether the entries
        # are unknown (damage: the next read is a baseline), the newest read time they name
        self.damage: list[str] = []
        self.reset = False
        self.floor = float("-inf")

    # -- load ---------------------------------------------------------------------------------
    def load(self) -> CollectorState:
        self.damage, self.reset, self.floor = [], False, float("-inf")
        try:
            st = state_file.load(self.path)
        except ValueError as e:
            aside = set_aside(self.path, "damaged")
            self.damage.append(f"snapshot unreadable ({e}); moved to {aside.name}")
            st = None
        snapshot_missing = st is None or (st.seq == 0 and not self.path.exists())
        seq, targets = (st.seq, st.targets) if st is not None else (0, {})
        identity = st.identity if st is not None else None
        good = 0
        try:
            with open(self.journal, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        broken = False
        while good < len(data):
            record = _read_record(data, good)
            if record is None:
                later = _next_record(data, good + 1)
                if later is None:
                    self.torn_records += 1  # a torn tail: a crash during the last save
                    break
                self.damage.append(f"journal record at byte {good} damaged, readable "
                                   f"records follow at byte {later}")
                broken, good = True, later
                continue
            frames, end = record
            try:
                rec_seq, _ = marshal.loads(frames[0])
                if broken or (rec_seq > seq + 1) or (snapshot_missing and rec_seq > seq):
                    if not broken:
                        self.damage.append(
                            f"journal record {rec_seq} does not follow the snapshot "
                            f"({'missing' if snapshot_missing else f'seq {seq}'})")
                    broken = True
                    metas, _ = marshal.loads(frames[-1])
                    self.floor = max([self.floor, *(m[1] for m in metas)])
                    seq = max(seq, rec_seq)
                elif rec_seq > seq:
                    metas, layouts = marshal.loads(frames[-1])
                    parts = [marshal.loads(f) for f in frames[1:-1]]
                    targets = _apply(targets, metas, parts, [tuple(x) for x in layouts])
                    seq = rec_seq
            except Exception as e:
                self.damage.append(f"journal record at byte {good} unreadable ({e})")
                broken = True
            good = end
        if broken or st is None:
            # the entries are unknown: start from a baseline, keep the numbers going
            self.reset = True
            self.floor = max([self.floor, *(t.read_time for t in targets.values())])
            targets = {}
            if data:
                aside = set_aside(self.journal, "damaged")
                self.damage.append(f"journal moved to {aside.name}")
                data, good = b"", 0
        elif good < len(data):
            # a torn tail: cut it off, or the next record would be appended behind it
            os.truncate(self.journal, good)
            _fsync_file(self.journal)
        self._known, self._seq = True, seq
        self._since_snapshot = 1  # loaded state counts as written; next save may journal
        self._journal_bytes = good
        try:
            self._snapshot_bytes = self.path.stat().st_size
        except FileNotFoundError:
            self._snapshot_bytes = 0
        if self.reset:
            self._since_snapshot = self.snapshot_every  # the next save is a whole snapshot
        return CollectorState(seq, targets, identity)

    def set_aside(self, why: str) -> list[Path]:
        """Move the state's files out of the way (renamed, never deleted); next save: snapshot."""
        moved = [set_aside(p, why) for p in (self.path, self.journal) if p.exists()]
        self._known, self._seq, self._journal_bytes, self._snapshot_bytes = True, 0, 0, 0
        self._since_snapshot = self.snapshot_every
        return moved

    def rewind_journal(self) -> None:
        """Cut the journal back to its last complete record (after a failed append)."""
        try:
            os.truncate(self.journal, self._journal_bytes)
            _fsync_file(self.journal)
        except FileNotFoundError:
            pass

    # -- save ---------------------------------------------------------------------------------
    def save(self, state: CollectorState, changed: Mapping[str, list[str]] | None = None
             ) -> None:
        """Make `state` durable: a journal record of its changes, or a new snapshot.

        `changed` (the delta engine's: target -> ids whose entry is not the object of the
        previous state) lets the record be written without the previous state's entries,
        which the caller may already have released. It must describe the change from the
        state saved last, i.e. `state.seq` must follow the last saved seq; otherwise, or
        without it, the whole state is written.
        """
        if (changed is None or state.seq != self._seq + 1 or not self._known
                or self._since_snapshot >= self.snapshot_every
                or self._journal_bytes >= self._snapshot_bytes):
            self._snapshot(state)
            return
        self._known = False  # unknown until this save is complete
        # one record = a head frame (seq, number of parts), part frames of at most
        # _PART_ENTRIES entries each, a tail frame (per-target metadata, layouts): written
        # frame by frame so that the encoded changes never sit in memory whole
        parts = []
        for target, ids in changed.items():
            for i in range(0, len(ids), _PART_ENTRIES):
                parts.append((target, ids[i:i + _PART_ENTRIES]))
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        written = 0
        try:
            written += _write_frame(fd, marshal.dumps((state.seq, len(parts)), 2))
            for target, ids in parts:
                entries = list(map(state.targets[target].entries.__getitem__, ids))
                written += _write_frame(
                    fd, marshal.dumps((target, self._encoder.encode(entries)), 2))
            metas = [(t, ts.read_time, tuple(ts.gone), dict(ts.since))
                     for t, ts in state.targets.items() if t in changed]
            written += _write_frame(fd, marshal.dumps((metas, self._encoder.layouts()), 2))
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._journal_bytes == 0:
            fsync_dir(self.journal.parent)  # a new journal file: make its name durable
        self._journal_bytes += written
        self._known, self._seq = True, state.seq
        self._since_snapshot += 1

    def _snapshot(self, state: CollectorState) -> None:
        self._known = False
        state_file.save(self.path, state, self._encoder)
        try:
            os.unlink(self.journal)
            fsync_dir(self.journal.parent)
        except FileNotFoundError:
            pass
        self._snapshot_bytes = self.path.stat().st_size
        self._journal_bytes = 0
        self._known, self._seq = True, state.seq
        self._since_snapshot = 1


def set_aside(path: Path, why: str) -> Path:
    """Rename `path` to `<path>.<why>-<utc time>` (durably); return the new path."""
    target = path.with_name(f"{path.name}.{why}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    n = 1
    while target.exists():
        n += 1
        target = target.with_name(f"{target.name.rsplit('~', 1)[0]}~{n}")
    os.replace(path, target)
    fsync_dir(path.parent)
    return target


# a record's head frame is marshal((seq, n_parts), 2): a 2-tuple of small ints
_HEAD_PAYLOAD = b"(\x02\x00\x00\x00i"


def _next_record(data: bytes, pos: int) -> int | None:
    """Where the next readable record after damage at `pos` starts, or None (a torn tail).

    Found by looking for the bytes every head frame starts with, then checking the whole
    record's frames: a C-level search, so a damaged journal of tens of MB is read quickly.
    """
    while True:
        hit = data.find(_HEAD_PAYLOAD, pos + _FRAME.size)
        if hit < 0:
            return None
        start = hit - _FRAME.size
        if _read_record(data, start) is not None:
            return start
        pos = start + 1


def _write_frame(fd: int, payload: bytes) -> int:
    head = _FRAME.pack(len(payload), zlib.crc32(payload))
    n = os.writev(fd, [head, payload])
    if n != len(head) + len(payload):
        raise OSError(f"short write to the state journal ({n} bytes)")
    return n


def _read_record(data: bytes, pos: int) -> tuple[list[bytes], int] | None:
    """(frames, end) of the record at `pos`, or None when any of its frames is torn."""
    head = _unframe(data, pos)
    if head is None:
        return None
    frames = [head[0]]
    try:
        _, n_parts = marshal.loads(head[0])
    except (EOFError, ValueError, TypeError):
        return None
    end = head[1]
    for _ in range(n_parts + 1):
        frame = _unframe(data, end)
        if frame is None:
            return None
        frames.append(frame[0])
        end = frame[1]
    return frames, end


def _apply(targets: State, metas: list, parts: list, layouts: list[tuple[str, ...]]
           ) -> State:
    out = dict(targets)
    entries_of: dict[str, dict] = {}
    for target, read_time, gone, since in metas:
        prev = out.get(target)
        entries = entries_of[target] = dict(prev.entries) if prev is not None else {}
        for rid in gone:  # in the previous read, not in this one
            entries.pop(rid, None)
        out[target] = TargetState(read_time, entries, frozenset(gone), since)
    for target, encoded in parts:
        entries_of[target].update(state_file.decode_entries(target, encoded, layouts))
    return out


def _unframe(data: bytes, pos: int) -> tuple[bytes, int] | None:
    """(payload, end) of the record at `pos`, or None when it is torn or damaged."""
    head_end = pos + _FRAME.size
    if head_end > len(data):
        return None
    length, crc = _FRAME.unpack_from(data, pos)
    end = head_end + length
    if end > len(data):
        return None
    payload = data[head_end:end]
    if zlib.crc32(payload) != crc:
        return None
    return payload, end


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
