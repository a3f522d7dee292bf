"""The load of one collector interval, attributed, with every counter: what `jobio top`, the
exporter and the alerts group and rank.

One query reads the interval's deltas summed per (job, id class, uid, host, filesystem[,
`:uid:host` interval, login executable]) with all counters (`report.counters.SUM_COLUMNS`);
`:uid:host` deltas are then shared among the jobs of that user on that node by the
attribution rules (slurm_io.attribute.core.share, pro rata) and what no job claims stays the
user's. The result is a list of `Part`s, each a vector of counters with its owner, which
`group()` adds up by job, user, account, host or filesystem. Pure from `parts()` on.

The interval: T = the newest ts_end at or before the moment; the deltas with ts_end in
(T - 0.9 interval, T] (see report/top.py: the last read of every server, never two). T is
taken from the collectors' newest batch where the rows read confirm it (`_newest_interval`).
"""

from __future__ import annotations

import pwd
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slurm_io.attribute import ranges
from slurm_io.attribute.core import DeltaRow, JobWindow, share
from slurm_io.attribute.evidence import effective, run_of
from slurm_io.attribute.live import interval_shares
from slurm_io.model import METADATA_OPS, IdClass
from slurm_io.report import sql as q
from slurm_io.report.counters import SUM_COLUMNS
from slurm_io.report.sql import JobMeta
from slurm_io.store.rows import parse_target_name
from slurm_io.store.sqlutil import no_jit

if TYPE_CHECKING:
    from psycopg import Connection

COUNTERS: tuple[str, ...] = tuple(SUM_COLUMNS)  # read_bytes, read_bytes_samples, ..., open, ...
_IDX = {name: i for i, name in enumerate(COUNTERS)}
_META_IDX = tuple(_IDX[op] for op in sorted(METADATA_OPS) if op in _IDX)
_REQ_IDX = (_IDX["read_bytes_samples"], _IDX["write_bytes_samples"])
# short names of the usual sort keys, as in lltop/glljobstat
ALIASES = {"write": "write_bytes", "read": "read_bytes", "meta": "meta_ops", "reqs": "reqs"}
DERIVED = ("meta_ops", "reqs")
SORT_KEYS: tuple[str, ...] = (*ALIASES, *DERIVED, *COUNTERS)
GROUPS = ("job", "user", "account", "host", "fs")
WINDOW = 0.9
LOOK_BACK = 180.0  # the guess from ingest_batch: within q.latest's first look-back


@dataclass
class Part:
    """Counters of one owner on one host and filesystem in the interval."""

    kind: str  # job, user (unattributed, outside jobs), system (a host's system ids), nobody
    job: int | None
    uid: int | None
    host_id: int | None
    fs: str
    exe: str | None
    values: Sequence[float]
    hosts: frozenset[int] = frozenset()  # a job's part over several hosts (host_id None)


@dataclass
class Load:
    at: float | None  # end of the interval (None: no data at or before the moment)
    lo: float
    interval: float
    parts: list[Part]
    jobs: dict[int, JobMeta]
    users: dict[int, str]
    hosts: dict[int, str]
    # job -> [its share of the interval's ambiguous `:uid:host` deltas (read, write, meta
    # ops), then all of the ones it was a candidate for]: what its range comes from
    # (attribute.ranges; `span`)
    shared: dict[int, list[float]] = field(default_factory=dict)
    # whether every part is of one host (else a job's part spans its hosts: no view by host)
    per_host: bool = True


def value(values: Sequence[float], key: str) -> float:
    """A counter by name (or alias), or a derived one: meta_ops, reqs."""
    key = ALIASES.get(key, key)
    if key == "meta_ops":
        return sum(values[i] for i in _META_IDX)
    if key == "reqs":
        return values[_REQ_IDX[0]] + values[_REQ_IDX[1]]
    return values[_IDX[key]]


def load(conn: Connection, *, at: float | None = None, interval: float = 120.0,
         fs: str | None = None, kind: str | None = None, now: float | None = None,
         per_host: bool = True) -> Load:
    """The attributed load of the newest interval at or before `at` (default now). Without
    `per_host`, a job's load is one part per uid and filesystem over all its hosts: the same
    figures by job, user, account and filesystem, from a fraction of the parts (a site's
    interval: ~37,000 per host, bench/README.md), but no view by host."""
    now = time.time() if now is None else now
    at = now if at is None else at
    q.prefer_index(conn)
    no_jit(conn)
    rows, hi = _newest_interval(conn, at, interval, fs, kind, per_host)
    if hi is None:
        return Load(None, at, interval, [], {}, {}, {}, per_host=per_host)
    lo = hi - WINDOW * interval
    parts: list[Part] = []
    shared: dict[int, list[float]] = {}
    missing: list[tuple[Any, ...]] = []
    for job, cls, uid, host_id, fsname, t0, t1, last, raw, vals, on in rows:
        if job is not None:
            parts.append(Part("job", job, uid, host_id, fsname, None, vals, frozenset(on)))
        elif cls == IdClass.JOB_MISSING and uid is not None and host_id is not None:
            missing.append((uid, host_id, fsname, t0, t1, last, vals))
        elif cls in (IdClass.UNRECOVERABLE, IdClass.EMPTY) or uid is None:
            parts.append(Part("nobody", None, None, host_id, fsname, None, vals))
        elif cls == IdClass.SYSTEM and host_id is not None:
            parts.append(Part("system", None, uid, host_id, fsname, None, vals))
        else:
            exe = raw.rsplit(".", 1)[0].strip('"') if raw and "." in raw else None
            parts.append(Part("user", None, uid, host_id, fsname, exe or None, vals))
    if missing:
        parts += _share_missing(conn, missing, lo, hi, now, fs, kind, shared)
    jobs = q.job_meta(conn, sorted({p.job for p in parts if p.job is not None}))
    uids = {p.uid for p in parts if p.uid is not None} | \
        {m.uid for m in jobs.values() if m.uid is not None}
    users = {m.uid: m.user for m in jobs.values() if m.uid is not None and m.user}
    users.update(q.user_names(conn, sorted(uids - set(users))))
    for uid in uids - set(users):
        try:
            users[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            users[uid] = f"uid {uid}"
    hosts = q.host_names(conn, sorted({p.host_id for p in parts if p.host_id is not None}))
    return Load(hi, lo, interval, parts, jobs, users, hosts, shared, per_host)


def _newest_interval(conn: Connection, at: float, interval: float, fs: str | None,
                     kind: str | None, per_host: bool
                     ) -> tuple[list[q.IntervalRow], float | None]:
    """The rows of the interval ending at T, the newest ts_end at or before `at` (None: no
    data), in one read where the collectors' newest batch names T: the deltas of (guess -
    window, at] are read, and they are T's interval exactly when their newest ts_end is the
    guess (none after it). Otherwise (no batch rows to read, a user's role, rows written
    without a batch) T is looked up in the deltas first (q.latest), as it always was."""
    guess = q.newest_read(conn, at, LOOK_BACK)
    if guess is not None:
        rows, newest = q.interval_newest(conn, guess - WINDOW * interval, at, fs=fs,
                                         kind=kind, per_host=per_host)
        if newest == guess:
            return rows, guess
    hi = q.latest(conn, at, fs=fs, kind=kind)
    if hi is None:
        return [], None
    return q.interval_rows(conn, hi - WINDOW * interval, hi, fs=fs, kind=kind,
                           per_host=per_host), hi


def _share_missing(conn: Connection, missing: list[tuple[Any, ...]], lo: float,
                   hi: float, now: float, fs: str | None, kind: str | None,
                   spans: dict[int, list[float]]) -> list[Part]:
    """The interval's `:uid:host` load given to the jobs of the uid on that host. Where one
    job can own it, it is that job's (the rule is the same with or without evidence); where
    several can, the deltas of that user and host are split one by one by the attribution
    rules (attribute.live: evidence, else time), per facet, and `spans` receives what
    each candidate was given of them and what it may own (Load.shared)."""
    cands: dict[tuple[int, int], list[JobWindow]] = defaultdict(list)
    for c in q.candidate_jobs(conn, sorted({(x[1], x[0]) for x in missing}),
                              min(x[3] for x in missing), hi):
        cands[(c.host_id, c.uid)].append(JobWindow(c.job, c.uid, c.nodes, c.start, c.end))
    shared: list[tuple[list[Part], tuple[int, int]]] = []
    ambiguous: dict[tuple[int, int], list[JobWindow]] = {}
    for uid, host_id, fsname, t0, t1, last, vals in missing:
        d = DeltaRow(t0, t1, last, "", None, int(IdClass.JOB_MISSING), None, uid, {}, {})
        given = 0.0
        parts = []
        for jw in cands.get((host_id, uid), []):
            sh = share(d, jw, cands[(host_id, uid)], now)
            if sh.fraction > 0:
                parts.append(Part("job", jw.job, uid, host_id, fsname, None,
                                  [v * sh.fraction for v in vals]))
                given += sh.fraction
            if sh.ambiguous:
                ambiguous[(host_id, uid)] = cands[(host_id, uid)]
        eff = effective(d)
        if sum(ranges.touches(eff, run_of(jw, now)) for jw in cands.get((host_id, uid), [])) > 1:
            # another job's run meets the interval at an edge: the range sees it shared
            ambiguous[(host_id, uid)] = cands[(host_id, uid)]
        if given < 1.0 - 1e-9:
            rest = 1.0 - min(1.0, given)
            parts.append(Part("user", None, uid, host_id, fsname, None, [v * rest for v in vals]))
        shared.append((parts, (host_id, uid)))
    out = [p for parts, pair in shared if pair not in ambiguous for p in parts]
    for host_id, d, fractions in interval_shares(conn, ambiguous, lo, hi, now):
        t_fs, t_kind, _ = parse_target_name(d.target)
        if (fs and t_fs != fs) or (kind and t_kind != kind):
            continue
        taken = [0.0, 0.0, 0.0]
        amounts = ranges.amounts(d.counters) if len(fractions) > 1 else None
        for job, f in fractions.items():
            if amounts is not None:  # several candidates: any of them may own all of it
                s = spans.setdefault(job, [0.0] * 6)
                for i, x in enumerate(amounts):
                    s[i] += x * f[i]
                    s[3 + i] += x
            if not any(f):
                continue
            out.append(Part("job", job, d.uid, host_id, t_fs, None, _vector(d, f)))
            taken = [a + b for a, b in zip(taken, f, strict=True)]
        rest = (max(0.0, 1.0 - taken[0]), max(0.0, 1.0 - taken[1]), max(0.0, 1.0 - taken[2]))
        left = _vector(d, rest) if any(x > 1e-9 for x in rest) else []
        if any(left):
            out.append(Part("user", None, d.uid, host_id, t_fs, None, left))
    return out


_FACET = {name: ("read" if name.startswith("read_bytes") else
                 "write" if name.startswith("write_bytes") else "ops") for name in COUNTERS}
_FACET_I = {"read": 0, "write": 1, "ops": 2}


def _vector(d: DeltaRow, f: tuple[float, float, float]) -> list[float]:
    """The delta's counters in COUNTERS order, each times its facet's fraction."""
    values = [0.0] * len(COUNTERS)
    for name, v in d.counters.items():
        i = _IDX.get(name)
        if i is not None:
            values[i] = v * f[_FACET_I[_FACET[name]]]
    return values


# -- grouping (pure) ---------------------------------------------------------------------------
@dataclass
class Group:
    """One line of a grouped view."""

    kind: str  # job, user, system, nobody (group job); user, account, host, fs otherwise
    key: Any
    label: str  # the first column
    user: str
    values: list[float] = field(default_factory=lambda: [0.0] * len(COUNTERS))
    hosts: set[int] = field(default_factory=set)
    jobs: set[int] = field(default_factory=set)
    nodes: int | None = None
    account: str = ""
    name: str = ""
    work_dir: str = ""

    def add(self, p: Part) -> None:
        for i, v in enumerate(p.values):
            if v:
                self.values[i] += v
        if p.host_id is not None:
            self.hosts.add(p.host_id)
        if p.hosts:
            self.hosts |= p.hosts
        if p.job is not None:
            self.jobs.add(p.job)

    def get(self, key: str) -> float:
        return value(self.values, key)

    @property
    def write_bytes(self) -> float:
        return self.get("write_bytes")

    @property
    def read_bytes(self) -> float:
        return self.get("read_bytes")

    @property
    def meta_ops(self) -> float:
        return self.get("meta_ops")

    @property
    def reqs(self) -> float:
        return self.get("reqs")


def _user(ld: Load, uid: int | None) -> str:
    return "-" if uid is None else ld.users.get(uid, f"uid {uid}")


def owner(ld: Load, p: Part) -> str:
    """The user name of a part (its job's user for job parts)."""
    return _user(ld, _job_uid(ld, p))


def _job_uid(ld: Load, p: Part) -> int | None:
    m = ld.jobs.get(p.job) if p.job is not None else None
    return m.uid if m is not None and m.uid is not None else p.uid


def group(ld: Load, by: str = "job") -> list[Group]:
    """The interval's parts added up by job (with users, hosts and nobody outside jobs, as
    lltop), user, account, host or filesystem."""
    if by not in GROUPS:
        raise ValueError(f"group by one of {', '.join(GROUPS)}")
    if by == "host" and not ld.per_host:
        raise ValueError("a view by host needs the load per host (load(per_host=True))")
    out: dict[Any, Group] = {}
    for p in ld.parts:
        if by == "job":
            key: Any = (p.kind, p.job if p.kind == "job" else
                        p.host_id if p.kind == "system" else p.uid)
            g = out.get(key)
            if g is None:
                g = out[key] = _job_line(ld, p)
            if p.kind == "user" and p.exe and p.exe not in g.work_dir.split(","):
                g.work_dir = ",".join(x for x in (g.work_dir, p.exe) if x)
        elif by == "user":
            uid = _job_uid(ld, p) if p.kind != "nobody" else None
            g = out.get(uid) or out.setdefault(uid, Group("user", uid, _user(ld, uid)
                                                      if uid is not None else "(nobody)", ""))
        elif by == "account":
            m = ld.jobs.get(p.job) if p.job is not None else None
            acct = (m.account or "(none)") if m is not None else \
                "(no job)" if p.kind != "nobody" else "(nobody)"
            g = out.get(acct) or out.setdefault(acct, Group("account", acct, acct, ""))
        elif by == "host":
            name = ld.hosts.get(p.host_id, f"host {p.host_id}") if p.host_id is not None \
                else "(no host)"
            g = out.get(name) or out.setdefault(name, Group("host", name, name, ""))
        else:
            g = out.get(p.fs) or out.setdefault(p.fs, Group("fs", p.fs, p.fs, ""))
        g.add(p)
    groups = list(out.values())
    for g in groups:
        if by in ("user", "account", "host", "fs"):
            g.user = f"{len(g.jobs)} jobs"
            g.nodes = len(g.hosts) or None
    return groups


def _job_line(ld: Load, p: Part) -> Group:
    if p.kind == "job":
        assert p.job is not None
        m = ld.jobs.get(p.job)
        uid = m.uid if m is not None and m.uid is not None else p.uid
        return Group("job", p.job, m.jobid if m else str(p.job), _user(ld, uid),
                     nodes=m.nodes if m else None, account=(m.account or "") if m else "",
                     name=(m.name or "") if m else "", work_dir=(m.work_dir or "") if m else "")
    if p.kind == "system":
        return Group("system", p.host_id, "(system)",
                     ld.hosts.get(p.host_id, f"host {p.host_id}") if p.host_id is not None
                     else "-")
    if p.kind == "nobody":
        return Group("nobody", None, "(nobody)", "-")
    return Group("user", p.uid, "(no job)", _user(ld, p.uid))


def span(ld: Load, g: Group) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """A job line's least and most (read bytes, write bytes, metadata operations) over the
    interval (attribute.ranges): its figures without its shares of the ambiguous deltas,
    and with all of each it was a candidate for."""
    fig = (g.read_bytes, g.write_bytes, g.meta_ops)
    s = ld.shared.get(g.key) if g.kind == "job" else None
    if s is None:
        return fig, fig
    least = tuple(max(0.0, f - s[i]) for i, f in enumerate(fig))
    most = tuple(x + s[3 + i] for i, x in enumerate(least))
    return (least[0], least[1], least[2]), (most[0], most[1], most[2])


def total(parts: Iterable[Part]) -> Group:
    g = Group("total", None, "total", "")
    for p in parts:
        g.add(p)
    return g


def rank(groups: list[Group], sort: str = "write", *, minimum: float | None = None,
         limit: int | None = None) -> list[Group]:
    """Largest first by `sort` (ties: more bytes, then label); `minimum` drops groups below
    it (in the unit of `sort` over the interval)."""
    key = ALIASES.get(sort, sort)
    if key not in DERIVED and key not in _IDX:
        raise ValueError(f"unknown counter {sort!r}")
    out = [g for g in groups if minimum is None or g.get(key) >= minimum]
    out.sort(key=lambda g: (-g.get(key), -(g.get("write_bytes") + g.get("read_bytes")),
                            g.label))
    return out[:limit] if limit else out

