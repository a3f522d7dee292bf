"""A small cluster with known answers for the filesystem views, written through the real
ingest path (write_batch) and job store (upsert_jobs).

Day D = 2026-11-18 (UTC), the day before is the LASSi baseline. Reads every 120 s.

On D, 10:00-12:00:
* job 101 (alice, "storm"):   a metadata storm on the MDT (opens, closes, getattrs, mkdirs)
* job 102 (bob, "smallw"):    writes in 4 KiB requests (write_kb_ops = 256)
* job 103 (carol, "stream"):  2 nodes streaming 1 MiB writes and reads, the most bytes; plus
                              a `:2003:n03` job-missing delta each read, which is carol's job's
* job 104 (dave, "quiet"):    a few opens
* `rsync.2005` (eve):         login-node reads, outside jobs
* `:0:n06`:                   system load of host n06
* `:2006:n07`:                frank's job-missing writes on a node where he runs no job
* job 105 (gina, "sim"):      runs 10:00-13:00 (slow) during the storm
On D-1, 10:00-12:00: jobs 90 (alice, "normal") and 91 (gina, "sim", 10:00-11:00, fast)
with ordinary I/O: the baseline.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

from slurm_io.jobs.store import upsert_jobs
from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId, JobRecord
from slurm_io.store.writer import write_batch

DAY = datetime(2026, 11, 18, tzinfo=UTC).timestamp()
PREV = DAY - 86400
T10, T12 = DAY + 10 * 3600, DAY + 12 * 3600
PERIOD = 120.0
MIB = 1 << 20
FS = "scratch"
MDT, OST0, OST1 = f"{FS}-MDT0000", f"{FS}-OST0000", f"{FS}-OST0001"


def _job(job: int, uid: int, user: str, name: str, nodes: tuple[str, ...], start: float,
         end: float) -> JobRecord:
    return JobRecord(job, str(job), None, None, uid, user, "acct", "batch", name, nodes,
                     start - 60, start, end, "COMPLETED", "0:0", f"/scratch/{user}/{name}",
                     f"sbatch {name}.sh", "test")


JOBS = [
    _job(101, 2001, "alice", "storm", ("n01",), T10, T12),
    _job(102, 2002, "bob", "smallw", ("n02",), T10, T12),
    _job(103, 2003, "carol", "stream", ("n03", "n04"), T10, T12),
    _job(104, 2004, "dave", "quiet", ("n05",), T10, T12),
    _job(105, 2007, "gina", "sim", ("n08",), T10, T10 + 3 * 3600),
    _job(90, 2001, "alice", "normal", ("n01",), PREV + 10 * 3600, PREV + 12 * 3600),
    _job(91, 2007, "gina", "sim", ("n08",), PREV + 10 * 3600, PREV + 11 * 3600),
]


def _bytes(kind: str, n: int, size: int) -> tuple[dict[str, int], dict[str, ByteStats]]:
    return {kind: n}, {kind: ByteStats(n, size, size, n * size, n * size * size, None)}


def _d(target: str, rid: str, t: float, samples: dict[str, int],
       stats: dict[str, ByteStats] | None = None) -> Delta:
    return Delta(target, rid, rid, t - PERIOD, t, t - 1, samples, stats or {}, 0)


def _exact(job: int, uid: int, host: str) -> tuple[str, JobId]:
    return f"{job}:{uid}:{host}", JobId(IdClass.EXACT, job, uid, host, None, False)


def deltas_at(t: float) -> list[tuple[Delta, JobId]]:
    """Everything read at time t (the interval (t - 120 s, t])."""
    out: list[tuple[Delta, JobId]] = []
    day = t > DAY
    in_jobs = (T10 < t <= T12) if day else (PREV + 10 * 3600 < t <= PREV + 12 * 3600)
    if day and in_jobs:
        rid, jid = _exact(101, 2001, "n01")
        out.append((_d(MDT, rid, t, {"open": 50_000, "close": 50_000, "getattr": 100_000,
                                     "mkdir": 2_000, "unlink": 2_000}), jid))
        rid, jid = _exact(102, 2002, "n02")
        s, st = _bytes("write_bytes", 10_000, 4096)
        out.append((_d(OST0, rid, t, s, st), jid))
        for node in ("n03", "n04"):
            rid, jid = _exact(103, 2003, node)
            s, st = _bytes("write_bytes", 20_000, MIB)
            s2, st2 = _bytes("read_bytes", 5_000, MIB)
            out.append((_d(OST1, rid, t, {**s, **s2}, {**st, **st2}), jid))
            out.append((_d(MDT, rid, t, {"open": 20, "close": 20}), jid))
        s, st = _bytes("write_bytes", 1_000, MIB)
        out.append((_d(OST1, ":2003:n03", t, s, st),
                    JobId(IdClass.JOB_MISSING, None, 2003, "n03", None, False)))
        rid, jid = _exact(104, 2004, "n05")
        out.append((_d(MDT, rid, t, {"open": 3, "close": 3}), jid))
        s, st = _bytes("read_bytes", 3_000, MIB)
        out.append((_d(OST0, "rsync.2005", t, s, st),
                    JobId(IdClass.EXE, None, 2005, None, "rsync", False)))
        out.append((_d(MDT, ":0:n06", t, {"getattr": 10}),
                    JobId(IdClass.SYSTEM, None, 0, "n06", None, False)))
        s, st = _bytes("write_bytes", 500, MIB)
        out.append((_d(OST0, ":2006:n07", t, s, st),
                    JobId(IdClass.JOB_MISSING, None, 2006, "n07", None, False)))
    if not day and in_jobs:
        rid, jid = _exact(90, 2001, "n01")
        out.append((_d(MDT, rid, t, {"open": 500, "close": 500, "getattr": 1_000,
                                     "mkdir": 20, "unlink": 20}), jid))
        s, st = _bytes("write_bytes", 2_000, MIB)
        out.append((_d(OST0, rid, t, s, st), jid))
    # gina's "sim" runs: the same modest I/O, day after day
    for job, lo, hi in ((105, T10, T10 + 3 * 3600), (91, PREV + 10 * 3600, PREV + 11 * 3600)):
        if lo < t <= hi:
            rid, jid = _exact(job, 2007, "n08")
            s, st = _bytes("write_bytes", 100, MIB)
            out.append((_d(OST1, rid, t, s, st), jid))
            out.append((_d(MDT, rid, t, {"open": 10, "close": 10}), jid))
    return out


def load(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        seq = 0
        for base in (PREV, DAY):
            t = base + 9 * 3600
            while t <= base + 14 * 3600:
                seq += 1
                ds = deltas_at(t)
                if ds:
                    write_batch(conn, Batch("test", seq, t, (MDT, OST0, OST1), ds, len(ds), 0,
                                            0, 0))
                t += PERIOD
        upsert_jobs(conn, JOBS)
        conn.commit()
