"""`jobio show` / `jobio JOBID`: a job's I/O, like sacct shows its accounting.

A finished job's figures are the stored results of attribution (job_io, written once by
`jobio attribute` or the mail reporter, revised when late data comes); a running job's, or a
finished one not attributed completely yet, are computed at call time by the same functions.
The JSON keeps every counter by its Lustre name; the tables humanise bytes.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from slurm_io.attribute.sql import JobInfo, attribute_job, data_complete_until, stored_job_io
from slurm_io.report.counters import human_bytes
from slurm_io.report.jobreport import JobReport, iso


def _iso(t: float | None) -> str | None:
    return iso(t)


def report(conn: psycopg.Connection, info: JobInfo, *, now: float | None = None,
           resolution: float = 120.0) -> JobReport:
    """The typed report of a job: stored figures for a finished job (computed when there
    are none yet, or new data came since), computed figures for a running one."""
    now = time.time() if now is None else now
    stored = stored_job_io(conn, info.job) if info.end is not None else None
    if stored is not None and (stored.complete or stored.current):
        return JobReport(info, stored.io, stored.complete, stored.revision, now,
                         lassi_summary(conn, info.job))
    io = attribute_job(conn, info.window, now=now, resolution=resolution)
    done_until = data_complete_until(conn)
    complete = (info.end is not None and done_until is not None and done_until >= info.end)
    return JobReport(info, io, complete, None, now, lassi_summary(conn, info.job))


def job_report(conn: psycopg.Connection, info: JobInfo, *, now: float | None = None,
               resolution: float = 120.0) -> dict[str, Any]:
    """`report(...)` at the edge: the JSON form (`jobio show --json`, the pages)."""
    return report(conn, info, now=now, resolution=resolution).as_json()


def lassi_summary(conn: psycopg.Connection, job: int) -> dict[str, Any] | None:
    """The job's stored LASSi hours, summarised (None when `jobio lassi compute` has not
    covered it); see slurm_io/lassi and docs/views.md."""
    from slurm_io.lassi.sql import job_lassi

    return job_lassi(conn, job)


def lassi_line(lassi: dict[str, Any] | None) -> list[str]:
    if not lassi:
        return []
    worst = ", ".join(f"{k} {v:.1f}" for k, v in list(lassi["risks_max"].items())[:3])
    return [f"  LASSi ({','.join(lassi['fs'])}, {lassi['hours']} h, {lassi['risky_hours']} "
            f"risky): risk_oss max {lassi['risk_oss_max']:.2f} mean "
            f"{lassi['risk_oss_mean']:.2f}, risk_mds max {lassi['risk_mds_max']:.2f} mean "
            f"{lassi['risk_mds_mean']:.2f}" + (f"; worst: {worst}" if worst else "")]


# -- human table -------------------------------------------------------------------------------
def _elapsed(s: int | None) -> str:
    if s is None:
        return "-"
    d, rem = divmod(int(s), 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{sec:02d}"


def _pct(part: dict[str, int], total: dict[str, int]) -> str:
    b = total.get("read_bytes", 0) + total.get("write_bytes", 0)
    p = part.get("read_bytes", 0) + part.get("write_bytes", 0)
    return f"{100 * p / b:.1f}%" if b else "-"


def render(r: dict[str, Any], *, targets: bool = False, timeline: bool = False) -> str:
    t = r["totals"]
    q = r["quality"]
    lines = [
        f"Job {r['jobid']} ({r['name'] or '-'})  user {r['user'] or r['uid']}  "
        f"state {r['state'] or '-'}{' (running: I/O so far)' if r['running'] else ''}",
        f"  nodes {len(r['nodes'])}: {','.join(r['nodes']) or '-'}",
        f"  start {r['start'] or '-'}  end {r['end'] or '-'}  elapsed {_elapsed(r['elapsed'])}",
        f"  read    {human_bytes(t.get('read_bytes', 0)):>12} in "
        f"{t.get('read_bytes_samples', 0):>10} requests   mean {_size(q['read_mean_size'])}"
        f"   small {_share(q['read_small_share'])}   read_kb_ops {_num(q['read_kb_ops'])}",
        f"  written {human_bytes(t.get('write_bytes', 0)):>12} in "
        f"{t.get('write_bytes_samples', 0):>10} requests   mean {_size(q['write_mean_size'])}"
        f"   small {_share(q['write_small_share'])}   write_kb_ops {_num(q['write_kb_ops'])}",
        f"  metadata ops {q['metadata_ops']}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(t.items())
                    if k not in ("read_bytes", "write_bytes", "read_bytes_samples",
                                 "write_bytes_samples", "read", "write") and v),
        f"  recovered from job-less ids {_pct(r['recovered'], t)}, "
        f"ambiguous (shared with the user's other jobs) {_pct(r['ambiguous'], t)} "
        f"(split by evidence {_pct(r.get('ambiguous_evidence', {}), t)}, "
        f"by time {_pct(r.get('ambiguous_time', {}), t)}), "
        f"split pro rata at the job's edges {_pct(r['split'], t)}"
        + ("" if r["complete"] or r["running"] else "  [collectors have not read past the "
           "job's end yet: figures may grow]")
        + (f"  [revised after late data: revision {r['revision']}]"
           if (r.get("revision") or 1) > 1 else ""),
    ]
    lines += lassi_line(r.get("lassi"))
    if targets:
        lines.append(f"  {'target':<22}{'read':>12}{'written':>12}{'meta ops':>10}")
        for name, c in r["by_target"].items():
            meta = sum(v for k, v in c.items() if not k.startswith(("read", "write")))
            lines.append(f"  {name:<22}{human_bytes(c.get('read_bytes', 0)):>12}"
                         f"{human_bytes(c.get('write_bytes', 0)):>12}{meta:>10}")
    if timeline:
        lines.append(f"  {'time':<21}{'read':>12}{'written':>12}{'meta ops':>10}")
        for ts, rb, wb, m in r["timeline"]:
            lines.append(f"  {_iso(ts):<21}{human_bytes(rb):>12}{human_bytes(wb):>12}{m:>10}")
    return "\n".join(lines)


def _size(n: int | None) -> str:
    return "-" if n is None else human_bytes(n)


def _share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


# -- sacct-like parsable output ----------------------------------------------------------------
FIELDS: dict[str, Any] = {
    "jobid": lambda r: r["jobid"],
    "jobidraw": lambda r: r["job"],
    "user": lambda r: r["user"],
    "uid": lambda r: r["uid"],
    "jobname": lambda r: r["name"],
    "account": lambda r: r["account"],
    "partition": lambda r: r["partition"],
    "state": lambda r: r["state"],
    "start": lambda r: r["start"],
    "end": lambda r: r["end"] or "Unknown",
    "elapsed": lambda r: _elapsed(r["elapsed"]),
    "nnodes": lambda r: len(r["nodes"]),
    "nodelist": lambda r: ",".join(r["nodes"]),
    "readbytes": lambda r: r["totals"].get("read_bytes", 0),
    "writebytes": lambda r: r["totals"].get("write_bytes", 0),
    "readreqs": lambda r: r["totals"].get("read_bytes_samples", 0),
    "writereqs": lambda r: r["totals"].get("write_bytes_samples", 0),
    "metaops": lambda r: r["quality"]["metadata_ops"],
    "readkbops": lambda r: r["quality"]["read_kb_ops"],
    "writekbops": lambda r: r["quality"]["write_kb_ops"],
    "recoveredbytes": lambda r: (r["recovered"].get("read_bytes", 0)
                                 + r["recovered"].get("write_bytes", 0)),
    "ambiguousbytes": lambda r: (r["ambiguous"].get("read_bytes", 0)
                                 + r["ambiguous"].get("write_bytes", 0)),
}
DEFAULT_FORMAT = "JobID,User,State,Elapsed,NNodes,ReadBytes,WriteBytes,MetaOps"


def parsable(reports: list[dict[str, Any]], fmt: str, *, header: bool = True) -> str:
    """`-P` output: `|`-separated, sacct's field names (case-insensitive), counters by
    Lustre name also accepted (e.g. `open`, `mkdir`)."""
    cols = [c.strip() for c in fmt.split(",") if c.strip()]
    getters = []
    for c in cols:
        key = c.lower()
        if key in FIELDS:
            getters.append(FIELDS[key])
        else:
            getters.append(lambda r, k=c: r["totals"].get(k, 0))
    out = ["|".join(cols)] if header else []
    for r in reports:
        out.append("|".join("" if (v := g(r)) is None else str(v) for g in getters))
    return "\n".join(out)


def unknown_fields(fmt: str, known_counters: set[str]) -> list[str]:
    return [c for c in (x.strip() for x in fmt.split(","))
            if c and c.lower() not in FIELDS and c not in known_counters]
