"""`jobio top`: who does the most I/O right now (or at a past moment), like lltop.

From the database only: the deltas of the newest collector interval at or before a moment,
grouped by job where the id names it; `:uid:host` deltas go to the jobs of that user on that
node by the attribution rules (slurm_io.attribute.core.share), and what no job claims is the
user's unattributed load, shown on the user's line with the login-node (`%e.%u`) load;
system ids are shown as load of their host; unrecoverable and empty ids as "nobody".

The interval: T = the newest ts_end at or before the moment; the deltas with ts_end in
(T - 0.9 interval, T]. Collectors read at the same aligned moments (a few seconds of jitter),
so this holds the last read of every server and never two reads of one.
"""

from __future__ import annotations

import pwd
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from slurm_io.attribute.core import DeltaRow, JobWindow, share
from slurm_io.lassi.sql import no_jit
from slurm_io.model import METADATA_OPS, IdClass
from slurm_io.text import display

SORT_KEYS = {"write": "write_bytes", "read": "read_bytes", "meta": "meta_ops", "reqs": "reqs"}
_META_SQL = " + ".join(f"coalesce(d.op_{op}, 0)" for op in sorted(METADATA_OPS))
WINDOW = 0.9  # of the collector interval (see the module doc)
MB = 1_000_000  # like the daily plots (and lltop's columns, in SI units)

# The main query: one row per (job, id class, uid, host[, interval of `:uid:host`, exe]).
TOP_SQL = (
    "SELECT d.job, d.id_class, d.uid, d.host_id, "
    "CASE WHEN d.id_class = 5 THEN extract(epoch FROM d.ts_start)::float8 END, "
    "CASE WHEN d.id_class = 5 THEN extract(epoch FROM d.ts_end)::float8 END, "
    "CASE WHEN d.id_class = 5 THEN extract(epoch FROM d.last_update)::float8 END, "
    "CASE WHEN d.id_class = 6 THEN d.raw_id END, "
    "coalesce(sum(d.write_bytes), 0)::float8, coalesce(sum(d.read_bytes), 0)::float8, "
    f"sum({_META_SQL})::float8, "
    "coalesce(sum(coalesce(d.read_bytes_samples, 0) + coalesce(d.write_bytes_samples, 0)), 0)"
    "::float8 "
    "FROM jobstats_delta d JOIN fs_target t USING (target_id) "
    "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s{filters} "
    "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8"
)
LATEST_SQL = ("SELECT max(d.ts_end) FROM jobstats_delta d JOIN fs_target t USING (target_id) "
              "WHERE d.ts_end > %(lo)s AND d.ts_end <= %(hi)s{filters}")


@dataclass
class Row:
    kind: str  # job, user, host, nobody
    key: Any
    label: str  # the JOB column
    user: str
    write_bytes: float = 0.0
    read_bytes: float = 0.0
    meta_ops: float = 0.0
    reqs: float = 0.0
    hosts: set[int] = field(default_factory=set)
    nodes: int | None = None  # allocated nodes of a job
    work_dir: str = ""

    def add(self, w: float, r: float, m: float, q: float, f: float = 1.0) -> None:
        self.write_bytes += w * f
        self.read_bytes += r * f
        self.meta_ops += m * f
        self.reqs += q * f


@dataclass
class Top:
    at: float | None  # end of the interval shown (None: no data at all)
    lo: float
    rows: list[Row]
    total: Row
    n_jobs: int
    n_other: int
    fs: str | None
    kind: str | None


def _filters(fs: str | None, kind: str | None) -> tuple[str, dict[str, Any]]:
    sql, args = "", {}
    if fs:
        sql += " AND t.fs = %(fs)s"
        args["fs"] = fs
    if kind:
        sql += " AND t.kind = %(kind)s"
        args["kind"] = kind
    return sql, args


def latest(conn: psycopg.Connection, at: float, *, fs: str | None = None,
           kind: str | None = None) -> float | None:
    """The newest ts_end at or before `at` (looking back 10 minutes, an hour, a day, then
    35 days: the BRIN index serves the short look-backs)."""
    sql, args = _filters(fs, kind)
    for back in (600.0, 3600.0, 86400.0, 35 * 86400.0):
        row = conn.execute(LATEST_SQL.format(filters=sql),
                           {**args, "lo": _ts(at - back), "hi": _ts(at)}).fetchone()
        if row and row[0] is not None:
            return row[0].timestamp()
    return None


def _ts(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _user_name(uid: int | None, names: dict[int, str]) -> str:
    if uid is None:
        return "-"
    if uid not in names:
        try:
            names[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            names[uid] = f"uid {uid}"
    return names[uid]


def top(conn: psycopg.Connection, *, at: float | None = None, interval: float = 120.0,
        fs: str | None = None, kind: str | None = None, user: str | None = None,
        sort: str = "write", limit: int | None = 20, now: float | None = None) -> Top:
    """The jobs, users and hosts of the newest interval at or before `at` (default now)."""
    now = time.time() if now is None else now
    at = now if at is None else at
    empty = Top(None, at, [], Row("total", None, "total", ""), 0, 0, fs, kind)
    hi = latest(conn, at, fs=fs, kind=kind)
    if hi is None:
        return empty
    lo = hi - WINDOW * interval
    sql, args = _filters(fs, kind)
    no_jit(conn)
    rows = conn.execute(TOP_SQL.format(filters=sql),
                        {**args, "lo": _ts(lo), "hi": _ts(hi)}).fetchall()
    jobs: dict[int, Row] = {}
    users: dict[int | None, Row] = {}
    hosts: dict[int, Row] = {}
    nobody = Row("nobody", None, "(nobody)", "-")
    total = Row("total", None, "total", "")
    missing = []
    job_uid: dict[int, int | None] = {}
    for job, cls, uid, host_id, t0, t1, last, raw, w, r, m, q in rows:
        total.add(w, r, m, q)
        if host_id is not None:
            total.hosts.add(host_id)
        if job is not None:
            row = jobs.setdefault(job, Row("job", job, str(job), ""))
            job_uid.setdefault(job, uid)
        elif cls == IdClass.JOB_MISSING and uid is not None and host_id is not None:
            missing.append((uid, host_id, t0, t1, last, w, r, m, q))
            continue
        elif cls in (IdClass.UNRECOVERABLE, IdClass.EMPTY) or uid is None:
            row = nobody
        elif cls == IdClass.SYSTEM and host_id is not None:
            row = hosts.setdefault(host_id, Row("host", host_id, "(system)", ""))
        else:
            row = users.setdefault(uid, Row("user", uid, "(no job)", ""))
            if raw and "." in raw:
                exe = raw.rsplit(".", 1)[0].strip('"')
                if exe and exe not in row.work_dir.split(","):
                    row.work_dir = ",".join(x for x in (row.work_dir, exe) if x)
        row.add(w, r, m, q)
        if host_id is not None:
            row.hosts.add(host_id)
    # `:uid:host` deltas: the jobs of that user on that node, pro rata, the rest to the user
    if missing:
        cands: dict[tuple[int, int], list[JobWindow]] = defaultdict(list)
        for host_id, j, uid, nodes, st, en in conn.execute(
                "SELECT jn.host_id, j.job, j.uid, j.nodes, "
                "extract(epoch FROM j.start_time)::float8, extract(epoch FROM j.end_time)::float8"
                " FROM job_node jn JOIN job j USING (job) WHERE jn.host_id = ANY(%s) "
                "AND jn.uid = ANY(%s) AND jn.start_time < %s "
                "AND coalesce(jn.end_time, 'infinity') > %s",
                (sorted({x[1] for x in missing}), sorted({x[0] for x in missing}), _ts(hi),
                 _ts(min(x[2] for x in missing)))):
            cands[(host_id, uid)].append(JobWindow(j, uid, tuple(nodes or ()), st, en))
        for uid, host_id, t0, t1, last, w, r, m, q in missing:
            d = DeltaRow(t0, t1, last, "", None, int(IdClass.JOB_MISSING), None, uid, {}, {})
            given = 0.0
            for jw in cands.get((host_id, uid), []):
                f = share(d, jw, cands[(host_id, uid)], now).fraction
                if f > 0:
                    row = jobs.setdefault(jw.job, Row("job", jw.job, str(jw.job), ""))
                    job_uid.setdefault(jw.job, uid)
                    row.add(w, r, m, q, f)
                    row.hosts.add(host_id)
                    given += f
            if given < 1.0 - 1e-9:
                row = users.setdefault(uid, Row("user", uid, "(no job)", ""))
                row.add(w, r, m, q, 1.0 - min(1.0, given))
                row.hosts.add(host_id)
    _describe(conn, jobs, job_uid, users, hosts)
    out: list[Row] = [*jobs.values(), *users.values(), *hosts.values()]
    if nobody.write_bytes or nobody.read_bytes or nobody.meta_ops or nobody.reqs:
        out.append(nobody)
    if user is not None:
        out = [x for x in out if x.user == user]
    key = SORT_KEYS[sort]
    out.sort(key=lambda x: (-getattr(x, key), -(x.write_bytes + x.read_bytes), x.label))
    return Top(hi, lo, out[:limit] if limit else out, total, len(jobs),
               len(users) + len(hosts), fs, kind)


def _describe(conn: psycopg.Connection, jobs: dict[int, Row], job_uid: dict[int, int | None],
              users: dict[int | None, Row], hosts: dict[int, Row]) -> None:
    """Fill in display ids, user names, node counts, work dirs and host names."""
    names: dict[int, str] = {}
    if jobs:
        for job, jobid, uid, uname, nodes, work_dir in conn.execute(
                "SELECT job, jobid, uid, user_name, nodes, work_dir FROM job "
                "WHERE job = ANY(%s)", (list(jobs),)):
            row = jobs[job]
            row.label = jobid
            row.nodes = len(nodes or ()) or None
            row.work_dir = work_dir or ""
            if uid is not None and uname:
                names[uid] = uname
            job_uid[job] = uid if uid is not None else job_uid.get(job)
    uids = [u for u in {*job_uid.values(), *users} if u is not None and u not in names]
    if uids:
        for uid, uname in conn.execute(
                "SELECT DISTINCT ON (uid) uid, user_name FROM job WHERE uid = ANY(%s) "
                "AND user_name IS NOT NULL ORDER BY uid, start_time DESC", (uids,)):
            names[uid] = uname
    for job, row in jobs.items():
        row.user = _user_name(job_uid.get(job), names)
    for uid, row in users.items():
        row.user = _user_name(uid, names)
    ids = sorted({h for r in [*jobs.values(), *users.values(), *hosts.values()]
                  for h in r.hosts})
    host_names = dict(conn.execute("SELECT host_id, name FROM host WHERE host_id = ANY(%s)",
                                   (ids,)).fetchall()) if ids else {}
    for host_id, row in hosts.items():
        row.user = host_names.get(host_id, f"host {host_id}")


# -- rendering ---------------------------------------------------------------------------------
HEADER = ("JOBID", "USER", "WRITE_MB", "READ_MB", "META_OPS", "REQS", "NODES", "WORK_DIR")


def _fmt_mb(n: float) -> str:
    return f"{n / MB:.1f}"


def render(t: Top, *, width: int | None = None) -> str:
    if t.at is None:
        where = " ".join(x for x in (t.fs or "", t.kind or "") if x)
        return f"jobio top: no I/O stored{' for ' + where if where else ''} at or before " \
               f"{datetime.fromtimestamp(t.lo).isoformat(timespec='seconds')}"
    span = t.at - t.lo
    secs = max(1.0, span / WINDOW)
    tot = t.total
    head = (f"jobio top  {t.fs or 'all filesystems'}{' ' + t.kind if t.kind else ''}  "
            f"{datetime.fromtimestamp(t.at).isoformat(timespec='seconds')}  "
            f"(interval {secs:.0f} s)  {t.n_jobs} jobs, {t.n_other} users/hosts outside jobs, "
            f"{len(tot.hosts)} nodes")
    rates = (f"  total: write {tot.write_bytes / MB / secs:.1f} MB/s, read "
             f"{tot.read_bytes / MB / secs:.1f} MB/s, {tot.meta_ops / secs:.0f} metadata ops/s, "
             f"{tot.reqs / secs:.0f} requests/s   (MB = 10^6 bytes, moved in the interval)")
    lines = [head, rates, "",
             f"{HEADER[0]:<14}{HEADER[1]:<12}{HEADER[2]:>10}{HEADER[3]:>10}{HEADER[4]:>10}"
             f"{HEADER[5]:>10}{HEADER[6]:>7}  {HEADER[7]}"]
    for r in t.rows:
        nodes = r.nodes if r.nodes is not None else (len(r.hosts) or "-")
        # user-chosen text (work dirs, names) cannot drive the admin's terminal
        lines.append(f"{display(r.label)[:13]:<14}{display(r.user)[:11]:<12}"
                     f"{_fmt_mb(r.write_bytes):>10}"
                     f"{_fmt_mb(r.read_bytes):>10}{r.meta_ops:>10.0f}{r.reqs:>10.0f}"
                     f"{nodes:>7}  {display(r.work_dir or '-')}")
    if width:
        lines = [ln[:width] for ln in lines]
    return "\n".join(lines)


def as_json(t: Top) -> dict[str, Any]:
    return {
        "at": t.at, "from": t.lo, "fs": t.fs, "kind": t.kind,
        "rows": [{"kind": r.kind, "jobid": r.label if r.kind == "job" else None,
                  "user": r.user, "write_bytes": round(r.write_bytes),
                  "read_bytes": round(r.read_bytes), "meta_ops": round(r.meta_ops),
                  "reqs": round(r.reqs),
                  "nodes": r.nodes if r.nodes is not None else len(r.hosts),
                  "work_dir": r.work_dir or None} for r in t.rows],
        "total": {"write_bytes": round(t.total.write_bytes),
                  "read_bytes": round(t.total.read_bytes),
                  "meta_ops": round(t.total.meta_ops), "reqs": round(t.total.reqs)},
    }
