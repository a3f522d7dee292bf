"""The soak's Slurm side (bench/soak.py): the jobs bench/soak_lctl.py shows, as slurmctld
and sacct would describe them, so that the real hook and report daemon can run on them.

    soak_jobs.py sacct ENTRIES [sacct arguments]   # the report daemon's `[slurm] sacct`

Why a stand-in for sacct and not the testbed's: the soak's jobs never ran on a Slurm (they
are soak_lctl.py's slots, 36,000 of them over 30 simulated days, on the compressed clock);
what the hook and the reporter need is their record, and soak_lctl.py's formula gives it:
slot i of a server with ENTRIES entries runs 6-hour jobs one after another, job
1,000,000 + run * ENTRIES + i (the same id on every server: one job, three OSTs), uid
2000 + i % 300, one node. `hook_env` is what EpilogSlurmctld gets for such a job on 23.02+
(start and end times included, so the hook asks scontrol nothing); `sacct -j` prints its
final record (COMPLETED). A window query (`-S/-E`, the reporter's sweep for jobs that got
no hook) lists nothing: every soak job gets its hook.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.soak_lctl import JOB_SECONDS, NODES

BASE = 1_000_000
HEADER = ("JobID|JobIDRaw|JobName|User|UID|Account|Partition|State|ExitCode|Submit|Start|End|"
          "NNodes|NodeList|WorkDir|Cluster|SubmitLine")


def job_of(entries: int, i: int, run: int) -> int:
    return BASE + (run % 100_000) * entries + i


def slot_run(entries: int, job: int) -> tuple[int, int]:
    """(slot, run) of a soak job id."""
    run, i = divmod(job - BASE, entries)
    return i, run


def times(entries: int, i: int, run: int) -> tuple[float, float]:
    """(start, end) of slot i's run `run` (soak_lctl.entries' phase)."""
    start = run * JOB_SECONDS - i * JOB_SECONDS / entries
    return start, start + JOB_SECONDS


def ended(entries: int, slots: int, after: float, until: float) -> Iterator[tuple[int, float]]:
    """(job, end) of the jobs of slots 0..slots-1 that ended in (after, until], by end."""
    out = []
    for i in range(min(slots, entries)):
        phase = i * JOB_SECONDS / entries
        first = int((after + phase) // JOB_SECONDS)  # the run whose end is the first > after
        for run in range(first, int((until + phase) // JOB_SECONDS) + 1):
            _start, end = times(entries, i, run)
            if after < end <= until:
                out.append((end, job_of(entries, i, run)))
    for end, job in sorted(out):
        yield job, end


def _user(i: int) -> tuple[str, int]:
    uid = 2000 + i % 300
    return f"soak{uid}", uid


def _node(i: int, run: int) -> str:
    return f"c{(i * 7 + run) % NODES:04d}"


def hook_env(entries: int, job: int) -> dict[str, str]:
    """The environment slurmctld gives EpilogSlurmctld (23.02+: with start and end times)."""
    i, run = slot_run(entries, job)
    start, end = times(entries, i, run)
    user, uid = _user(i)
    return {
        "SLURM_CLUSTER_NAME": "soak", "SLURM_JOBID": str(job), "SLURM_JOB_ID": str(job),
        "SLURM_JOB_ACCOUNT": "soak", "SLURM_JOB_CPUS_PER_NODE": "1",
        "SLURM_JOB_DERIVED_EC": "0", "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0",
        "SLURM_JOB_GID": str(uid), "SLURM_JOB_GROUP": user, "SLURM_JOB_NAME": "soak",
        "SLURM_JOB_NODELIST": _node(i, run), "SLURM_JOB_NUM_NODES": "1",
        "SLURM_JOB_PARTITION": "batch", "SLURM_JOB_RESTART_COUNT": "0",
        "SLURM_JOB_UID": str(uid), "SLURM_JOB_USER": user, "SLURM_JOB_WORK_DIR": "/tmp",
        "SLURM_JOB_START_TIME": str(int(start)), "SLURM_JOB_END_TIME": str(int(end)),
        "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
    }


def sacct_line(entries: int, job: int) -> str:
    """sacct -P's final record of a soak job (local times, as sacct prints them)."""
    i, run = slot_run(entries, job)
    start, end = times(entries, i, run)
    user, uid = _user(i)

    def t(x: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(x))

    return (f"{job}|{job}|soak|{user}|{uid}|soak|batch|COMPLETED|0:0|{t(start - 5)}|{t(start)}|"
            f"{t(int(end))}|1|{_node(i, run)}|/tmp|soak|sbatch soak.sh")


def sacct(entries: int, argv: list[str]) -> str:
    """What the stand-in prints for these sacct arguments."""
    if "--version" in argv:
        return "slurm 23.02.7\n"
    ids: list[int] = []
    if "-j" in argv:
        ids = [int(x) for x in argv[argv.index("-j") + 1].split(",") if x.isdigit()]
    return "\n".join([HEADER, *(sacct_line(entries, j) for j in ids if j >= BASE)]) + "\n"


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] != "sacct":
        raise SystemExit("usage: soak_jobs.py sacct ENTRIES [sacct arguments]")
    sys.stdout.write(sacct(int(sys.argv[2]), sys.argv[3:]))


if __name__ == "__main__":
    main()
