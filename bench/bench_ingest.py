"""Ingest benchmark: write_batch into the partitioned, indexed jobstats_delta table.

Why: the collector must keep up with the whole cluster's job_stats on one small server; the
target is >= 150k rows/s. The rows imitate production: 2,000 hosts, 50,000 jobs, 12 targets
(2 MDT + 10 OST), most operation counters NULL, byte counters with statistics on OST rows
(half of them with a size histogram), a few percent of ids without job or of system users.

Run:  python bench/bench_ingest.py [--rows 1000000] [--batch-rows 10000] [--hist 0.5] [--dsn DSN]
Without --dsn a throw-away embedded PostgreSQL is made in a temporary state directory.
With --dsn, use a scratch database: the schema is migrated there and rows are added to it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from slurm_io.model import Batch, ByteStats, Delta, DeltaFlag, IdClass, JobId
from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from slurm_io.store.rows import copy_rows
from slurm_io.store.writer import COPY_CHUNK_ROWS, write_batch

N_HOSTS = 2000
N_JOBS = 50_000
N_USERS = 400
MDTS = [f"scratch-MDT{i:04x}" for i in range(2)]
OSTS = [f"scratch-OST{i:04x}" for i in range(10)]
PERIOD = 60.0
HIST_LABELS = ("4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M", "2M", "4M")
MDT_OPS = ("open", "close", "getattr", "setattr", "mkdir", "unlink", "statfs", "getxattr")


class Generator:
    """Deterministic synthetic deltas (seeded) so that runs are comparable."""

    def __init__(self, seed: int = 1, hist_fraction: float = 0.5) -> None:
        self.rng = random.Random(seed)
        self.hist_fraction = hist_fraction
        rng = self.rng
        self.jobs = [
            (100_000 + j, 1000 + rng.randrange(N_USERS), f"nid{rng.randrange(N_HOSTS):05d}")
            for j in range(N_JOBS)
        ]

    def _byte_stats(self) -> ByteStats:
        rng = self.rng
        samples = rng.randint(1, 5000)
        size = rng.choice((4096, 65536, 1 << 20, 4 << 20))
        hist = None
        if rng.random() < self.hist_fraction:
            labels = rng.sample(HIST_LABELS, 3)
            hist = tuple((label, rng.randint(0, samples)) for label in labels)
        return ByteStats(samples, 4096, size, samples * size, samples * size * size, hist)

    def delta(self, t1: float) -> tuple[Delta, JobId]:
        rng = self.rng
        job, uid, host = self.jobs[rng.randrange(N_JOBS)]
        r = rng.random()
        if r < 0.90:
            jid = JobId(IdClass.EXACT, job, uid, host, None, False)
            raw = f"{job}:{uid}:{host}"
        elif r < 0.95:
            jid = JobId(IdClass.JOB_MISSING, None, uid, host, None, False)
            raw = f":{uid}:{host}"
        elif r < 0.98:
            jid = JobId(IdClass.SYSTEM, None, 0, host, None, False)
            raw = f":0:{host}"
        else:
            jid = JobId(IdClass.EXE, None, uid, None, "python3", False)
            raw = f"python3.{uid}"
        samples: dict[str, int] = {}
        stats: dict[str, ByteStats] = {}
        if rng.random() < 1 / 6:
            target = rng.choice(MDTS)
            for op in rng.sample(MDT_OPS, rng.randint(1, 4)):
                samples[op] = rng.randint(1, 10_000)
        else:
            target = rng.choice(OSTS)
            for name, op, p in (("write_bytes", "write", 0.7), ("read_bytes", "read", 0.5)):
                if rng.random() < p:
                    stats[name] = self._byte_stats()
                    samples[name] = samples[op] = stats[name].samples
            if rng.random() < 0.1:
                samples["punch"] = rng.randint(1, 10)
            if not samples:
                samples["getattr"] = rng.randint(1, 100)
        flags = DeltaFlag.NEW if rng.random() < 0.02 else DeltaFlag.NONE
        return (
            Delta(target, raw, raw, t1 - PERIOD, t1, t1 - rng.random() * PERIOD, samples, stats,
                  int(flags)),
            jid,
        )

    def batch(self, seq: int, t1: float, n: int) -> Batch:
        deltas = [self.delta(t1) for _ in range(n)]
        return Batch("bench", seq, t1, tuple(MDTS + OSTS), deltas, n, 0, 0, 0)


def _size_per_row(conn: psycopg.Connection) -> tuple[int, int]:
    total = conn.execute(
        """
        SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)
        FROM pg_inherits i WHERE i.inhparent = 'jobstats_delta'::regclass
        """
    ).fetchone()
    rows = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()
    return int(total[0]) if total else 0, int(rows[0]) if rows else 0


def _backend_cpu(pid: int) -> float | None:
    """CPU seconds of a local server process (None for a remote server)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(dsn: str, n_rows: int, batch_rows: int, hist_fraction: float) -> None:
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
        base_seq = int(conn.execute(
            "SELECT coalesce(max(seq), 0) FROM ingest_batch WHERE collector = 'bench'"
        ).fetchone()[0])
        conn.commit()
        gen = Generator(hist_fraction=hist_fraction)
        backend = conn.info.backend_pid
        wal0 = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        conn.commit()
        target_ids: dict[str, int] = {}
        host_ids: dict[str, int] = {}
        py_cpu = 0.0
        server_cpu0 = _backend_cpu(backend)
        t1 = time.time() - n_rows / batch_rows * PERIOD  # ends about now
        write_s = convert_s = 0.0
        written = 0
        seq = base_seq
        while written < n_rows:
            n = min(batch_rows, n_rows - written)
            seq += 1
            batch = gen.batch(seq, t1, n)
            for delta, jid in batch.deltas:  # ids as the writer has them cached
                target_ids.setdefault(delta.target, len(target_ids) + 1)
                if jid.host:
                    host_ids.setdefault(jid.host, len(host_ids) + 1)
            t = time.perf_counter()
            for i in range(0, n, COPY_CHUNK_ROWS):  # the Python share, in the writer's chunks
                copy_rows(batch.deltas[i:i + COPY_CHUNK_ROWS], target_ids, host_ids, [])
            convert_s += time.perf_counter() - t
            t, c = time.perf_counter(), _own_cpu()
            assert write_batch(conn, batch)
            write_s += time.perf_counter() - t
            py_cpu += _own_cpu() - c
            written += n
            t1 += PERIOD
        server_cpu1 = _backend_cpu(backend)
        wal = conn.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn", (wal0,)).fetchone()[0]
        conn.execute("ANALYZE jobstats_delta")
        conn.commit()
        size, rows = _size_per_row(conn)
    print(f"rows written          {written:,} in {seq - base_seq} batches of {batch_rows:,}")
    print(f"write_batch           {written / write_s:,.0f} rows/s ({write_s:.2f} s)")
    print(f"copy_rows alone       {written / convert_s:,.0f} rows/s (Python conversion share)")
    # CPU per row does not depend on what else runs on the machine; rows/s does.
    print(f"CPU per row           client {py_cpu / written * 1e6:.1f} us", end="")
    if server_cpu0 is not None and server_cpu1 is not None:
        print(f", server backend {(server_cpu1 - server_cpu0) / written * 1e6:.1f} us")
    else:
        print(" (server not local)")
    print(f"table+indexes         {size / max(rows, 1):.0f} bytes/row "
          f"({size / 2**20:.0f} MiB for {rows:,} rows in the table)")
    print(f"WAL                   {float(wal) / written:.0f} bytes/row")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=10_000)
    parser.add_argument("--hist", type=float, default=0.5, metavar="FRACTION",
                        help="share of byte counters printing a histogram (Lustre 2.16+; "
                        "0 for older releases)")
    parser.add_argument("--dsn", help="scratch database to use instead of an embedded server")
    args = parser.parse_args()
    if args.dsn:
        run(args.dsn, args.rows, args.batch_rows, args.hist)
        return
    # As root the embedded server runs as `postgres`, which must enter the state dir: /tmp
    # is enterable, and the directory is made 0755 (mkdtemp creates 0700).
    tmp = Path(tempfile.mkdtemp(prefix="slurm-io-bench-", dir="/tmp"))
    os.chmod(tmp, 0o755)
    pg = EmbeddedPostgres(tmp / "state")
    try:
        run(pg.ensure(), args.rows, args.batch_rows, args.hist)
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
