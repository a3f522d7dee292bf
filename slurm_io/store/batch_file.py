"""The on-disk form of a spooled batch: marshal over plain tuples, not pickle.

Why: a cycle spools ~30k deltas before sending them, and pickling NamedTuples calls Python
code for every object (~0.2 s per batch); marshal of plain tuples, dicts and numbers runs in
C (~10x faster to write and to read). Files of older versions (pickle) are still read, so an
upgrade never strands a spooled batch. Like pickle, marshal is only for data this process
wrote itself: the spool directory is private (see store.spool).
"""

from __future__ import annotations

import io
import marshal
import pickle
from typing import BinaryIO

from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId

MAGIC = b"SIOB\x02"
_OLD_MAGIC = b"SIOB\x01"  # one record holding the whole batch
_RECORD_DELTAS = 2000  # deltas per marshal record: the encoded batch never sits in memory whole
_CLASSES = {int(c): c for c in IdClass}


def _plain(deltas: list[tuple[Delta, JobId]]) -> list[tuple]:
    out = []
    for d, j in deltas:
        stats = tuple((n, *s) for n, s in d.stats.items())
        out.append((d.target, d.raw_id, None if d.job_id == d.raw_id else d.job_id, d.t0,
                    d.t1, d.last_update, d.samples, stats, int(d.flags),
                    int(j.id_class), j.job, j.uid, j.host, j.exe, j.repaired, d.entry_start))
    return out


def write(batch: Batch, out: BinaryIO) -> None:
    """Write `batch` to a binary file: the magic, a header record, then delta records."""
    out.write(MAGIC)
    n = len(batch.deltas)
    marshal.dump((batch.collector, batch.seq, batch.read_time, tuple(batch.targets),
                  batch.n_entries, batch.n_problems, batch.n_repaired,
                  batch.n_unattributable, n, -(-n // _RECORD_DELTAS), batch.db), out, 4)
    for i in range(0, n, _RECORD_DELTAS):
        marshal.dump(_plain(batch.deltas[i:i + _RECORD_DELTAS]), out, 4)


def encode(batch: Batch) -> bytes:
    buf = io.BytesIO()
    write(batch, buf)
    return buf.getvalue()


def _deltas(plain: list[tuple]) -> list[tuple[Delta, JobId]]:
    deltas = []
    for (target, raw, job_id, t0, t1, last, samples, stats, flags,
         cls, job, uid, host, exe, repaired, *rest) in plain:
        # files spooled before entry_start was kept have 15 fields
        deltas.append((
            Delta(target, raw, raw if job_id is None else job_id, t0, t1, last, samples,
                  {s[0]: ByteStats(*s[1:]) for s in stats}, flags, rest[0] if rest else None),
            JobId(_CLASSES[cls], job, uid, host, exe, repaired),
        ))
    return deltas


def decode(data: bytes) -> Batch:
    """The batch in `data`; ValueError (or EOFError/TypeError/KeyError) when it holds none."""
    if data.startswith(b"\x80"):  # a pickle of an older version
        batch = pickle.loads(data)
        if not isinstance(batch, Batch):
            raise ValueError(f"not a Batch but a {type(batch).__name__}")
        return batch
    if data.startswith(_OLD_MAGIC):
        (collector, seq, read_time, targets, plain, n_entries, n_problems, n_repaired,
         n_unattr) = marshal.loads(data[len(_OLD_MAGIC):])
        return Batch(collector, seq, read_time, tuple(targets), _deltas(plain), n_entries,
                     n_problems, n_repaired, n_unattr)
    if not data.startswith(MAGIC):
        raise ValueError("not a spooled batch (unknown header)")
    f = io.BytesIO(data)
    f.seek(len(MAGIC))
    head = marshal.load(f)
    if not isinstance(head, tuple) or len(head) not in (10, 11):
        raise ValueError("damaged spooled batch (header)")
    (collector, seq, read_time, targets, n_entries, n_problems, n_repaired, n_unattr, n,
     n_records) = head[:10]
    db = head[10] if len(head) == 11 else None  # written before databases had identities
    deltas: list[tuple[Delta, JobId]] = []
    for _ in range(n_records):
        deltas.extend(_deltas(marshal.load(f)))
    if len(deltas) != n or f.read(1):
        raise ValueError(f"damaged spooled batch ({len(deltas)} of {n} deltas)")
    return Batch(collector, seq, read_time, tuple(targets), deltas, n_entries, n_problems,
                 n_repaired, n_unattr, db)
