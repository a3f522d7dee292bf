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
"""

from __future__ import annotations

import marshal
import os
import struct
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

    # -- load ---------------------------------------------------------------------------------
    def load(self) -> CollectorState:
        st = state_file.load(self.path)
        seq, targets = st.seq, st.targets
        good = 0
        try:
            with open(self.journal, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        while good < len(data):
            record = _read_record(data, good)
            if record is None:
                self.torn_records += 1
                break
            frames, end = record
            try:
                rec_seq, _ = marshal.loads(frames[0])
                if rec_seq > seq:
                    metas, layouts = marshal.loads(frames[-1])
                    parts = [marshal.loads(f) for f in frames[1:-1]]
                    targets = _apply(targets, metas, parts, [tuple(x) for x in layouts])
                    seq = rec_seq
            except (EOFError, ValueError, TypeError, IndexError, KeyError) as e:
                raise ValueError(f"{self.journal}: unreadable journal record at byte {good} "
                                 f"({e})") from e
            good = end
        if good < len(data):
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
        return CollectorState(seq, targets)

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
