"""The exporter's metrics, from one snapshot of the database (pure: no I/O here).

Every label set is bounded, whatever the cluster does: filesystems and targets (fixed by the
hardware), the top N users and accounts (the rest summed as `_other`), the top N running jobs
(by bytes and, separately, by metadata operations), the three kinds of unattributed load, the
collectors and the problem sources. Names and labels are documented in docs/exporter.md and
are part of the interface: dashboards and alert rules depend on them.

All I/O figures are of the newest collector interval (the one `jobio top` shows): `..._bytes`
and `..._operations` are what moved in it (like `jobio usage` over the same window), the
`..._per_second` gauges are those divided by the collector interval.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from slurm_io.model import OP_COUNTERS
from slurm_io.report.load import Group, Load, group, rank, span, total

if TYPE_CHECKING:
    from slurm_io.exporter.sql import CollectorBatch, ProblemSource, QueueState
    from slurm_io.report.sql import TargetRow

DIRECTIONS = ("read", "write")
OTHER = "_other"


@dataclass(frozen=True)
class Settings:
    top_jobs: int = 20
    top_users: int = 50
    top_accounts: int = 50
    targets: bool = True  # per-target series


@dataclass
class Snapshot:
    """What one scrape read."""

    now: float
    load: Load | None = None  # None: the database could not be read
    targets: list[TargetRow] = field(default_factory=list)  # per target, summed
    collectors: list[CollectorBatch] = field(default_factory=list)
    problems: list[ProblemSource] | None = None  # None: no privilege to read them
    queue: list[QueueState] = field(default_factory=list)
    spool: tuple[int, int] | None = None  # (files, bytes) of the local collector spool
    replication_lag: float | None = None  # seconds behind the primary; None: no read_dsn
    error: str | None = None


def _g(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def _io(prefix: str, what: str, labels: list[str], rows: list[tuple[list[str], Group]],
        secs: float) -> Iterator[Metric]:
    """bytes/s by direction, requests/s and metadata operations/s of grouped rows."""
    b = _g(f"{prefix}_bytes_per_second", f"Bytes per second moved by {what} in the newest "
           "collector interval.", [*labels, "direction"])
    r = _g(f"{prefix}_requests_per_second", f"Read and write requests (RPCs) per second of "
           f"{what}.", labels)
    m = _g(f"{prefix}_metadata_ops_per_second", f"Metadata operations per second of {what} "
           "(MDT operations: open, close, getattr, mkdir, ...).", labels)
    for values, g in rows:
        for d in DIRECTIONS:
            b.add_metric([*values, d], g.get(f"{d}_bytes") / secs)
        r.add_metric(values, g.get("reqs") / secs)
        m.add_metric(values, g.get("meta_ops") / secs)
    yield from (b, r, m)


def _job_ranges(ld: Load, rows: list[tuple[list[str], Group]], secs: float
                ) -> Iterator[Metric]:
    """The least and most of each exported job's bytes and metadata operations per second
    (report.load.span, attribute.ranges): equal to the figure where no `:uid:host` delta of
    the interval was shared with another job of the user."""
    labels = ["jobid", "user", "account", "job_name"]
    fams = {}
    for side in ("least", "most"):
        fams[side] = (
            _g(f"jobio_job_bytes_per_second_{side}", f"The {side} bytes per second the job "
               "can have moved in the newest interval, given the I/O without job id it shared "
               "with other jobs of its user.", [*labels, "direction"]),
            _g(f"jobio_job_metadata_ops_per_second_{side}", f"The {side} metadata operations "
               "per second the job can have done in the newest interval.", labels))
    for values, g in rows:
        for side, bound in zip(("least", "most"), span(ld, g), strict=True):
            b, m = fams[side]
            b.add_metric([*values, "read"], bound[0] / secs)
            b.add_metric([*values, "write"], bound[1] / secs)
            m.add_metric(values, bound[2] / secs)
    for b, m in fams.values():
        yield from (b, m)


def _bounded(groups: list[Group], n: int) -> tuple[list[Group], Group | None]:
    """The top n by bytes and the top n by metadata operations; the rest summed."""
    keep = {id(g) for g in rank(groups, "write_bytes", limit=n)}
    keep |= {id(g) for g in rank(groups, "read_bytes", limit=n)}
    keep |= {id(g) for g in rank(groups, "meta_ops", limit=n)}
    top = [g for g in groups if id(g) in keep]
    rest = [g for g in groups if id(g) not in keep]
    if not rest:
        return top, None
    other = Group("other", None, OTHER, "")
    for g in rest:
        for i, v in enumerate(g.values):
            other.values[i] += v
    return top, other


def families(s: Snapshot, cfg: Settings, scrape_seconds: float) -> Iterator[Metric]:
    up = _g("jobio_up", "1 when the exporter could read the slurm-io database.", [])
    up.add_metric([], 0.0 if s.load is None else 1.0)
    yield up
    dur = _g("jobio_scrape_duration_seconds", "Time the exporter took to read the database "
             "for this scrape.", [])
    dur.add_metric([], scrape_seconds)
    yield dur
    if s.spool is not None:
        sp = _g("jobio_spool_files", "Batches waiting in this host's collector spool (not "
                "yet stored in the database).", [])
        sp.add_metric([], s.spool[0])
        yield sp
        sb = _g("jobio_spool_bytes", "Bytes waiting in this host's collector spool.", [])
        sb.add_metric([], s.spool[1])
        yield sb
    ld = s.load
    if ld is None:
        return
    yield from _health(s)
    if ld.at is None:
        return
    secs = ld.interval
    for name, doc, v in (
            ("jobio_interval_end_timestamp_seconds", "End of the newest collector interval "
             "(the newest read stored).", ld.at),
            ("jobio_interval_start_timestamp_seconds", "Start of the window summed: deltas "
             "with end time in (start, end], like `jobio usage -S start -E end`.", ld.lo),
            ("jobio_interval_seconds", "The collector interval the rates are divided by.",
             secs),
            ("jobio_data_age_seconds", "How old the newest stored read is.", s.now - ld.at)):
        g = _g(name, doc, [])
        g.add_metric([], v)
        yield g
    yield from _filesystems(s, ld, cfg)
    users = [([g.label], g) for g in _top_groups(ld, "user", cfg.top_users)]
    yield from _io("jobio_user", "each user (jobs and load outside jobs)", ["user"], users,
                   secs)
    accounts = [([g.label], g) for g in _top_groups(ld, "account", cfg.top_accounts)]
    yield from _io("jobio_account", "each Slurm account", ["account"], accounts, secs)
    by_job = group(ld, "job")  # once: ~0.1 s of CPU a time at a site (bench/README.md)
    jobs = [g for g in by_job if g.kind == "job"]
    top, _ = _bounded(jobs, cfg.top_jobs)
    rows = [([g.label, g.user, g.account, g.name], g) for g in
            sorted(top, key=lambda g: g.label)]
    yield from _io("jobio_job", "the top running jobs (by bytes and by metadata operations)",
                   ["jobid", "user", "account", "job_name"], rows, secs)
    yield from _job_ranges(ld, rows, secs)
    unat: dict[str, Group] = {}
    for g in by_job:
        if g.kind != "job":
            u = unat.setdefault(g.kind, Group(g.kind, None, g.kind, ""))
            u.values = [a + b for a, b in zip(u.values, g.values, strict=True)]
    yield from _io("jobio_unattributed", "load outside jobs (kind: user = a user's load no "
                   "job claims, login nodes included; system = system ids of a host; "
                   "nobody = ids naming nobody)", ["kind"],
                   [([k], unat.get(k, Group(k, None, k, ""))) for k in
                    ("user", "system", "nobody")], secs)


def _top_groups(ld: Load, by: str, n: int) -> list[Group]:
    top, other = _bounded(group(ld, by), n)
    return [*top, *([other] if other is not None else [])]


def _filesystems(s: Snapshot, ld: Load, cfg: Settings) -> Iterator[Metric]:
    secs = ld.interval
    by_fs = {g.label: g for g in group(ld, "fs")}
    fb = _g("jobio_fs_bytes", "Bytes moved on the filesystem in the newest collector "
            "interval (the sum `jobio usage` gives for the same window).", ["fs", "direction"])
    fo = _g("jobio_fs_operations", "Operations of each Lustre counter on the filesystem in "
            "the newest collector interval.", ["fs", "op"])
    for fs, g in sorted(by_fs.items()):
        for d in DIRECTIONS:
            fb.add_metric([fs, d], g.get(f"{d}_bytes"))
        for op in OP_COUNTERS:
            fo.add_metric([fs, op], g.get(op))
    yield from (fb, fo)
    yield from _io("jobio_fs", "the filesystem", ["fs"],
                   [([fs], g) for fs, g in sorted(by_fs.items())], secs)
    if not cfg.targets:
        return
    tb = _g("jobio_target_bytes_per_second", "Bytes per second on each target.",
            ["fs", "target", "kind", "direction"])
    tr = _g("jobio_target_requests_per_second", "Read and write requests per second on each "
            "target.", ["fs", "target", "kind"])
    tm = _g("jobio_target_metadata_ops_per_second", "Metadata operations per second on each "
            "target.", ["fs", "target", "kind"])
    for fs, name, kind, vals in sorted(s.targets):
        g = total([])
        g.values = list(vals)
        for d in DIRECTIONS:
            tb.add_metric([fs, name, kind, d], g.get(f"{d}_bytes") / secs)
        tr.add_metric([fs, name, kind], g.get("reqs") / secs)
        tm.add_metric([fs, name, kind], g.get("meta_ops") / secs)
    yield from (tb, tr, tm)


def _health(s: Snapshot) -> Iterator[Metric]:
    lr = _g("jobio_collector_last_read_timestamp_seconds", "Read time of the collector's "
            "newest stored batch.", ["collector"])
    li = _g("jobio_collector_last_ingest_timestamp_seconds", "When the collector's newest "
            "batch was stored.", ["collector"])
    lag = _g("jobio_collector_ingest_delay_seconds", "Store time minus read time of the "
             "collector's newest batch (large: it came from the spool).", ["collector"])
    bp = _g("jobio_collector_last_batch_problems", "Broken entries or lines in the "
            "collector's newest batch.", ["collector"])
    for name, read, ingested, n_problems, _rows in sorted(s.collectors):
        lr.add_metric([name], read)
        li.add_metric([name], ingested)
        lag.add_metric([name], ingested - read)
        bp.add_metric([name], n_problems)
    yield from (lr, li, lag, bp)
    if s.problems is not None:
        pt = CounterMetricFamily("jobio_problems", "Records refused and kept in the "
                                 "quarantine (the `problem` table), by source.",
                                 labels=["source"])
        ph = _g("jobio_problems_last_hour", "Records refused in the last hour, by source.",
                ["source"])
        for source, n, recent in sorted(s.problems):
            pt.add_metric([source], n)
            ph.add_metric([source], recent)
        yield from (pt, ph)
    q = _g("jobio_report_queue", "Job report mails by state (report_queue).", ["state"])
    states = dict.fromkeys(("queued", "sending", "sent", "skipped", "failed"), 0)
    states.update(dict(s.queue))
    for state, n in sorted(states.items()):
        q.add_metric([state], n)
    yield q
    if s.replication_lag is not None:  # read from the standby of `read_dsn`
        lag_g = _g("jobio_database_replication_lag_seconds", "How far the standby the "
                   "exporter reads is behind the primary (0: caught up, or a primary).", [])
        lag_g.add_metric([], s.replication_lag)
        yield lag_g
