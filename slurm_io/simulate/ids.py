"""How a client prints a process's job_id, and the broken forms seen in production.

Lustre clients expand `jobid_name` per process (`%j:%u:%H` for batch jobs, `%e.%u` elsewhere)
and every RPC carries the result, so one job on one node can feed several entries at once when
its id is printed in more than one way. The shares and the burstiness below follow the Puhti
study quoted in LUSTRE-JOBSTATS.md: about 12 % of compute-node OSS entries lack the job (many
nodes at once, for minutes), fewer on the MDS, a few nodes print FQDN hosts or use other
`jobid_name` settings, and under 1 % are broken beyond repair. Every decision is a pure function
of the plan and of a CRC hash of its inputs, so the id of a burst does not depend on the order
in which the simulator asks for it.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from slurm_io.model import IdClass

JOB_PATTERN = "%j:%u:%H"  # compute nodes (the site's jobid_name)
FQDN_PATTERN = "%j:%u:%h"  # drifted config on a few nodes: full host name
LOGIN_PATTERN = "%e.%u"  # processes outside any job (login nodes)
LUSTRE_JOBID_SIZE = 32  # bytes incl. the NUL: ids are truncated to 31 characters
DOMAIN = "cluster"

# Share of the nodes of a job-missing episode whose MDT traffic also loses the job (the MDS saw
# ~9 % of such entries against ~12 % on the OSSs).
MDT_MISSING_SHARE = 0.6
BROKEN_BUCKET = 600.0  # seconds: a transient fault lasts for one bucket of one job on one node


@dataclass(frozen=True, slots=True)
class Episode:
    """A stretch of time in which processes on `nodes` print their id without the job."""

    t0: float
    t1: float
    nodes: frozenset[str]


@dataclass(frozen=True, slots=True)
class IdPlan:
    """Which nodes print which form, and when the job goes missing."""

    fqdn_nodes: frozenset[str]
    job_only_nodes: frozenset[str]  # jobid_name "%j"
    job_uid_nodes: frozenset[str]  # jobid_name "%j:%u"
    episodes: tuple[Episode, ...]
    p_unrecoverable: float  # per (job, node, bucket): duplicated char / first char overwritten
    p_trailing: float  # per (job, node, bucket): `123:` or `123:uid:` (host or uid lost)
    # (node, bucket) -> form, so that even a short run shows every rare form at least once
    forced: tuple[tuple[tuple[str, int], str], ...] = ()
    # processes of a job that lost `%j` for the job's whole life (started outside srun, e.g.
    # ranks launched over ssh and adopted by pam_slurm_adopt, without SLURM_JOB_ID): the
    # share of jobs with such processes, and the share of those jobs' increments they do
    leaky_jobs: float = 0.0
    leaky_part: float = 0.0


def expand(pattern: str, *, job: str, uid: int, host: str, exe: str) -> str:
    """Expand a Lustre `jobid_name` pattern (%j %u %h %H %e and %%), truncated like Lustre."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "%" and i + 1 < len(pattern):
            code = pattern[i + 1]
            out.append(
                {
                    "j": job,
                    "u": str(uid),
                    "h": host,
                    "H": host.split(".", 1)[0],
                    "e": exe,
                    "%": "%",
                }.get(code, "%" + code)
            )
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)[: LUSTRE_JOBID_SIZE - 1]


def unit_hash(*parts: object) -> float:
    """A stable pseudo-random number in [0, 1) from `parts` (CRC32; no process-seeded hash)."""
    return zlib.crc32("|".join(map(str, parts)).encode()) / 2**32


def plan_ids(
    rng: random.Random,
    nodes: tuple[str, ...],
    start: float,
    end: float,
    *,
    busy: tuple[str, ...] = (),
    pinned: str | None = None,
    pinned_at: float | None = None,
    episodes_per_hour: float = 1.3,
    leaky_jobs: float = 0.0,
    leaky_part: float = 0.0,
) -> IdPlan:
    """Draw the id failure plan of one simulated cluster.

    Episodes are the bursts of job-missing ids: ~1.3 per hour, 5-15 minutes each, on 30-90 %
    of the compute nodes at once. The FQDN / `%j` / `%j:%u` nodes are drawn among `busy` nodes
    (those that run jobs) so that their forms show up in short runs too. `pinned` is a node
    that is known to run jobs from `pinned_at` on: each rare transient form is forced there
    once, in consecutive buckets. `leaky_jobs` / `leaky_part`: IdPlan's per-process losses
    (decided by hashes, so they draw nothing from `rng`: the other draws stay the same).
    """
    n = len(nodes)
    pool = [nd for nd in (busy or nodes) if nd != pinned] or [nd for nd in nodes if nd != pinned]
    rng.shuffle(pool)
    k = max(1, round(n * 0.02))
    fqdn = frozenset(pool[:k])
    job_only = frozenset(pool[k : k + 1])
    job_uid = frozenset(pool[k + 1 : k + 2])
    hours = (end - start) / 3600.0
    episodes = []
    for _ in range(max(1, round(hours * episodes_per_hour))):
        length = rng.uniform(300.0, 900.0)
        t0 = rng.uniform(start + 600.0, max(start + 600.0, end - length - 600.0))
        share = rng.uniform(0.3, 0.9)
        chosen = frozenset(rng.sample(nodes, max(1, round(n * share))))
        episodes.append(Episode(t0, t0 + length, chosen))
    episodes.sort(key=lambda e: e.t0)
    forced: tuple[tuple[tuple[str, int], str], ...] = ()
    if pinned is not None and pinned_at is not None:
        first = int(pinned_at // BROKEN_BUCKET) + 1
        forms = ("duplicated", "overwritten", "job:", "job:uid:")
        forced = tuple(((pinned, first + i), form) for i, form in enumerate(forms))
    return IdPlan(fqdn, job_only, job_uid, tuple(episodes), 0.003, 0.012, forced,
                  leaky_jobs, leaky_part)


def _leaked(plan: IdPlan, job: int, node: str, t: float, kind: str) -> bool:
    """Whether the increment at `t` came from a process of `job` that never had its id:
    such a job's own entries and its `:uid:host` entry grow side by side all its life."""
    share = leak_share(plan, job)
    return share > 0 and unit_hash("leaked", job, node, kind, round(t, 3)) < share


def leak_share(plan: IdPlan, job: int | None) -> float:
    """The share of `job`'s increments printed without the job outside the episodes (its
    processes started outside srun): what an oracle of the leaks knows, never attribution."""
    if job is None or plan.leaky_jobs <= 0 or unit_hash("leaky", job) >= plan.leaky_jobs:
        return 0.0
    return plan.leaky_part


def _in_episode(plan: IdPlan, t: float, node: str, kind: str) -> bool:
    for i, ep in enumerate(plan.episodes):
        if ep.t0 <= t < ep.t1 and node in ep.nodes:
            return kind == "OST" or unit_hash("mdt-missing", i, node) < MDT_MISSING_SHARE
    return False


def _transient_form(plan: IdPlan, job: int, node: str, bucket: int) -> str | None:
    """The transient fault of (job, node) during one bucket, if any: "duplicated",
    "overwritten" (unrecoverable), "job:" or "job:uid:" (host, or uid and host, lost)."""
    for key, form in plan.forced:
        if key == (node, bucket):
            return form
    u = unit_hash("broken", job, node, bucket)
    if u < plan.p_unrecoverable:
        return "duplicated" if unit_hash("how", job, node, bucket) < 0.5 else "overwritten"
    if u < plan.p_unrecoverable + plan.p_trailing:
        return "job:" if unit_hash("trail", job, node, bucket) < 0.5 else "job:uid:"
    return None


def _unrecoverable(printed: str, job: str, form: str) -> str:
    """`113178544:...` (last digit of the job doubled) or `:1317854:...` (first char lost)."""
    if form == "duplicated":
        return printed[: len(job)] + printed[len(job) - 1 :]
    return ":" + printed[1:]


def compute_node_id(
    plan: IdPlan, *, t: float, node: str, job: int | None, uid: int, exe: str, kind: str
) -> tuple[str, IdClass]:
    """The job_id printed for I/O of (`job`, `uid`) on compute node `node` at time `t`.

    `job` is None for processes outside any job (root health checks, monitoring daemons):
    `%j` expands to nothing, giving `:0:node012`. Node configuration comes first (FQDN host,
    `%j`, `%j:%u`), then transient faults of the process, then job-missing episodes.
    """
    fqdn = node in plan.fqdn_nodes
    host = f"{node}.{DOMAIN}" if fqdn else node
    pattern = FQDN_PATTERN if fqdn else JOB_PATTERN
    if job is None:
        return expand(pattern, job="", uid=uid, host=host, exe=exe), IdClass.SYSTEM
    j = str(job)
    printed, id_class = expand(pattern, job=j, uid=uid, host=host, exe=exe), (
        IdClass.FQDN if fqdn else IdClass.EXACT
    )
    if node in plan.job_only_nodes:
        printed, id_class = j, IdClass.JOB_ONLY
    elif node in plan.job_uid_nodes:
        printed, id_class = f"{j}:{uid}", IdClass.JOB_UID
    else:
        form = _transient_form(plan, job, node, int(t // BROKEN_BUCKET))
        if form in ("duplicated", "overwritten"):
            printed, id_class = _unrecoverable(printed, j, form), IdClass.UNRECOVERABLE
        elif form == "job:":
            printed, id_class = f"{j}:", IdClass.JOB_ONLY
        elif form == "job:uid:":
            printed, id_class = f"{j}:{uid}:", IdClass.JOB_UID
        elif _in_episode(plan, t, node, kind) or _leaked(plan, job, node, t, kind):
            printed = expand(pattern, job="", uid=uid, host=host, exe=exe)
            id_class = IdClass.JOB_MISSING
    return printed, (IdClass.SYSTEM if uid < 1000 else id_class)


def login_node_id(*, uid: int, exe: str) -> tuple[str, IdClass]:
    """The `%e.%u` id of a process outside any job (`rsync.17627127`, `lfs.0`)."""
    printed = expand(LOGIN_PATTERN, job="", uid=uid, host="", exe=exe)
    return printed, (IdClass.SYSTEM if uid < 1000 else IdClass.EXE)
