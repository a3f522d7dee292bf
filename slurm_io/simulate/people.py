"""Who the simulated cluster's people are and what they submit: users, jobs, job drafts.

The leaf of slurm_io.simulate: cluster (placing and finishing jobs), scenario (named
workloads and their drafts) and phases (the I/O of a job) all build on these types and
draws, and none of them imports another for them -- so the three form no circle and no
private name crosses a module. Pure: everything is drawn from the `random.Random` passed in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NODE_SLOTS = 4  # allocation units per node: single-slot jobs share nodes

PROFILES: tuple[tuple[str, float], ...] = (
    ("stream", 0.25), ("checkpoint", 0.15), ("smallio", 0.2), ("mdstorm", 0.05),
    ("quiet", 0.35),
)
_USER_NAMES = (
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
    "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "zoe",
)
SYSTEM_USERS: tuple[tuple[int, str], ...] = ((0, "root"), (998, "telegraf"))


@dataclass(frozen=True, slots=True)
class User:
    name: str
    uid: int
    gid: int
    group: str
    accounts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Job:
    """One Slurm job (or array task) as sacct reports it, plus the I/O profile it runs."""

    raw_id: int  # JobIDRaw == SLURM_JOB_ID == Lustre's %j
    job_id: str  # JobID: "123" or "120_4" for array tasks
    name: str
    user: User
    account: str
    partition: str
    n_nodes: int
    nodes: tuple[str, ...]  # () when it never started
    submit: int
    start: int | None
    end: int | None  # None while RUNNING at the end of the simulation
    state: str
    exit_code: str
    work_dir: str
    submit_line: str
    profile: str




@dataclass
class Draft:
    """A job before ids are handed out (ids follow submit order, as in Slurm)."""

    user: User
    profile: str
    n_nodes: int
    slots: int
    submit: int
    duration: int
    state: str
    exit_code: str
    nodes: tuple[str, ...] = ()
    start: int | None = None
    array: tuple[int, int] | None = None  # (array key, task index)
    name: str = ""
    account: str = ""
    raw_id: int = 0
    job_id: str = ""
    extra: dict[str, str] = field(default_factory=dict)


def weighted(rng: random.Random, items: tuple[tuple[str, float], ...]) -> str:
    """One name of `items`, drawn by its weight."""
    return rng.choices([k for k, _ in items], weights=[w for _, w in items])[0]


def make_users(rng: random.Random, n_users: int) -> tuple[User, ...]:
    """Users with uids >= 1000 (sparse, as from a site directory) and 1-2 project accounts."""
    users = []
    uid = 1000 + rng.randrange(1, 50)
    for i in range(n_users):
        base = _USER_NAMES[i % len(_USER_NAMES)]
        name = base if i < len(_USER_NAMES) else f"{base}{i // len(_USER_NAMES)}"
        uid += rng.randrange(1, 400)
        n_acc = 1 + (rng.random() < 0.3)
        accounts = tuple(f"project_{2001000 + rng.randrange(0, 40)}" for _ in range(n_acc))
        users.append(User(name, uid, uid, name, accounts))
    return tuple(users)


def draw_state(rng: random.Random, duration: int) -> tuple[str, str, int]:
    """(state, exit code, actual duration): most complete, some fail early, time out, cancel."""
    r = rng.random()
    if r < 0.8:
        return "COMPLETED", "0:0", duration
    if r < 0.88:
        return "FAILED", f"{rng.choice((1, 2, 127))}:0", max(60, int(duration * rng.random()))
    if r < 0.94:
        return "TIMEOUT", "0:0", duration
    return "CANCELLED", "0:0", max(60, int(duration * rng.random()))
