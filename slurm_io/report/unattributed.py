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
from datetime import UTC, datetime
from typing import Any

import psycopg

from slurm_io.attribute.core import JobWindow, share
from slurm_io.attribute.sql import DELTA_SELECT, delta_rows
from slurm_io.model import METADATA_OPS, IdClass

KEYS = ("read_bytes", "write_bytes", "metadata_ops")


def _fold(counters: dict[str, int], f: float = 1.0) -> dict[str, float]:
    return {
        "read_bytes": counters.get("read_bytes", 0) * f,
        "write_bytes": counters.get("write_bytes", 0) * f,
        "metadata_ops": sum(v for k, v in counters.items() if k in METADATA_OPS) * f,
    }


def _add(dst: dict[str, float], src: dict[str, float]) -> None:
    for k, v in src.items():
        dst[k] = dst.get(k, 0.0) + v


def split(conn: psycopg.Connection, start: float, end: float, *, now: float) -> dict[str, Any]:
    s, e = datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    by_user: dict[str, dict[str, float]] = defaultdict(dict)
    by_host: dict[str, dict[str, float]] = defaultdict(dict)
    total: dict[str, float] = {}
    known = {r[0] for r in conn.execute(
        "SELECT DISTINCT d.job FROM jobstats_delta d JOIN job j ON j.job_raw = d.job "
        "WHERE d.ts_end > %s AND d.ts_end <= %s", (s, e))}
    users = dict(conn.execute("SELECT DISTINCT uid, user_name FROM job "
                              "WHERE uid IS NOT NULL").fetchall())
    missing = []
    with conn.cursor() as cur:
        cur.execute(DELTA_SELECT + "WHERE d.ts_end > %s AND d.ts_end <= %s", (s, e))
        for d in delta_rows(cur):
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
        for job, uid, nodes, st, en in conn.execute(
                "SELECT job, uid, nodes, extract(epoch FROM start_time)::float8, "
                "extract(epoch FROM end_time)::float8 FROM job "
                "WHERE start_time < %s AND coalesce(end_time, 'infinity') > %s "
                "AND uid IS NOT NULL",
                (datetime.fromtimestamp(max(x.ts_end for x in missing), UTC),
                 datetime.fromtimestamp(min(x.ts_start for x in missing), UTC))):
            w = JobWindow(job, uid, tuple(nodes or ()), st, en)
            for n in w.nodes:
                cand[(n, uid)].append(w)
    for d in missing:
        jobs = cand.get((d.node or "", d.uid or -1), [])
        f = sum(share(d, j, jobs, now).fraction for j in jobs)
        f = min(1.0, f)
        _add(groups["recovered"], _fold(d.counters, f))
        _add(groups["unclaimed_job_missing"], _fold(d.counters, 1.0 - f))

    def ints(d: dict[str, float]) -> dict[str, int]:
        return {k: round(d.get(k, 0.0)) for k in KEYS}

    return {
        "total": ints(total),
        **{k: ints(groups.get(k, {})) for k in ("jobs", "recovered", "unclaimed_job_missing",
                                                 "unknown_job_ids", "nobody")},
        "by_user": {u: ints(v) for u, v in sorted(by_user.items())},
        "by_host": {h: ints(v) for h, v in sorted(by_host.items())},
    }


def render(a: dict[str, Any]) -> str:
    from slurm_io.report.counters import human_bytes
    from slurm_io.text import display

    def line(label: str, d: dict[str, int]) -> str:
        return (f"  {label:<28}{human_bytes(d['read_bytes']):>12}"
                f"{human_bytes(d['write_bytes']):>12}{d['metadata_ops']:>12}")

    out = [f"  {'where the I/O went':<28}{'read':>12}{'written':>12}{'meta ops':>12}"]
    for k in ("jobs", "recovered", "unclaimed_job_missing", "unknown_job_ids", "nobody"):
        out.append(line(k.replace("_", " "), a[k]))
    users = a["by_user"]
    hosts = a["by_host"]
    out.append(line(f"users outside jobs ({len(users)})", {
        k: sum(v[k] for v in users.values()) for k in KEYS}))
    out.append(line(f"system load of hosts ({len(hosts)})", {
        k: sum(v[k] for v in hosts.values()) for k in KEYS}))
    out.append(line("total", a["total"]))
    top = sorted(users.items(), key=lambda kv: -(kv[1]["read_bytes"] + kv[1]["write_bytes"]))
    if top:
        out.append("  top users outside jobs: " + ", ".join(
            f"{display(str(u))} {human_bytes(v['read_bytes'] + v['write_bytes'])}"
            for u, v in top[:5]))
    return "\n".join(out)
