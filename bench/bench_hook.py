"""Wall time of the job-end hook (epilog/jobio-epilog) as slurmctld sees it.

    .venv/bin/python bench/bench_hook.py [--runs 50] [--isolated 10] [--burst 20]
                                         [--dsn DSN] [--python PATH]

Every run is the real hook program started the way slurmctld starts an EpilogSlurmctld: an
environment of SLURM_* variables only (a real 22.05 hook environment), through the two-line
wrapper of docs/hook.md that names the Python and the config file, stdio on pipes. The time
is from the start of the wrapper to its exit (what holds up slurmctld's script queue).

Scenarios (everything behind the hook down, then up):
- `down: no server`: the DSN names a socket directory that does not exist (connection
  refused at once);
- `down: unroutable`: the DSN names 192.0.2.1 (TEST-NET-1): the connection attempt hangs
  until the hook's background child hits its deadline;
- `up, train`: PostgreSQL up, hooks `--gap` seconds apart (job ends in a row: the first
  hook's background child lingers and records the others);
- `up, isolated`: PostgreSQL up, 1.5 s apart (every hook forks a child that imports
  psycopg: the most CPU per hook);
- `up, burst`: `--burst` hooks started at once (a whole array ending).
No SMTP server is involved anywhere: the hook never talks SMTP. For the `up` scenarios the
latency from the hook's start to its queue row being committed is printed too. Without
--dsn a throw-away embedded PostgreSQL is started under /tmp.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "epilog" / "jobio-epilog"
ENV = {  # EpilogSlurmctld of a two-node job, Slurm 22.05
    "SLURM_CLUSTER_NAME": "lab", "SLURM_JOB_ACCOUNT": "research",
    "SLURM_JOB_CPUS_PER_NODE": "1(x2)", "SLURM_JOB_DERIVED_EC": "0",
    "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_GID": "1002",
    "SLURM_JOB_GROUP": "alice", "SLURM_JOB_NAME": "srun_direct",
    "SLURM_JOB_NODELIST": "node[03-04]", "SLURM_JOB_NUM_NODES": "2",
    "SLURM_JOB_PARTITION": "debug", "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_UID": "1002",
    "SLURM_JOB_USER": "alice", "SLURM_JOB_WORK_DIR": "/home/alice",
    "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
}


def stats(label: str, ms: list[float]) -> str:
    if not ms:
        return f"{label:<22} n=0"
    p95 = statistics.quantiles(ms, n=20, method="inclusive")[18] if len(ms) >= 2 else ms[0]
    return (f"{label:<22} n={len(ms):<4} min {min(ms):6.1f}  median {statistics.median(ms):6.1f}"
            f"  p95 {p95:6.1f}  max {max(ms):6.1f} ms")


class Setup:
    def __init__(self, root: Path, name: str, dsn: str, python: str) -> None:
        self.spool = root / name / "spool"
        self.spool.parent.mkdir(parents=True)
        config = root / name / "config.toml"
        config.write_text(f"dsn = {dsn!r}\n[hook]\nspool_dir = {str(self.spool)!r}\n"
                          "db_timeout = 5\n")
        self.wrapper = root / name / "jobio-epilog"
        self.wrapper.write_text(f"#!/bin/sh\nJOBIO_PYTHON={python}\nSLURM_IO_CONFIG={config}\n"
                                f"export JOBIO_PYTHON SLURM_IO_CONFIG\nexec {HOOK}\n")
        self.wrapper.chmod(0o755)

    def run(self, job: int) -> float:
        env = {**ENV, "SLURM_JOB_ID": str(job), "SLURM_JOBID": str(job)}
        t0 = time.perf_counter()
        proc = subprocess.run([str(self.wrapper)], env=env, capture_output=True, cwd="/",
                              check=False)
        ms = (time.perf_counter() - t0) * 1000
        assert proc.returncode == 0, proc
        return ms

    def burst(self, jobs: list[int]) -> tuple[float, list[float]]:
        t0 = time.perf_counter()
        procs = [(subprocess.Popen([str(self.wrapper)], cwd="/", stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL,
                                   env={**ENV, "SLURM_JOB_ID": str(j)}), time.perf_counter())
                 for j in jobs]
        each = []
        for p, started in procs:
            assert p.wait() == 0
            each.append((time.perf_counter() - started) * 1000)
        return (time.perf_counter() - t0) * 1000, each


def sequence(setup: Setup, first_job: int, runs: int, gap: float) -> list[float]:
    out = []
    for i in range(runs):
        out.append(setup.run(first_job + i))
        time.sleep(gap)
    return out


def latencies(dsn: str, jobs: range) -> list[float]:
    """ms from the hook's start (queued_at: the hook's clock) to the row's commit."""
    deadline = time.monotonic() + 60
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            rows = conn.execute(
                "SELECT 1000 * extract(epoch FROM q.updated_at - q.queued_at)::float8 "
                "FROM report_queue q JOIN job j USING (job) "  # the queue holds row keys
                "WHERE j.job_raw >= %s AND j.job_raw < %s", (jobs.start, jobs.stop)
            ).fetchall()
            if len(rows) == len(jobs) or time.monotonic() > deadline:
                return [r[0] for r in rows]
            time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50, help="hooks per sequential scenario")
    ap.add_argument("--isolated", type=int, default=10, help="runs of `up, isolated`")
    ap.add_argument("--burst", type=int, default=20, help="hooks started at once")
    ap.add_argument("--gap", type=float, default=0.2, help="seconds between hooks in a train")
    ap.add_argument("--dsn", help="a migrated database (default: a throw-away embedded one)")
    ap.add_argument("--python", default=sys.executable, help="the hook's interpreter")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bench-hook-", dir="/tmp"))
    root.chmod(0o755)
    server = None
    try:
        print(f"hook: {HOOK}, python {args.python}")
        results = []
        down = Setup(root, "down-socket", "host=/nonexistent/pg dbname=x", args.python)
        results.append(stats("down: no server", sequence(down, 1000, args.runs, 0.02)))
        print(results[-1])
        dark = Setup(root, "down-tcp", "host=192.0.2.1 dbname=x connect_timeout=4",
                     args.python)
        results.append(stats("down: unroutable", sequence(dark, 2000, args.runs, 0.02)))
        print(results[-1])
        dsn = args.dsn
        if dsn is None:
            from slurm_io.store.embedded import EmbeddedPostgres

            server = EmbeddedPostgres(root / "pg")
            dsn = server.ensure()
        with psycopg.connect(dsn) as conn:
            from slurm_io.store import migrate

            migrate.upgrade(conn)
            conn.execute("DELETE FROM report_queue WHERE job IN (SELECT job FROM job "
                         "WHERE job_raw >= 3000 AND job_raw < 6000)")
        up = Setup(root, "up", dsn, args.python)
        train = sequence(up, 3000, args.runs, args.gap)
        results.append(stats(f"up, train ({args.gap} s)", train))
        print(results[-1])
        results.append(stats("  -> row committed", latencies(dsn, range(3000, 3000 + args.runs))))
        print(results[-1])
        time.sleep(2)  # the lingering child is gone
        iso = sequence(up, 4000, args.isolated, 1.5)
        results.append(stats("up, isolated (1.5 s)", iso))
        print(results[-1])
        results.append(stats("  -> row committed",
                             latencies(dsn, range(4000, 4000 + args.isolated))))
        print(results[-1])
        time.sleep(2)
        total, each = up.burst(list(range(5000, 5000 + args.burst)))
        results.append(stats(f"up, burst of {args.burst}", each))
        print(results[-1] + f"  (all done in {total:.0f} ms)")
        results.append(stats("  -> row committed",
                             latencies(dsn, range(5000, 5000 + args.burst))))
        print(results[-1])
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
