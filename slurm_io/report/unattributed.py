"""Where the stored I/O of a time range went: jobs, or unattributed load of users/hosts/nobody.

The invariant an admin can check: for every counter,
  jobs + recovered + unclaimed job-missing + unknown job ids + users + hosts + nobody = total.

* jobs: deltas whose id names a job known to Slurm;
* unknown_job_ids: ids naming a job Slurm does not know (not synced yet, or damaged ids such
  as a duplicated digit, `113178544`): kept apart, never silently given to a job;
* recovered: the shares of `:uid:host` deltas that attribution gives to jobs;
* unclaimed_job_missing: the rest of those deltas (no job of that uid on that node then);
* by_user: login `%e.%u` load and system uids without a host, per uid;
* by_host: system-uid load that names a host (`:0:node012`), per host;
* nobody: unrecoverable and empty ids.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from slurm_io.attribute.core import JobWindow, share
from slurm_io.model import METADATA_OPS, IdClass
from slurm_io.report import sql as q

if TYPE_CHECKING:
    from psycopg import Connection

KEYS = ("read_bytes", "write_bytes", "metadata_ops")
GROUPS = ("jobs", "recovered", "unclaimed_job_missing", "unknown_job_ids", "nobody")

Figures = dict[str, int]
"""read_bytes, write_bytes and metadata_ops (KEYS), rounded."""


@dataclass(frozen=True)
class LoadSplit:
    """Where the stored I/O of a time range went (the module docstring says each part)."""

    total: Figures
    jobs: Figures
    recovered: Figures
    unclaimed_job_missing: Figures
    unknown_job_ids: Figures
    nobody: Figures
    by_user: dict[str, Figures]
    by_host: dict[str, Figures]

    def group(self, name: str) -> Figures:
        """One of GROUPS by name."""
        return dict(getattr(self, name))

    def as_json(self) -> dict[str, Any]:
        """The JSON document (`jobio usage --attribution --json`, the read service)."""
        return {"total": dict(self.total), **{k: self.group(k) for k in GROUPS},
                "by_user": {u: dict(v) for u, v in self.by_user.items()},
                "by_host": {h: dict(v) for h, v in self.by_host.items()}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LoadSplit:
        """The record of a document `as_json` made (a read service's answer)."""
        return cls(dict(d["total"]), *(dict(d[k]) for k in GROUPS),
                   {u: dict(v) for u, v in d["by_user"].items()},
                   {h: dict(v) for h, v in d["by_host"].items()})


def _fold(counters: dict[str, int], f: float = 1.0) -> dict[str, float]:
    return {
        "read_bytes": counters.get("read_bytes", 0) * f,
        "write_bytes": counters.get("write_bytes", 0) * f,
        "metadata_ops": sum(v for k, v in counters.items() if k in METADATA_OPS) * f,
    }


def _add(dst: dict[str, float], src: dict[str, float]) -> None:
    for k, v in src.items():
        dst[k] = dst.get(k, 0.0) + v


def split(conn: Connection, start: float, end: float, *, now: float) -> LoadSplit:
    """The deltas with ts_end in (start, end] divided between jobs, users, hosts and nobody;
    `:uid:host` deltas as attribution at `now` would share them."""
    s, e = datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    by_user: dict[str, dict[str, float]] = defaultdict(dict)
    by_host: dict[str, dict[str, float]] = defaultdict(dict)
    total: dict[str, float] = {}
    known = q.jobs_named_between(conn, s, e)
    users = q.user_names_by_uid(conn)
    missing = []
    for d in q.deltas_between(conn, s, e):
        v = _fold(d.counters)
        _add(total, v)
        cls = IdClass(d.id_class)
        if d.job is not None:
            _add(groups["jobs" if d.job in known else "unknown_job_ids"], v)
        elif cls == IdClass.JOB_MISSING:
            missing.append(d)
        elif cls in (IdClass.UNRECOVERABLE, IdClass.EMPTY) or d.uid is None:
            _add(groups["nobody"], v)
        elif cls == IdClass.SYSTEM and d.node:
            _add(by_host[d.node], v)
        else:
            _add(by_user[users.get(d.uid) or f"uid {d.uid}"], v)
    # job-missing deltas: what attribution would give to jobs, the rest stays with the user
    cand: dict[tuple[str, int], list[JobWindow]] = defaultdict(list)
    if missing:
        for j in q.uid_jobs_overlapping(
                conn, datetime.fromtimestamp(min(x.ts_start for x in missing), UTC),
                datetime.fromtimestamp(max(x.ts_end for x in missing), UTC)):
            w = JobWindow(j.job, j.uid, j.nodes, j.start, j.end)
            for n in w.nodes:
                cand[(n, j.uid)].append(w)
    for d in missing:
        jobs = cand.get((d.node or "", d.uid or -1), [])
        f = sum(share(d, j, jobs, now).fraction for j in jobs)
        f = min(1.0, f)
        _add(groups["recovered"], _fold(d.counters, f))
        _add(groups["unclaimed_job_missing"], _fold(d.counters, 1.0 - f))

    def ints(d: dict[str, float]) -> Figures:
        return {k: round(d.get(k, 0.0)) for k in KEYS}

    return LoadSplit(ints(total), *(ints(groups.get(k, {})) for k in GROUPS),
                     {u: ints(v) for u, v in sorted(by_user.items())},
                     {h: ints(v) for h, v in sorted(by_host.items())})


def render(a: LoadSplit) -> str:
    """A few lines: each group, users and hosts in all, the total, the top users."""
    from slurm_io.report.counters import human_bytes
    from slurm_io.text import display

    def line(label: str, d: dict[str, int]) -> str:
        return (f"  {label:<28}{human_bytes(d['read_bytes']):>12}"
                f"{human_bytes(d['write_bytes']):>12}{d['metadata_ops']:>12}")

    out = [f"  {'where the I/O went':<28}{'read':>12}{'written':>12}{'meta ops':>12}"]
    for k in GROUPS:
        out.append(line(k.replace("_", " "), a.group(k)))
    users = a.by_user
    hosts = a.by_host
    out.append(line(f"users outside jobs ({len(users)})", {
        k: sum(v[k] for v in users.values()) for k in KEYS}))
    out.append(line(f"system load of hosts ({len(hosts)})", {
        k: sum(v[k] for v in hosts.values()) for k in KEYS}))
    out.append(line("total", a.total))
    top = sorted(users.items(), key=lambda kv: -(kv[1]["read_bytes"] + kv[1]["write_bytes"]))
    if top:
        out.append("  top users outside jobs: " + ", ".join(
            f"{display(str(u))} {human_bytes(v['read_bytes'] + v['write_bytes'])}"
            for u, v in top[:5]))
    return "\n".join(out)
