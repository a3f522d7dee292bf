"""The workload of a simulated Slurm cluster: who runs what, where, when, with how much I/O.

Pure: everything is drawn from the `random.Random` passed in, so a seed fixes the whole
workload. The model is small but keeps the features that make attribution hard: multi-node
jobs, nodes shared by several jobs of different users AND of one user, array tasks (whose
Lustre `%j` is the raw job id), I/O pauses longer than Lustre's 600 s cleanup interval, login
node and root/daemon traffic outside any job, and jobs with very different request sizes
(1-4 MiB streaming, 4 KiB small I/O, a metadata storm).

The I/O of a process identity on one node is a list of `Phase`s (steady rates over an
interval); `bursts()` cuts a phase into timed increments for the Lustre model.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from slurm_io.simulate.people import (
    NODE_SLOTS,
    PROFILES,
    Draft,
    Job,
    User,
    draw_state,
    make_users,
    weighted,
)
from slurm_io.simulate.phases import Phase, job_phases, login_phases, system_phases
from slurm_io.simulate.scenario import SCENARIOS, dense_drafts

_JOB_NAMES: dict[str, tuple[str, ...]] = {
    "stream": ("cp2k", "gromacs", "wrf", "openfoam"),
    "checkpoint": ("lammps", "namd", "train_ckpt"),
    "smallio": ("bwa_align", "blast", "samtools"),
    "mdstorm": ("untar_dataset", "pip_install", "snakemake"),
    "quiet": ("postproc", "plot", "sleep_test"),
}
@dataclass(frozen=True)
class Workload:
    nodes: tuple[str, ...]
    login_nodes: tuple[str, ...]
    users: tuple[User, ...]
    jobs: tuple[Job, ...]
    phases: tuple[Phase, ...]  # sorted by t0
    planted_at: float  # from then on nodes[0] runs the planted shared-node jobs (~1 h)


def make_nodes(n_nodes: int) -> tuple[str, ...]:
    return tuple(f"node{i:03d}" for i in range(1, n_nodes + 1))


class _Scheduler:
    """Slot bookkeeping per node: enough to place jobs with realistic node sharing."""

    def __init__(self, nodes: tuple[str, ...], node_slots: int = NODE_SLOTS) -> None:
        self.nodes = nodes
        self.node_slots = node_slots
        self.allocs: dict[str, list[tuple[int, int, int]]] = {n: [] for n in nodes}

    def used(self, node: str, t0: int, t1: int) -> int:
        overlapping = [(s, e, k) for s, e, k in self.allocs[node] if s < t1 and e > t0]
        points = [t0] + [s for s, _, _ in overlapping if s > t0]
        return max(sum(k for s, e, k in overlapping if s <= p < e) for p in points)

    def find(self, rng: random.Random, n: int, slots: int, t0: int, t1: int
             ) -> tuple[str, ...] | None:
        order = list(self.nodes)
        rng.shuffle(order)
        if slots < self.node_slots:  # pack small jobs onto nodes already in use: shared nodes
            order.sort(key=lambda nd: 0 if self.used(nd, t0, t0 + 1) > 0 else 1)
        chosen: list[str] = []
        for nd in order:
            if self.used(nd, t0, t1) + slots <= self.node_slots:
                chosen.append(nd)
                if len(chosen) == n:
                    return tuple(sorted(chosen))
        return None

    def take(self, nodes: tuple[str, ...], slots: int, t0: int, t1: int) -> None:
        for nd in nodes:
            self.allocs[nd].append((t0, t1, slots))


def _random_drafts(rng: random.Random, users: tuple[User, ...], start: int, end: int,
                   jobs_per_hour: float) -> list[Draft]:
    drafts = []
    t = float(start)
    heavy = [1.0 / (1 + i) for i in range(len(users))]  # a few users submit most jobs
    while True:
        t += rng.expovariate(jobs_per_hour / 3600.0)
        if t >= end - 600:
            return drafts
        profile = weighted(rng, PROFILES)
        if profile in ("stream", "checkpoint"):
            n_nodes = rng.choices((1, 2, 4, 8), weights=(0.4, 0.3, 0.2, 0.1))[0]
        else:
            n_nodes = 1
        slots = NODE_SLOTS if n_nodes > 1 else rng.choice((1, 1, 2))
        duration = int(min(4 * 3600, max(480, rng.lognormvariate(math.log(2700), 0.6))))
        state, exit_code, actual = draw_state(rng, duration)
        user = rng.choices(users, weights=heavy)[0]
        drafts.append(Draft(user, profile, n_nodes, slots, int(t), actual, state, exit_code))


def _planted_drafts(users: tuple[User, ...], n_nodes: int, t: int) -> list[Draft]:
    """Scenarios a test must be able to rely on, placed before the random jobs.

    Two jobs of one uid plus a job of another uid on the same node at once (the `:uid:host`
    ambiguity), a 4-task job array, a metadata storm and a wide streaming job.
    """
    u = [users[i % len(users)] for i in range(5)]
    wide = max(1, min(8, n_nodes // 2))
    drafts = [
        Draft(u[0], "smallio", 1, 1, t, 3600, "COMPLETED", "0:0", extra={"pin": "shared"}),
        Draft(u[0], "stream", 1, 1, t + 300, 2400, "COMPLETED", "0:0",
               extra={"pin": "shared"}),
        Draft(u[1], "checkpoint", 1, 2, t + 120, 3000, "COMPLETED", "0:0",
               extra={"pin": "shared"}),
        Draft(u[3], "mdstorm", min(2, n_nodes), NODE_SLOTS, t + 1800, 2700, "COMPLETED", "0:0"),
        Draft(u[4], "stream", wide, NODE_SLOTS, t + 1200, 5400, "COMPLETED", "0:0"),
    ]
    for i in range(4):
        drafts.append(
            Draft(u[2], "quiet" if i % 2 else "smallio", 1, 1, t + 60, 1500 + 300 * i,
                   "COMPLETED" if i != 2 else "FAILED", "0:0" if i != 2 else "1:0",
                   array=(0, i + 1), name="postproc", extra={"delay": str(i * 600)})
        )
    return drafts


def _place(rng: random.Random, sched: _Scheduler, d: Draft, shared_node: str) -> None:
    if d.extra.get("pin") == "shared":
        d.start, d.nodes = d.submit, (shared_node,)
        sched.take(d.nodes, d.slots, d.submit, d.submit + d.duration)
        return
    t0 = d.submit + int(d.extra.get("delay", "0")) + rng.randrange(0, 300)
    for _ in range(24):  # wait up to two hours in the queue
        nodes = sched.find(rng, d.n_nodes, d.slots, t0, t0 + d.duration)
        if nodes is not None:
            d.start, d.nodes = t0, nodes
            sched.take(nodes, d.slots, t0, t0 + d.duration)
            return
        t0 += 300
    d.state, d.exit_code, d.duration = "CANCELLED", "0:0", t0 - d.submit  # never started


def _assign_ids(rng: random.Random, drafts: list[Draft]) -> None:
    """Ids follow submit order; array tasks share their array's id as JobID prefix and the
    last task keeps the array's own id as JobIDRaw (as Slurm does: `6_1|9`, `6_2|6`)."""
    next_id = rng.randrange(3_000_000, 9_000_000)
    sizes: dict[int, int] = {}
    for d in drafts:
        if d.array is not None:
            sizes[d.array[0]] = sizes.get(d.array[0], 0) + 1
    bases: dict[int, int] = {}
    for d in sorted(drafts, key=lambda x: (x.submit, x.array or (0, 0))):
        if d.array is None:
            d.raw_id, d.job_id = next_id, str(next_id)
            next_id += 1
            continue
        key, task = d.array
        if key not in bases:
            bases[key] = next_id
            next_id += sizes[key]
        base = bases[key]
        d.raw_id = base if task == sizes[key] else base + task
        d.job_id = f"{base}_{task}"


def _finish(d: Draft, rng: random.Random, end: int) -> Job:
    name = d.name or rng.choice(_JOB_NAMES[d.profile])
    account = rng.choice(d.user.accounts)
    running = d.start is not None and d.start + d.duration > end
    state = "RUNNING" if running else d.state
    if state == "CANCELLED":
        state = f"CANCELLED by {d.user.uid}"
    job_end = None if running else (d.start if d.start is not None else d.submit) + d.duration
    if d.array:
        submit_line = f"sbatch --array=1-4 {name}.sh"
    elif d.n_nodes > 1:
        submit_line = f"sbatch -N{d.n_nodes} --exclusive {name}.sh"
    else:
        submit_line = f"sbatch -n{d.slots} {name}.sh"
    return Job(
        raw_id=d.raw_id,
        job_id=d.job_id,
        name=name,
        user=d.user,
        account=account,
        partition="large" if d.n_nodes > 1 else "small",
        n_nodes=d.n_nodes,
        nodes=d.nodes,
        submit=d.submit,
        start=d.start,
        end=job_end,
        state=state,
        exit_code="0:0" if running else d.exit_code,
        work_dir=f"/scratch/{account}/{d.user.name}/{name}",
        submit_line=submit_line,
        profile=d.profile,
    )


def make_jobs(rng: random.Random, users: tuple[User, ...], nodes: tuple[str, ...], *,
              start: int, end: int, jobs_per_hour: float, planted_at: int,
              scenario: str = "default") -> tuple[Job, ...]:
    """Jobs of the simulated period, scheduled onto nodes, in sacct order (submit, id).

    `scenario` "dense" (simulate.scenario): `jobs_per_hour` counts submissions, half of them
    task farms of several single-slot tasks, on nodes with twice the slots."""
    sc = SCENARIOS[scenario]
    sched = _Scheduler(nodes, sc.node_slots)
    planted = _planted_drafts(users, len(nodes), planted_at) if planted_at < end - 900 else []
    if sc.farm_share > 0:
        drafts = planted + dense_drafts(rng, users, start, end, jobs_per_hour, sc)
    else:
        drafts = planted + _random_drafts(rng, users, start, end, jobs_per_hour)
    shared_node = nodes[0]
    for d in drafts:
        _place(rng, sched, d, shared_node)
    _assign_ids(rng, drafts)
    jobs = [_finish(d, rng, end) for d in drafts]
    return tuple(sorted(jobs, key=_sacct_order))


def _sacct_order(job: Job) -> tuple[int, int, int]:
    """sacct lists by submit time, array tasks by task index under their array id."""
    base, _, task = job.job_id.partition("_")
    return (job.submit, int(base), int(task or 0))


def build_workload(rng: random.Random, *, start: int, end: int, io_start: float,
                   io_end: float, n_nodes: int, n_users: int, jobs_per_hour: float,
                   n_osts: int, scenario: str = "default") -> Workload:
    """Nodes, users, jobs and every I/O phase of the simulated period."""
    nodes = make_nodes(n_nodes)
    login_nodes = ("login01", "login02")
    users = make_users(rng, n_users)
    planted_at = int(io_start) + 300
    jobs = make_jobs(rng, users, nodes, start=start, end=end, jobs_per_hour=jobs_per_hour,
                     planted_at=planted_at, scenario=scenario)
    phases: list[Phase] = []
    for job in jobs:
        phases += job_phases(rng, job, n_osts, io_start, io_end)
    phases += login_phases(rng, users, login_nodes, n_osts, io_start, io_end)
    phases += system_phases(rng, nodes, login_nodes, n_osts, io_start, io_end)
    phases.sort(key=lambda p: (p.t0, p.node, p.uid, p.exe))
    return Workload(nodes, login_nodes, users, jobs, tuple(phases), float(planted_at))
