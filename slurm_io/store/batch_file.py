"""The on-disk form of a spooled batch: marshal over plain tuples, not pickle.

Why: a cycle spools ~30k deltas before sending them, and pickling NamedTuples calls Python
code for every object (~0.2 s per batch); marshal of plain tuples, dicts and numbers runs in
C (~10x faster to write and to read). Files of older versions (pickle) are still read, so an
upgrade never strands a spooled batch. Like pickle, marshal is only for data this process
wrote itself: the spool directory is private (see store.spool).
"""

from __future__ import annotations

import marshal
import pickle

from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId

MAGIC = b"SIOB\x01"
_CLASSES = {int(c): c for c in IdClass}


def encode(batch: Batch) -> bytes:
    deltas = []
    for d, j in batch.deltas:
        stats = tuple((n, *s) for n, s in d.stats.items())
        deltas.append((d.target, d.raw_id, None if d.job_id == d.raw_id else d.job_id, d.t0,
                       d.t1, d.last_update, d.samples, stats, int(d.flags),
                       int(j.id_class), j.job, j.uid, j.host, j.exe, j.repaired))
    plain = (batch.collector, batch.seq, batch.read_time, tuple(batch.targets), deltas,
             batch.n_entries, batch.n_problems, batch.n_repaired, batch.n_unattributable)
    return MAGIC + marshal.dumps(plain, 4)


def decode(data: bytes) -> Batch:
    """The batch in `data`; ValueError (or EOFError/TypeError) when it holds none."""
    if data.startswith(b"\x80"):  # a pickle of an older version
        batch = pickle.loads(data)
        if not isinstance(batch, Batch):
            raise ValueError(f"not a Batch but a {type(batch).__name__}")
        return batch
    if not data.startswith(MAGIC):
        raise ValueError("not a spooled batch (unknown header)")
    (collector, seq, read_time, targets, plain, n_entries, n_problems, n_repaired,
     n_unattr) = marshal.loads(data[len(MAGIC):])
    deltas = []
    for (target, raw, job_id, t0, t1, last, samples, stats, flags,
         cls, job, uid, host, exe, repaired) in plain:
        deltas.append((
            Delta(target, raw, raw if job_id is None else job_id, t0, t1, last, samples,
                  {s[0]: ByteStats(*s[1:]) for s in stats}, flags),
            JobId(_CLASSES[cls], job, uid, host, exe, repaired),
        ))
    return Batch(collector, seq, read_time, tuple(targets), deltas, n_entries, n_problems,
                 n_repaired, n_unattr)
