"""The I/O of the simulated cluster: phases (steady rates of one process identity on one
node) and the timed increments (`bursts`) the Lustre model turns into counters.

Apart from slurm_io.simulate.cluster (who runs what, where, when) so that each holds one
model; the jobs and users they belong to come from the leaf simulate.people. Pure: everything
is drawn from the `random.Random` passed in.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from slurm_io.simulate.people import Job, User

BURST_EVERY = 40.0  # seconds between two increments of one phase on one target kind
MIB = 1 << 20

BIG_SIZES: tuple[tuple[int, float], ...] = ((MIB, 0.25), (2 * MIB, 0.15), (4 * MIB, 0.6))
SMALL_SIZES: tuple[tuple[int, float], ...] = ((4096, 0.7), (8192, 0.1), (16384, 0.1),
                                              (65536, 0.1))
MIXED_SIZES: tuple[tuple[int, float], ...] = ((4096, 0.1), (65536, 0.2), (MIB, 0.7))

DATA_MD: tuple[tuple[str, float], ...] = (
    ("open", 0.3), ("close", 0.3), ("getattr", 0.25), ("setattr", 0.05), ("statfs", 0.02),
    ("unlink", 0.04), ("mkdir", 0.02), ("rename", 0.02),
)
STORM_MD: tuple[tuple[str, float], ...] = (
    ("open", 0.2), ("close", 0.2), ("getattr", 0.35), ("mkdir", 0.03), ("rmdir", 0.02),
    ("unlink", 0.1), ("setattr", 0.03), ("getxattr", 0.04), ("rename", 0.02), ("link", 0.01),
)
STATFS_MD: tuple[tuple[str, float], ...] = (("statfs", 0.7), ("getattr", 0.3))
FIND_MD: tuple[tuple[str, float], ...] = (("getattr", 0.8), ("getxattr", 0.15),
                                          ("statfs", 0.05))
OST_OPS: tuple[tuple[str, float], ...] = (
    ("punch", 0.1), ("setattr", 0.2), ("getattr", 0.4), ("sync", 0.2), ("statfs", 0.1),
)

LOGIN_EXES: tuple[str, ...] = ("rsync", "cp", "tar", "scp", "python3", "git")


class Phase(NamedTuple):
    """Steady I/O of one process identity on one node during [t0, t1)."""

    t0: float
    t1: float
    node: str
    job: int | None  # raw job id, None outside jobs
    uid: int
    exe: str
    login: bool  # on a login node (ids printed as %e.%u)
    osts: tuple[int, ...]
    read_rate: float  # bytes/s
    write_rate: float
    read_sizes: tuple[tuple[int, float], ...]
    write_sizes: tuple[tuple[int, float], ...]
    md_rate: float  # MDT operations/s
    md_mix: tuple[tuple[str, float], ...]
    ost_op_rate: float  # OST operations (punch, setattr, ...)/s


class Burst(NamedTuple):
    """What one phase did to one target at time t (request sizes with their counts)."""

    t: float
    phase: Phase
    kind: str  # "MDT" or "OST"
    ost: int  # OST index (0 for the MDT)
    ops: tuple[tuple[str, int], ...]
    reads: tuple[tuple[int, int], ...]  # (request size, count)
    writes: tuple[tuple[int, int], ...]


# --- I/O phases ----------------------------------------------------------------------------

def _segments(rng: random.Random, profile: str, s: float, e: float) -> list[tuple[float, float,
                                                                                      str]]:
    """The job's I/O timeline as (t0, t1, mode); gaps between segments are compute time."""
    segs: list[tuple[float, float, str]] = []
    if profile in ("stream", "checkpoint"):
        t = s + rng.uniform(60, 300)
        segs.append((s, t, "read"))
        lo, hi = (300.0, 1500.0) if profile == "stream" else (700.0, 1600.0)
        while True:
            t += rng.uniform(lo, hi)
            if t >= e:
                break
            w = rng.uniform(60, 240)
            segs.append((t, min(t + w, e), "write"))
            t += w
    elif profile == "smallio":
        t = s
        while t < e:
            d = rng.uniform(300, 900)
            segs.append((t, min(t + d, e), "small"))
            t += d + rng.uniform(30, 200)
    elif profile == "mdstorm":
        t = s + rng.uniform(0, 120)
        while t < e:
            d = rng.uniform(200, 600)
            segs.append((t, min(t + d, e), "meta"))
            t += d + rng.uniform(100, 900)
    else:  # quiet: read the input, compute, write the result
        segs.append((s, min(e, s + rng.uniform(30, 90)), "light"))
        if e - s > 300:
            segs.append((e - rng.uniform(30, 90), e, "light"))
    return [(a, b, m) for a, b, m in segs if b > a]


def _mode_phase(rng: random.Random, mode: str, *, t0: float, t1: float, node: str,
                job: int | None, uid: int, exe: str, n_osts: int, factor: float,
                login: bool = False) -> Phase:
    k = min(n_osts, 2 if mode in ("read", "write") else 1)
    osts = tuple(sorted(rng.sample(range(n_osts), k)))
    rate = rng.uniform(200, 800) * MIB * factor
    if mode == "read":
        return Phase(t0, t1, node, job, uid, exe, login, osts, rate, 0.0, BIG_SIZES, BIG_SIZES,
                     rng.uniform(2, 5), DATA_MD, 0.05)
    if mode == "write":
        return Phase(t0, t1, node, job, uid, exe, login, osts, 0.0, rate, BIG_SIZES, BIG_SIZES,
                     rng.uniform(2, 5), DATA_MD, 0.1)
    if mode == "small":
        return Phase(t0, t1, node, job, uid, exe, login, osts, rng.uniform(2, 10) * MIB * factor,
                     rng.uniform(1, 5) * MIB * factor, SMALL_SIZES, SMALL_SIZES,
                     rng.uniform(20, 80), DATA_MD, 0.5)
    if mode == "meta":
        return Phase(t0, t1, node, job, uid, exe, login, osts, 0.2 * MIB, 0.2 * MIB,
                     SMALL_SIZES, SMALL_SIZES, rng.uniform(300, 2500) * factor, STORM_MD, 0.2)
    return Phase(t0, t1, node, job, uid, exe, login, osts, rng.uniform(5, 20) * MIB,
                 rng.uniform(5, 20) * MIB, MIXED_SIZES, MIXED_SIZES, 5.0, DATA_MD, 0.1)


def job_phases(rng: random.Random, job: Job, n_osts: int, io_start: float, io_end: float
               ) -> list[Phase]:
    """The job's I/O on each of its nodes, clipped to the observed window [io_start, io_end]."""
    if job.start is None:
        return []
    s = float(job.start)
    e = float(job.end) if job.end is not None else io_end
    segs = _segments(rng, job.profile, s, e)
    phases = []
    for node in job.nodes:
        factor = rng.uniform(0.7, 1.3)
        skew = rng.uniform(-20.0, 20.0)
        for a, b, mode in segs:
            a2 = max(a + skew, s, io_start)
            b2 = min(b + skew, e, io_end)
            if b2 > a2:
                phases.append(_mode_phase(rng, mode, t0=a2, t1=b2, node=node, job=job.raw_id,
                                          uid=job.user.uid, exe=job.name, n_osts=n_osts,
                                          factor=factor))
    return phases


def login_phases(rng: random.Random, users: tuple[User, ...], login_nodes: tuple[str, ...],
                 n_osts: int, io_start: float, io_end: float) -> list[Phase]:
    """Users copying data on login nodes (rsync, cp, tar ...): `%e.%u` ids, no job."""
    phases = []
    t = io_start
    rate = max(1, len(users)) * 0.9 / 3600.0
    while True:
        t += rng.expovariate(rate)
        if t >= io_end:
            return phases
        user = rng.choice(users)
        exe = rng.choice(LOGIN_EXES)
        mode = "small" if exe in ("git", "python3") else rng.choice(("read", "write", "light"))
        end = min(io_end, t + rng.uniform(120, 1800))
        phases.append(_mode_phase(rng, mode, t0=t, t1=end, node=rng.choice(login_nodes),
                                  job=None, uid=user.uid, exe=exe, n_osts=n_osts,
                                  factor=0.3, login=True))


def system_phases(rng: random.Random, nodes: tuple[str, ...], login_nodes: tuple[str, ...],
                  n_osts: int, io_start: float, io_end: float) -> list[Phase]:
    """Root and daemon traffic: health checks on compute nodes (`:0:node012`), `lfs find` as
    root and a monitoring agent on the login nodes (`lfs.0`, `telegraf.998`), a root backup."""
    phases: list[Phase] = []
    for node in nodes:
        t = io_start + rng.uniform(0, 3600)
        writes = rng.random() < 0.25
        while t < io_end:
            end = min(io_end, t + rng.uniform(20, 60))
            phases.append(Phase(t, end, node, None, 0, "nhc", False, (rng.randrange(n_osts),),
                                0.0, 8192.0 if writes else 0.0, SMALL_SIZES, SMALL_SIZES, 2.0,
                                STATFS_MD, 0.0))
            t += 3600
    admin, other = login_nodes[0], login_nodes[-1]
    t = io_start + rng.uniform(0, 600)
    while t < io_end:  # telegraf: statfs to every target every 10 minutes
        end = min(io_end, t + 5)
        phases.append(Phase(t, end, admin, None, 998, "telegraf", True, tuple(range(n_osts)),
                            0.0, 0.0, SMALL_SIZES, SMALL_SIZES, 0.4, STATFS_MD, 0.4))
        t += 600
    t = io_start + rng.uniform(300, 2700)
    while t < io_end:  # lfs find by root
        end = min(io_end, t + rng.uniform(60, 300))
        phases.append(Phase(t, end, admin, None, 0, "lfs", True, (0,), 0.0, 0.0, SMALL_SIZES,
                            SMALL_SIZES, rng.uniform(200, 800), FIND_MD, 0.0))
        t += rng.uniform(1800, 3600)
    t = io_start + rng.uniform(600, max(600.0, (io_end - io_start) / 2))
    if t < io_end:  # a backup with a space in its process name
        end = min(io_end, t + rng.uniform(1200, 2400))
        phases.append(Phase(t, end, other, None, 0, "backup rsync", True,
                            tuple(sorted(rng.sample(range(n_osts), min(2, n_osts)))),
                            150 * MIB, 0.0, BIG_SIZES, BIG_SIZES, 10.0, DATA_MD, 0.0))
    return phases


# --- increments ---------------------------------------------------------------------------

def _requests(rng: random.Random, nbytes: float, sizes: tuple[tuple[int, float], ...]
              ) -> tuple[tuple[int, int], ...]:
    out = []
    for size, weight in sizes:
        count = int(nbytes * weight / size + rng.random())  # stochastic rounding
        if count:
            out.append((size, count))
    return tuple(out)


def _ops(rng: random.Random, n: float, mix: tuple[tuple[str, float], ...]
         ) -> tuple[tuple[str, int], ...]:
    out = []
    for name, weight in mix:
        count = int(n * weight + rng.random())
        if count:
            out.append((name, count))
            if name == "rename":  # Lustre also counts the rename as same-dir or cross-dir
                out.append(("samedir_rename", count))
    return tuple(out)


def bursts(rng: random.Random, phase: Phase, a: float, b: float) -> list[Burst]:
    """The increments of `phase` during [a, b): one OST and one MDT burst every ~40 s."""
    span = b - a
    if span <= 0:
        return []
    n = max(1, round(span / BURST_EVERY))
    step = span / n
    out = []
    data = phase.read_rate > 0 or phase.write_rate > 0 or phase.ost_op_rate > 0
    for i in range(n):
        if data:
            jitter = rng.uniform(0.5, 1.5)
            reads = _requests(rng, phase.read_rate * step * jitter, phase.read_sizes)
            writes = _requests(rng, phase.write_rate * step * jitter, phase.write_sizes)
            ops = _ops(rng, phase.ost_op_rate * step, OST_OPS)
            ost = phase.osts[rng.randrange(len(phase.osts))]
            t = min(b, a + (i + rng.random()) * step)
            if reads or writes or ops:
                out.append(Burst(t, phase, "OST", ost, ops, reads, writes))
        if phase.md_rate > 0:
            ops = _ops(rng, phase.md_rate * step * rng.uniform(0.5, 1.5), phase.md_mix)
            t = min(b, a + (i + rng.random()) * step)
            if ops:
                out.append(Burst(t, phase, "MDT", 0, ops, (), ()))
    return out
