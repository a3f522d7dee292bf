"""`jobio daily`: one UTC day of a filesystem as an HTML page with PNG plots, for the staff.

    OUT/index.html      the page: summary, plots, the day's top jobs and users
    OUT/risk.png        LASSi OSS and MDS risk per hour, the jobs contributing most
    OUT/quality.png     read/write kb_ops per hour (request quality)
    OUT/rates.png       aggregate read/write MB/s and metadata ops/s per collector interval
    OUT/heatmap.png     per-series rates in logarithmic bins per interval
    OUT/jobs/<id>.html  a page per listed job (`jobio show` data and its LASSi hours)

The LASSi hours of the day are computed first when they are not stored yet
(slurm_io.lassi.days.ensure_day), and so are the heat map's per-hour counts
(slurm_io.report.heat_hours: the hours without a fresh summary). Everything else is a few
set-based queries over the day.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_io.lassi import days as lassi_days
from slurm_io.lassi import metrics as M
from slurm_io.lassi import sql as lassi_sql
from slurm_io.notify import smtp
from slurm_io.report import daily_sql, heat_hours, plots
from slurm_io.report.daily_html import index_html, job_file, job_html, kb_text
from slurm_io.store import standby
from slurm_io.store.sqlutil import no_jit

if TYPE_CHECKING:
    from psycopg import Connection

PNGS = ("risk.png", "quality.png", "rates.png", "heatmap.png")
STANDBY_WAIT = 120.0  # seconds the report waits for a standby to replay its LASSi hours
HEATMAP_BASE = heat_hours.BASE  # bins [4^k, 4^(k+1)): powers of 1024 fall on bin edges


@dataclass
class Report:
    day: date
    out: Path
    index: Path
    pngs: list[Path]
    job_pages: list[Path]
    summary: dict[str, Any]
    computed: lassi_days.DayResult | None
    timings: dict[str, float] = field(default_factory=dict)


def rates(conn: Connection, start: float, end: float, width: float
          ) -> list[dict[str, Any]]:
    """Read/write bytes and MDT metadata operations per fs and interval (b*width, +width]."""
    no_jit(conn)
    return [{"fs": r.fs, "t": r.b * width, "read_bytes": r.read_bytes,
             "write_bytes": r.write_bytes, "md_ops": r.md_ops}
            for r in daily_sql.rates(conn, start, end, width)]


def heatmap_counts(conn: Connection, start: float, end: float, width: float,
                   base: float = HEATMAP_BASE) -> dict[str, dict[tuple[int, int], int]]:
    """metric -> (interval index, k) -> number of series with a rate in [base^k, base^(k+1)),
    from the deltas."""
    no_jit(conn)
    return _by_metric(daily_sql.heat_counts(conn, start, end, width, base))


def day_heatmap(conn: Connection, start: float, end: float, width: float,
                base: float = HEATMAP_BASE) -> dict[str, dict[tuple[int, int], int]]:
    """heatmap_counts of a day, from the hours' stored counts (report.heat_hours: made first
    for the hours without a fresh one; `conn` must be the primary) where they apply, else
    from the deltas. The same figures either way."""
    counts = heat_hours.day_counts(conn, start, end, width, base)
    if counts is None:
        return heatmap_counts(conn, start, end, width, base)
    return _by_metric(counts)


def _by_metric(counts: Iterable[daily_sql.HeatCount]) -> dict[str, dict[tuple[int, int], int]]:
    out: dict[str, dict[tuple[int, int], int]] = defaultdict(dict)
    for c in counts:
        out[c.metric][(c.b, c.k)] = c.n
    return dict(out)


# -- the day's top jobs and users ---------------------------------------------------------------
def top_tables(job_hours: list[dict[str, Any]], n: int = 15) -> dict[str, Any]:
    jobs: dict[int, dict[str, Any]] = {}
    for r in job_hours:
        j = jobs.setdefault(r["job"], {
            "job": r["job"], "jobid": r["jobid"], "user": r["user"], "name": r["name"],
            "read_kb": 0.0, "write_kb": 0.0, "read_ops": 0.0, "write_ops": 0.0, "md_ops": 0.0,
            "risk_oss": 0.0, "risk_mds": 0.0, "hours": 0})
        for k in ("read_kb", "write_kb", "read_ops", "write_ops", "md_ops"):
            j[k] += r[k]
        j["risk_oss"] = max(j["risk_oss"], r["risk_oss"])
        j["risk_mds"] = max(j["risk_mds"], r["risk_mds"])
        j["hours"] += 1
    for j in jobs.values():
        j["read_kb_ops"] = M.kb_ops(j["read_ops"], j["read_kb"])
        j["write_kb_ops"] = M.kb_ops(j["write_ops"], j["write_kb"])
    users: dict[str, dict[str, Any]] = {}
    for j in jobs.values():
        u = users.setdefault(j["user"], {"user": j["user"], "jobs": 0, "read_kb": 0.0,
                                         "write_kb": 0.0, "md_ops": 0.0, "risk_oss": 0.0,
                                         "risk_mds": 0.0})
        u["jobs"] += 1
        for k in ("read_kb", "write_kb", "md_ops"):
            u[k] += j[k]
        u["risk_oss"] = max(u["risk_oss"], j["risk_oss"])
        u["risk_mds"] = max(u["risk_mds"], j["risk_mds"])
    vals = list(jobs.values())
    return {
        "by_bytes": sorted(vals, key=lambda j: -(j["read_kb"] + j["write_kb"]))[:n],
        "by_metadata": sorted((j for j in vals if j["md_ops"]), key=lambda j: -j["md_ops"])[:n],
        "by_risk": sorted((j for j in vals if j["risk_oss"] + j["risk_mds"] > 0),
                          key=lambda j: -(j["risk_oss"] + j["risk_mds"]))[:n],
        "users": sorted(users.values(), key=lambda u: -(u["read_kb"] + u["write_kb"]))[:n],
        "n_jobs": len(jobs),
    }


def day_tables(conn: Connection, day: date, top_n: int = 15) -> dict[str, Any]:
    """The day's tables of the report (per filesystem, riskiest jobs, top jobs and users)
    from the stored LASSi hours, read only: no LASSi computed, no plot, no file (the web
    view's daily page, through `GET /v1/daily`). A day `jobio daily` has not covered yet
    has empty tables."""
    start, end = lassi_days.day_bounds(day)
    fsh = lassi_sql.fs_hours(conn, start, end)
    jh = lassi_sql.job_hours(conn, start, end)
    return {"day": day.isoformat(), "summary": _summary(fsh, jh),
            "tops": top_tables(jh, top_n)}


# -- the report --------------------------------------------------------------------------------
def build(conn: Connection, day: date, out: Path, *, interval: float = 120.0,
          a: float = M.DEFAULT_A, baseline_days: int = M.DEFAULT_BASELINE_DAYS,
          top_n: int = 15, recompute: bool = False, now: float | None = None,
          progress: bool = False, log: Callable[[str], None] | None = None,
          primary: Connection | None = None) -> Report:
    """Write the day's report into `out` (created); returns what was written.

    `primary`: when `conn` reads a standby (`read_dsn`), the LASSi hours the day lacks are
    computed and stored there, and the report waits until the standby replayed them (a
    standby takes no writes; the report then reads them back from the standby)."""
    from slurm_io.jobs.store import find_jobs
    from slurm_io.report.figures import figures
    from slurm_io.report.show import render

    say = log or (lambda _m: None)
    now = time.time() if now is None else now
    timings: dict[str, float] = {}
    t = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    (out / "jobs").mkdir(exist_ok=True)
    start, end = lassi_days.day_bounds(day)
    computed = None
    writer = primary or conn
    if recompute:
        say(f"computing LASSi metrics of {day}")
        computed = lassi_days.compute_day(writer, day, a=a, baseline_days=baseline_days,
                                          now=now)
    else:
        computed = lassi_days.ensure_day(writer, day, a=a, baseline_days=baseline_days, now=now)
        if computed is not None:
            say(f"computed LASSi metrics of {day} ({computed.job_hours} job hours)")
    if computed is not None and primary is not None and primary is not conn:
        position = standby.primary_position(primary)
        if not standby.wait_replayed(conn, position, timeout=STANDBY_WAIT):
            say(f"the standby has not replayed the LASSi hours of {day} after "
                f"{STANDBY_WAIT:.0f} s: the report may lack them")
    timings["lassi"] = time.perf_counter() - t
    t = time.perf_counter()
    say("querying the day")
    fsh = lassi_sql.fs_hours(conn, start, end)
    jh = lassi_sql.job_hours(conn, start, end)
    series = rates(conn, start, end, interval)
    t_heat = time.perf_counter()
    # on the primary: the hours' counts are made there where missing or stale
    counts = day_heatmap(writer, start, end, interval)
    timings["heatmap"] = time.perf_counter() - t_heat
    say(f"heat map of {day}: {timings['heatmap']:.1f} s")
    baseline = [{"fs": b.fs, "a": b.a, "from": b.first.date().isoformat(),
                 "to": date.fromordinal(b.after_last.date().toordinal() - 1).isoformat(),
                 "hours": b.hours, "own": b.own}
                for b in daily_sql.baselines(conn, day)]
    timings["queries"] = time.perf_counter() - t
    t = time.perf_counter()
    say("plotting")
    span = data_span(start, end, [r["t"] for r in series], interval)
    pngs = [plots.risk(out / "risk.png", span, fsh, jh),
            plots.quality(out / "quality.png", span, fsh, jh),
            plots.rates(out / "rates.png", span, interval, series),
            plots.heatmap(out / "heatmap.png", span, interval, HEATMAP_BASE, counts)]
    timings["plots"] = time.perf_counter() - t
    t = time.perf_counter()
    tops = top_tables(jh, top_n)
    listed: dict[int, str] = {}
    for key in ("by_risk", "by_bytes", "by_metadata"):
        for j in tops[key]:
            listed.setdefault(j["job"], j["jobid"])
    hours_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in jh:
        if r["job"] in listed:
            hours_of[r["job"]].append(r)
    pages: list[Path] = []
    linked: set[str] = set()
    bar_ctx = _bar(listed.items(), progress, f"job pages of {day}")
    with bar_ctx as items:
        for job, jobid in items:
            infos = [i for i in find_jobs(conn, str(job)) if i.raw_id == job]  # LASSi: raw ids
            if not infos:
                continue
            rep = figures(conn, infos[0], now=now, resolution=interval)
            path = out / job_file(jobid)
            path.write_text(job_html(rep.as_json(), render(rep, targets=True), hours_of[job]))
            pages.append(path)
            linked.add(jobid)
    timings["job_pages"] = time.perf_counter() - t
    summary = _summary(fsh, jh)
    index = out / "index.html"
    index.write_text(index_html(day, summary, tops, linked, baseline))
    return Report(day, out, index, pngs, pages, summary, computed, timings)


def data_span(start: float, end: float, times: list[float], width: float
              ) -> tuple[float, float]:
    """The whole hours of the day that hold data (the whole day without data)."""
    if not times:
        return start, end
    lo = max(start, (min(times) // 3600) * 3600)
    hi = min(end, -(-(max(times) + width) // 3600) * 3600)
    return (lo, hi) if hi > lo else (start, end)


class _NoBar:
    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items

    def __enter__(self) -> Iterable[Any]:
        return self.items

    def __exit__(self, *exc: object) -> None:
        return None


def _bar(items: Iterable[Any], progress: bool, label: str) -> Any:
    if not progress:
        return _NoBar(items)
    import click

    return click.progressbar(list(items), label=label, file=sys.stderr)


def _summary(fsh: list[dict[str, Any]], jh: list[dict[str, Any]]) -> dict[str, Any]:
    by_fs: dict[str, dict[str, Any]] = {}
    for r in fsh:
        v = by_fs.setdefault(r["fs"], {"read_kb": 0.0, "write_kb": 0.0, "read_ops": 0.0,
                                       "write_ops": 0.0, "md_ops": 0.0, "jobs": 0,
                                       "risk_oss": 0.0, "risk_mds": 0.0})
        for k in ("read_kb", "write_kb", "read_ops", "write_ops", "md_ops"):
            v[k] += r[k]
        v["risk_oss"] = max(v["risk_oss"], r["risk_oss"])
        v["risk_mds"] = max(v["risk_mds"], r["risk_mds"])
    for fs, v in by_fs.items():
        v["jobs"] = len({r["job"] for r in jh if r["fs"] == fs})
    return {"by_fs": by_fs}


# -- mail --------------------------------------------------------------------------------------
def mail(report: Report, to: list[str], *, host: str | None, port: int = 25,
         sender: str = "slurm-io@localhost", starttls: bool = False, ssl: bool = False,
         user: str | None = None, password: str | None = None, timeout: float = 30.0) -> str:
    """Send the page with its plots inline to `to`; returns what happened (nothing is sent,
    and nothing raised, without a host). Through notify.smtp, the one SMTP module; an
    undelivered mail raises OSError (one line for the command)."""
    if not to:
        return "no recipients"
    if not host:
        return "mail not sent: no [mail] smtp_host configured"
    msg = EmailMessage()
    msg["Subject"] = f"slurm-io daily report {report.day.isoformat()}"
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    lines = [f"slurm-io daily report for {report.day.isoformat()} (UTC): {report.index}", ""]
    for fs, v in report.summary["by_fs"].items():
        lines.append(f"{fs}: read {kb_text(v['read_kb'])}, written {kb_text(v['write_kb'])}, "
                     f"{v['md_ops']:.0f} metadata ops, {v['jobs']} jobs, max risk_oss "
                     f"{v['risk_oss']:.2f}, max risk_mds {v['risk_mds']:.2f}")
    msg.set_content("\n".join(lines) + "\n")
    page = report.index.read_text()
    cids = {}
    for png in report.pngs:
        cid = make_msgid(domain="slurm-io")
        cids[png.name] = cid
        page = page.replace(f"src=\"{png.name}\"", f"src=\"cid:{cid[1:-1]}\"")
    msg.add_alternative(page, subtype="html")
    html_part = msg.get_payload()[1]  # type: ignore[index]
    for png in report.pngs:
        html_part.add_related(png.read_bytes(), "image", "png", cid=cids[png.name],
                              filename=png.name)
    settings = smtp.SmtpSettings(host=host, port=port, starttls=starttls, ssl=ssl, user=user,
                                 password=password, timeout=timeout)
    try:
        smtp.send(settings, sender, to, msg.as_bytes())
    except (smtp.Undelivered, smtp.OutcomeUnknown) as e:
        # the caller says where it sent to; the message without that prefix
        raise OSError(str(e).removeprefix(f"{host}:{port}: ")) from e
    return f"mailed to {', '.join(to)} via {host}:{port}"
