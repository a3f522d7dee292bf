"""Run the simulated cluster and write what a collector and Slurm would have produced.

This is the only module of the simulator that touches the disk. Output layout (the layout
`jobio collect --from` replays):

    OUT/<server>/<epoch>.txt   verbatim `lctl get_param mdt.*.job_stats obdfilter.*.job_stats`
                               of that server at that unix time (reads every 120 s aligned to
                               the wall clock, 0-4 s of per-server jitter, none during outages)
    OUT/sacct.txt              `sacct -a -X -P` job list (times in UTC)
    OUT/truth.json             ground truth per job and per id class (see lustre.Ledger)
    OUT/manifest.json          parameters, servers and releases, outages, measured id shares

Determinism: every random draw comes from `random.Random` instances seeded from `seed` and a
purpose name, times come from `start`, and JSON is written with sorted keys, so one seed gives
byte-identical files.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

import hostlist

from slurm_io.model import IdClass
from slurm_io.parse.render import render_read, render_target
from slurm_io.simulate.cluster import Workload, build_workload
from slurm_io.simulate.ids import (
    IdPlan,
    compute_node_id,
    login_node_id,
    plan_ids,
)
from slurm_io.simulate.lustre import METRICS, FileSystem, Ledger, Server, plan_servers
from slurm_io.simulate.oracle import Oracle
from slurm_io.simulate.people import SYSTEM_USERS, Job
from slurm_io.simulate.phases import Burst, Phase, bursts
from slurm_io.simulate.scenario import SCENARIOS

READ_PERIOD = 120
MAX_JITTER = 4  # seconds
OUTAGE_READS = 10  # ~20 minutes without files
SACCT_FIELDS: tuple[str, ...] = (
    "JobID", "JobIDRaw", "JobName", "User", "UID", "Group", "GID", "Account", "Partition",
    "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "NNodes", "NodeList", "WorkDir",
    "SubmitLine",
)


# --- pure planning -------------------------------------------------------------------------

def read_slots(start: float, end: float) -> list[int]:
    """Nominal read times: every READ_PERIOD seconds, aligned to the wall clock."""
    first = math.ceil(start / READ_PERIOD) * READ_PERIOD
    return list(range(first, int(end) + 1, READ_PERIOD))


def plan_outages(rng: random.Random, servers: tuple[Server, ...], n_slots: int,
                 enabled: bool) -> list[tuple[int, int, tuple[str, ...]]]:
    """(first missed slot, slots missed, servers): one outage of every server in the first
    half and one of a single server in the second half, when the period is long enough."""
    if not enabled or n_slots < OUTAGE_READS + 6:
        return []
    names = tuple(s.name for s in servers)
    if n_slots < 2 * OUTAGE_READS + 10:
        first = rng.randrange(2, n_slots - OUTAGE_READS - 2)
        return [(first, OUTAGE_READS, names)]
    half = n_slots // 2
    first_all = rng.randrange(2, half - OUTAGE_READS)
    first_one = rng.randrange(half + 1, n_slots - OUTAGE_READS - 2)
    return [(first_all, OUTAGE_READS, names),
            (first_one, OUTAGE_READS + rng.randrange(-1, 2), (rng.choice(names),))]


def _missed(outages: list[tuple[int, int, tuple[str, ...]]], slot: int, server: str) -> bool:
    return any(first <= slot < first + n and server in names for first, n, names in outages)


def compress_hostlist(hosts: tuple[str, ...]) -> str:
    """Slurm's compressed node list (node[001-003,007]), via python-hostlist."""
    return str(hostlist.collect_hostlist(list(hosts)))


def _ts(t: float | None) -> str:
    return "Unknown" if t is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def _elapsed(seconds: int) -> str:
    days, rest = divmod(max(0, seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


def sacct_text(jobs: tuple[Job, ...], end: int) -> str:
    """The job list as `sacct -a -X -P --format=<SACCT_FIELDS>` prints it."""
    lines = ["|".join(SACCT_FIELDS)]
    for j in jobs:
        if j.start is None:
            start, stop, elapsed, nodes = "Unknown", _ts(j.end), 0, "None assigned"
        else:
            start, stop, nodes = _ts(j.start), _ts(j.end), compress_hostlist(j.nodes)
            elapsed = (j.end if j.end is not None else end) - j.start
        row = (
            j.job_id, str(j.raw_id), j.name, j.user.name, str(j.user.uid), j.user.group,
            str(j.user.gid), j.account, j.partition, j.state, j.exit_code, _ts(j.submit), start,
            stop, _elapsed(elapsed), str(j.n_nodes), nodes, j.work_dir, j.submit_line,
        )
        lines.append("|".join(row))
    return "\n".join(lines) + "\n"


def _printed_id(plan: IdPlan, b: Burst) -> tuple[str, IdClass]:
    p = b.phase
    if p.login:
        return login_node_id(uid=p.uid, exe=p.exe)
    return compute_node_id(plan, t=b.t, node=p.node, job=p.job, uid=p.uid, exe=p.exe,
                           kind=b.kind)


def _metrics(values: list[int] | None) -> dict[str, int]:
    return dict(zip(METRICS, values or [0, 0, 0], strict=True))


def _sum_into(acc: list[int], values: list[int]) -> None:
    for i, v in enumerate(values):
        acc[i] += v


def truth_doc(jobs: tuple[Job, ...], ledger: Ledger, unread_at_end: list[int]) -> dict[str, Any]:
    """Ground truth: per job what a perfect attribution gives (generated minus lost in
    Lustre), the part of it printed under each id class, and per-class and global totals."""
    per_job: dict[str, Any] = {}
    for j in jobs:
        per_job[str(j.raw_id)] = {
            "job_id": j.job_id, "user": j.user.name, "uid": j.user.uid,
            "nodes": list(j.nodes), "start": j.start, "end": j.end,
            **_metrics([0, 0, 0]), "lost_in_lustre": _metrics([0, 0, 0]), "by_class": {},
        }
    outside: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    gen_total, lost_total = [0, 0, 0], [0, 0, 0]
    for (owner, label), values in sorted(ledger.generated.items(), key=lambda kv: str(kv[0])):
        lost = ledger.lost.get((owner, label), [0, 0, 0])
        visible = [g - x for g, x in zip(values, lost, strict=True)]
        _sum_into(gen_total, values)
        _sum_into(lost_total, lost)
        cls = classes.setdefault(label, {"entries": ledger.created.get(label, 0),
                                         "generated": [0, 0, 0], "lost": [0, 0, 0]})
        _sum_into(cls["generated"], values)
        _sum_into(cls["lost"], lost)
        if isinstance(owner, int):
            rec = per_job[str(owner)]
        else:
            rec = outside.setdefault(owner, {**_metrics([0, 0, 0]),
                                             "lost_in_lustre": _metrics([0, 0, 0]),
                                             "by_class": {}})
        for i, m in enumerate(METRICS):
            rec[m] += visible[i]
            rec["lost_in_lustre"][m] += lost[i]
        rec["by_class"][label] = _metrics(visible)
    return {
        "schema": 1,
        "metrics": list(METRICS),
        "note": "read_bytes/write_bytes/metadata_ops are visible in the job_stats files "
                "(generated minus lost_in_lustre); metadata_ops = MDT counters in "
                "slurm_io.model.METADATA_OPS; jobs are keyed by JobIDRaw (Lustre's %j); "
                "outside_jobs by 'uid:<n>' (login-node and system traffic)",
        "jobs": per_job,
        "outside_jobs": outside,
        "classes": {
            label: {"entries": c["entries"], **_metrics(c["generated"]),
                    "lost_in_lustre": _metrics(c["lost"])}
            for label, c in sorted(classes.items())
        },
        "totals": {
            "generated": _metrics(gen_total),
            "lost_in_lustre": _metrics(lost_total),
            "visible": _metrics([g - x for g, x in zip(gen_total, lost_total, strict=True)]),
            "unread_at_end": _metrics(unread_at_end),
        },
        "resets_without_absence": ledger.resets_without_absence,
    }


def _shares(ledger: Ledger) -> dict[str, dict[str, float]]:
    """Share of entry appearances per id class among user (non-system) entries per kind."""
    out: dict[str, dict[str, float]] = {}
    for kind in ("MDT", "OST"):
        counts = {c: n for (k, c), n in ledger.appearances.items()
                  if k == kind and c != IdClass.SYSTEM.label}
        total = sum(counts.values()) or 1
        out[kind] = {c: round(n / total, 4) for c, n in sorted(counts.items())}
    return out


# --- the run (the only I/O) ------------------------------------------------------------------

def _write(path: Path, text: str) -> int:
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


def _window_events(rng: random.Random, active: list[Phase], w0: float, w1: float
                   ) -> list[Burst]:
    events: list[Burst] = []
    for p in active:
        events += bursts(rng, p, max(p.t0, w0), min(p.t1, w1))
    return events


def simulate(
    out_dir: Path,
    *,
    seed: int = 1,
    start: float,
    hours: float = 6,
    n_nodes: int = 64,
    n_oss: int = 4,
    n_users: int = 12,
    jobs_per_hour: float = 20,
    outage: bool = True,
    scenario: str = "default",
    oracle: bool = False,
) -> dict[str, Any]:
    """Simulate `hours` of a cluster from unix time `start` and write it under `out_dir`.

    Returns a summary: files (job_stats files written), jobs, entries (entry appearances in
    those files), bytes (size of everything written) and io_bytes (generated read+write).
    `out_dir` must not exist or be empty, so that no stale file from another run mixes in.
    With `oracle`, also OUT/oracle.jsonl: every increment printed under a `:uid:host` id, as
    [time, target, node, uid, owner job, read bytes, write bytes, metadata ops] (what the
    accuracy breakdown compares each ambiguous split with; attribution never reads it).
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    end = int(start + hours * 3600)
    slots = read_slots(start, end)
    if len(slots) < 3:
        raise ValueError("the simulated period must cover at least three reads")

    servers = plan_servers(random.Random(f"{seed}:servers"), n_oss, start)
    outages = plan_outages(random.Random(f"{seed}:outages"), servers, len(slots), outage)
    io_start, io_end = float(slots[0] + MAX_JITTER + 1), float(slots[-1])
    workload: Workload = build_workload(
        random.Random(f"{seed}:workload"), start=int(start), end=end, io_start=io_start,
        io_end=io_end, n_nodes=n_nodes, n_users=n_users, jobs_per_hour=jobs_per_hour,
        n_osts=2 * n_oss, scenario=scenario,
    )
    busy = tuple(sorted({nd for j in workload.jobs for nd in j.nodes}))
    plan = plan_ids(random.Random(f"{seed}:ids"), workload.nodes, io_start, io_end, busy=busy,
                    pinned=workload.nodes[0], pinned_at=workload.planted_at,
                    episodes_per_hour=SCENARIOS[scenario].episodes_per_hour,
                    leaky_jobs=SCENARIOS[scenario].leaky_jobs,
                    leaky_part=SCENARIOS[scenario].leaky_part)
    io_rng = random.Random(f"{seed}:io")
    jitter_rng = random.Random(f"{seed}:jitter")

    fs = FileSystem(servers)
    ledger = Ledger()
    out_dir.mkdir(parents=True, exist_ok=True)
    for s in servers:
        (out_dir / s.name).mkdir()
    files = entries = size = 0
    phases, next_phase, active = workload.phases, 0, []
    booked = Oracle(phases) if oracle else None
    for k, slot in enumerate(slots):
        w1 = slots[k + 1] if k + 1 < len(slots) else slot
        reads = [(slot + jitter_rng.randrange(0, MAX_JITTER + 1), s) for s in servers]
        while next_phase < len(phases) and phases[next_phase].t0 < w1:
            active.append(phases[next_phase])
            next_phase += 1
        active = [p for p in active if p.t1 > slot]
        # bursts before reads at equal times; the index keeps the sort away from the payloads
        events: list[tuple[float, int, int]] = []
        burst_list = _window_events(io_rng, active, slot, w1)
        events += [(b.t, 0, i) for i, b in enumerate(burst_list)]
        events += [(float(t), 1, i) for i, (t, _) in enumerate(reads)]
        events.sort()
        for t, is_read, i in events:
            if not is_read:
                b = burst_list[i]
                job_id, id_class = _printed_id(plan, b)
                owner = b.phase.job if b.phase.job is not None else f"uid:{b.phase.uid}"
                if booked is not None and isinstance(owner, int):
                    booked.book(b, t, fs.target(b.kind, b.ost).name, id_class)
                fs.target(b.kind, b.ost).log(t, job_id, id_class, owner, b.ops, b.reads,
                                             b.writes, ledger)
                continue
            read_time, server = reads[i]
            if _missed(outages, k, server.name):
                continue
            blocks = fs.read(server.name, read_time, ledger)
            text = render_read(
                render_target(param, ents, server.release, kind, boot_time=server.boot_time)
                for param, kind, ents in blocks
            )
            size += _write(out_dir / server.name / f"{read_time}.txt", text)
            files += 1
            entries += sum(len(ents) for _, _, ents in blocks)

    truth = truth_doc(workload.jobs, ledger, fs.unread_total())
    manifest = {
        "schema": 1,
        "parameters": {
            "seed": seed, "start": start, "hours": hours, "n_nodes": n_nodes, "n_oss": n_oss,
            "n_users": n_users, "jobs_per_hour": jobs_per_hour, "outage": outage,
            "scenario": scenario,
        },
        "fs": "scratch",
        "timezone": "UTC",
        "read_period": READ_PERIOD,
        "max_jitter": MAX_JITTER,
        "job_cleanup_interval": 600,
        "io_window": [io_start, io_end],
        "servers": [
            {"name": s.name, "release": s.release, "boot_time": s.boot_time,
             "targets": [t for t, _ in s.targets]}
            for s in servers
        ],
        "outages": [
            {"from": slots[first - 1], "to": slots[min(first + n, len(slots) - 1)],
             "missed_reads": n, "servers": list(names)}
            for first, n, names in outages
        ],
        "nodes": list(workload.nodes),
        "login_nodes": list(workload.login_nodes),
        "users": [{"name": u.name, "uid": u.uid, "accounts": list(u.accounts)}
                  for u in workload.users],
        "system_uids": {str(uid): name for uid, name in SYSTEM_USERS},
        "id_plan": {
            "fqdn_nodes": sorted(plan.fqdn_nodes),
            "job_only_nodes": sorted(plan.job_only_nodes),
            "job_uid_nodes": sorted(plan.job_uid_nodes),
            "job_missing_episodes": [
                {"from": e.t0, "to": e.t1, "nodes": len(e.nodes)} for e in plan.episodes
            ],
        },
        "id_class_shares": _shares(ledger),
        "counts": {"files": files, "jobs": len(workload.jobs), "entries": entries,
                   "phases": len(workload.phases)},
    }
    size += _write(out_dir / "sacct.txt", sacct_text(workload.jobs, end))
    if booked is not None:
        size += _write(out_dir / "oracle.jsonl", "\n".join(booked.lines(plan, fs)) + "\n")
    size += _write(out_dir / "truth.json", json.dumps(truth, indent=1, sort_keys=True) + "\n")
    size += _write(out_dir / "manifest.json",
                   json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    gen = truth["totals"]["generated"]
    return {
        "out_dir": str(out_dir),
        "files": files,
        "jobs": len(workload.jobs),
        "entries": entries,
        "bytes": size,
        "io_bytes": gen["read_bytes"] + gen["write_bytes"],
    }
