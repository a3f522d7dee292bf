"""A cluster that is running now: the last few collector reads before the current time, with
known jobs (running, with accounts and names), load outside jobs and a quarantined record,
written through the real ingest path (write_batch, upsert_jobs, store.problems)."""

from __future__ import annotations

import time

import psycopg

from slurm_io.jobs.store import upsert_jobs
from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId, JobRecord
from slurm_io.store import problems
from slurm_io.store.writer import write_batch

PERIOD = 120.0
MIB = 1 << 20
FS = "lustre1"
MDT, OST0, OST1 = f"{FS}-MDT0000", f"{FS}-OST0000", f"{FS}-OST0001"
# job -> (uid, user, account, name, nodes)
JOBS = {
    7001: (3001, "ana", "physics", "stormer", ("c01",)),  # metadata storm
    7002: (3002, "ben", "chem", "tinyw", ("c02",)),  # 4 KiB writes
    7003: (3003, "cleo", "physics", "stream", ("c03", "c04")),  # 1 MiB streaming
}


def _bytes(kind: str, n: int, size: int) -> tuple[dict[str, int], dict[str, ByteStats]]:
    return {kind: n}, {kind: ByteStats(n, size, size, n * size, n * size * size, None)}


def deltas_at(t: float, scale: int = 1) -> list[tuple[Delta, JobId]]:
    def d(target: str, rid: str, samples: dict[str, int],
          stats: dict[str, ByteStats] | None = None) -> Delta:
        return Delta(target, rid, rid, t - PERIOD, t, t - 1, samples, stats or {}, 0)

    def exact(job: int, node: str) -> tuple[str, JobId]:
        uid = JOBS[job][0]
        return f"{job}:{uid}:{node}", JobId(IdClass.EXACT, job, uid, node, None, False)

    out: list[tuple[Delta, JobId]] = []
    rid, jid = exact(7001, "c01")
    out.append((d(MDT, rid, {"open": 60_000 * scale, "close": 60_000 * scale,
                             "mkdir": 5_000 * scale, "getattr": 90_000 * scale}), jid))
    rid, jid = exact(7002, "c02")
    out.append((d(OST0, rid, *_bytes("write_bytes", 40_000 * scale, 4096)), jid))
    for node in ("c03", "c04"):
        rid, jid = exact(7003, node)
        s, st = _bytes("write_bytes", 3_000, MIB)
        s2, st2 = _bytes("read_bytes", 1_000, MIB)
        out.append((d(OST1, rid, {**s, **s2}, {**st, **st2}), jid))
    out.append((d(OST0, "cp.3009", *_bytes("read_bytes", 700, MIB)),
                JobId(IdClass.EXE, None, 3009, None, "cp", False)))
    out.append((d(MDT, ":0:c05", {"getattr": 77}),
                JobId(IdClass.SYSTEM, None, 0, "c05", None, False)))
    out.append((d(OST1, ":3008:c06", *_bytes("write_bytes", 250, MIB)),
                JobId(IdClass.JOB_MISSING, None, 3008, "c06", None, False)))
    return out


def load(dsn: str, *, reads: int = 3, now: float | None = None, scale: int = 1) -> float:
    """Write `reads` collector reads ending at the last 120 s boundary before now; returns the
    newest read time."""
    now = time.time() if now is None else now
    last = (now // PERIOD) * PERIOD
    with psycopg.connect(dsn) as conn:
        upsert_jobs(conn, [JobRecord(job, str(job), None, None, uid, user, acct, "batch", name,
                                     nodes, last - 7200, last - 3600, None, "RUNNING", None,
                                     f"/home/{user}", f"sbatch {name}.sh", "test")
                           for job, (uid, user, acct, name, nodes) in JOBS.items()])
        for i in range(reads):
            t = last - (reads - 1 - i) * PERIOD
            ds = deltas_at(t, scale)
            write_batch(conn, Batch("oss1", int(t), t, (MDT, OST0, OST1), ds, len(ds), 1, 0, 0))
        problems.record(conn, [problems.Problem("jobstats", "bad line", "oss1", b"x")])
        conn.commit()
    return last
