"""One full collector cycle on a 100k-entry read: parse + repair + delta + spool + state + COPY.

    .venv/bin/python bench/bench_cycle.py [--entries 100000] [--release 2.16] [--dsn DSN]

Two consecutive reads of one busy target are generated (30 % of the entries grew between
them). The first read sets the baseline (as after a collector start); the second is the
measured steady-state cycle. Each kind (OST, MDT) runs in a fresh process so that its peak
RSS is its own. CPU is the collector process's user+system time for the measured cycle;
the PostgreSQL backend's CPU is reported separately. The state is saved as a journal record
(the usual cycle); `cpu_s_with_snapshot` is the same cycle with the whole-state snapshot that
replaces the journal every 30 cycles or once the journal is as large as the snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OUT = Path(__file__).resolve().parent / "out"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_mib() -> float:
    """This process's peak RSS in MiB: VmHWM, the high-water mark of its own memory map.

    Not ru_maxrss: Linux carries that across fork and exec, so a child started by a big
    parent (budget.py after parsing a 365 MB dump, a test that generated one) reports the
    parent's peak when its own is lower."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str, entries: int, release: str, dsn: str) -> dict:
    import psycopg

    from bench.dumps import cached_dump
    from slurm_io.collect import daemon
    from slurm_io.collect.gc_policy import CycleGC
    from slurm_io.collect.source import parse_file
    from slurm_io.delta import state_file
    from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
    from slurm_io.store import migrate
    from slurm_io.store.spool import Spool

    reads = [cached_dump(OUT, entries, release, kind, step=s) for s in (0, 1)]
    state = Path(tempfile.mkdtemp(prefix="bench-cycle-"))
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
    link = daemon.DatabaseLink(lambda: psycopg.connect(dsn))
    spool = Spool(state / "spool")
    c = daemon.Collector(f"bench-{kind.lower()}-{os.getpid()}", state, spool,
                         ClassifyCache(JobIdGrammar()), 120.0)
    t0 = 1_795_000_000.0
    pause = CycleGC()  # the daemon's garbage-collector policy (collect/gc_policy.py)
    with pause.cycle():
        c.process(t0, parse_file(reads[0], c.previous))
        daemon.flush(spool, link)
    backend_pid = link().info.backend_pid

    def backend_cpu() -> float:
        with open(f"/proc/{backend_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    save_cpu = [0.0]
    real_save = c._store.save

    def timed_save(*a: object, **k: object) -> None:
        t = _cpu()
        real_save(*a, **k)
        save_cpu[0] += _cpu() - t

    c._store.save = timed_save  # type: ignore[method-assign]
    b0 = backend_cpu()
    cpu0, wall0 = _cpu(), time.perf_counter()
    with pause.cycle():
        parsed = parse_file(reads[1], c.previous)
        cpu_parse = _cpu() - cpu0
        res = c.process(t0 + 120, parsed)
        cpu_delta = _cpu() - cpu0 - cpu_parse
        written, remaining = daemon.flush(spool, link)
        del parsed
    cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
    b1 = backend_cpu()
    max_rss = peak_rss_mib()
    journal_MB = c._store.journal.stat().st_size / 1e6 if c._store.journal.exists() else 0.0
    # what the cycle would have cost with a snapshot instead of a journal record (every
    # 30th cycle, or when the journal is as large as the snapshot)
    cpu1 = _cpu()
    with pause.cycle():
        c._store._snapshot(state_file.CollectorState(c.seq, c.targets))
    cpu_snapshot = _cpu() - cpu1
    snapshot_MB = c.state_path.stat().st_size / 1e6
    link.reset()
    shutil.rmtree(state, ignore_errors=True)
    return {
        "kind": kind, "release": release, "entries": res.batch.n_entries,
        "input_MB": round(reads[1].stat().st_size / 1e6, 1), "rows": len(res.batch.deltas),
        "cpu_s": round(cpu, 2), "cpu_parse_s": round(cpu_parse, 2),
        "cpu_repair_delta_spool_state_s": round(cpu_delta, 2),
        "cpu_copy_s": round(cpu - cpu_parse - cpu_delta, 2),
        "wall_s": round(wall, 2), "backend_cpu_s": round(b1 - b0, 2),
        "journal_MB": round(journal_MB, 1), "journal_cpu_s": round(save_cpu[0], 2),
        "snapshot_cpu_s": round(cpu_snapshot, 2),
        "cpu_s_with_snapshot": round(cpu - save_cpu[0] + cpu_snapshot, 2),
        "snapshot_MB": round(snapshot_MB, 1),
        "max_rss_MB": round(max_rss, 1),
        "written": written, "remaining": remaining,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--release", default="2.16")
    ap.add_argument("--dsn")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, entries, release, dsn = args.child
        print(json.dumps(child(kind, int(entries), release, dsn)))
        return
    server = None
    dsn = args.dsn
    if dsn is None:
        from slurm_io.store.embedded import EmbeddedPostgres

        base = Path(tempfile.mkdtemp(prefix="slurm-io-bench-", dir="/tmp"))
        os.chmod(base, 0o755)
        server = EmbeddedPostgres(base)
        dsn = server.ensure()
    try:
        for kind in ("OST", "MDT"):
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(args.entries),
                                  args.release, dsn], capture_output=True, text=True)
            if out.returncode:
                sys.exit(f"{kind} cycle failed:\n{out.stderr[-3000:]}")
            print(out.stdout.strip())
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.state_dir if hasattr(server, "state_dir") else base,
                          ignore_errors=True)


if __name__ == "__main__":
    main()
