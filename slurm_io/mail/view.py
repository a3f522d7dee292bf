"""What the mail templates print: a job report (report.jobreport.JobReport) -> a view model.

Pure, and typed: it reads the report's attributes (its times stay unix seconds until the labels
here); the JSON form exists only at the CLI and service edges (`as_json`/`from_json`).

Every decision lives here so that the templates stay thin and sites can rewrite them without
re-implementing anything: formatted sizes and rates, the timeline's bars (percent widths, for
HTML table cells, and the same chart as ASCII lines), the I/O quality table with a rating per
row, plain advice when the I/O pattern is poor, the busiest targets, and how much of the
figures was recovered from broken job ids or shared with the user's other jobs.

Advice rules (thresholds in `Thresholds`, configurable under `[mail.advice]`):
- small requests: at least `min_requests` requests of a kind and LASSi's `x_kb_ops` above
  `kb_ops` (16 = a 64 KiB mean request; 1 = 1 MiB, ideal) or more than `small_share` of the
  requests below 64 KiB (counted where the histograms or min/max bounds tell for at least
  `min_share_basis` of the requests);
- metadata storm: one of open, mkdir, getattr (stat), unlink at least `min_metadata_ops` times
  and above `metadata_per_node_hour` per node-hour of the job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from slurm_io.attribute.ranges import any_wide, wide
from slurm_io.mail.advice import (
    SMALL_READ_TIPS,
    SMALL_WRITE_TIPS,
    Figures,
    advice,
    node_hours,
    share_known,
)
from slurm_io.mail.fmt import (
    fmt_count,
    fmt_duration,
    fmt_pct,
    fmt_rate,
    fmt_si,
    fmt_size,
    fmt_step,
)
from slurm_io.mail.view_model import (
    META_NAMES,
    NICE_STEPS,
    RATINGS,
    READ_COLOUR,
    SMALL_IO,
    STORM_OPS,
    WRITE_COLOUR,
    Advice,
    Chart,
    ChartRow,
    JobView,
    MetaRow,
    Provenance,
    QualityRow,
    TargetRow,
    Thresholds,
)
from slurm_io.report.counters import bytes_with_range, human_bytes
from slurm_io.report.jobreport import JobReport, iso
from slurm_io.text import header

_THRESHOLDS = Thresholds()  # the defaults (a frozen value, shared)

# the view model and the formatting live in view_model.py and fmt.py; templates, the mail
# builder and alerts import them from here
__all__ = [
    "META_NAMES",
    "NICE_STEPS",
    "RATINGS",
    "READ_COLOUR",
    "SMALL_IO",
    "SMALL_READ_TIPS",
    "SMALL_WRITE_TIPS",
    "STORM_OPS",
    "WRITE_COLOUR",
    "Advice",
    "Chart",
    "ChartRow",
    "Figures",
    "JobView",
    "MetaRow",
    "Provenance",
    "QualityRow",
    "TargetRow",
    "Thresholds",
    "advice",
    "build_view",
    "chart",
    "fmt_count",
    "fmt_duration",
    "fmt_pct",
    "fmt_rate",
    "fmt_si",
    "fmt_size",
    "fmt_step",
    "metadata_rows",
    "node_hours",
    "provenance",
    "quality_rows",
    "subject",
    "target_rows",
]


def _clean(text: Any, limit: int = 80) -> str:
    """One line of printable text (job names go into the Subject header): the mail header
    rule of slurm_io.text, which also breaks no line on U+2028 or a C1 control."""
    return header(str(text), limit)


def _time_label(t: float | None) -> str:
    """A time as the mail prints it: the local ISO time of the JSON form, with a space."""
    s = iso(t)
    return "-" if not s else s.replace("T", " ")


def _bytes(c: Mapping[str, Any]) -> int:
    return int(c.get("read_bytes", 0)) + int(c.get("write_bytes", 0))


def _meta(c: Mapping[str, Any]) -> int:
    from slurm_io.model import METADATA_OPS

    return int(sum(v for k, v in c.items() if k in METADATA_OPS))


# -- the timeline ------------------------------------------------------------------------------
def chart(timeline: Sequence[Sequence[float]], *, start: float | None = None,
          end: float | None = None, resolution: float = 120.0, max_rows: int = 24,
          ascii_width: int = 18) -> Chart:
    """Read and write rates over the job, `max_rows` rows at most, one scale for both kinds.

    `timeline` is a JobReport's [[bin start, read bytes, write bytes, metadata ops], ...] at
    `resolution` seconds; the chart covers the job's run (start..end) and any data outside.
    """
    rows = sorted((float(t[0]), float(t[1]), float(t[2])) for t in timeline)
    if not rows:
        return Chart((), 0, "", "", "", "", ())
    res = max(1.0, float(resolution))
    t0 = min(rows[0][0], start if start is not None else math.inf)
    t1 = max(rows[-1][0] + res, end if end is not None else -math.inf)

    first = math.floor(t0 / res) * res  # rows start at the job's first bin

    def rows_of(step: int) -> int:
        return max(1, math.ceil((t1 - first) / step))

    # a step that is a multiple of the resolution: each row sums as many bins as the next
    # (2-minute bins in 5-minute rows would make a steady job look jagged)
    step = next((s for s in NICE_STEPS
                 if s >= res and s % res == 0 and rows_of(s) <= max_rows), 0)
    while not step or rows_of(step) > max_rows:
        step += 86400 if res <= 86400 else int(res)
    n = rows_of(step)
    sums = [[0.0, 0.0] for _ in range(n)]
    for ts, r, w in rows:
        i = min(n - 1, max(0, int((ts - first) // step)))
        sums[i][0] += r
        sums[i][1] += w
    peak_r = max(s[0] for s in sums) / step
    peak_w = max(s[1] for s in sums) / step
    top = max(peak_r, peak_w)
    multi_day = (datetime.fromtimestamp(first).date()
                 != datetime.fromtimestamp(first + (n - 1) * step).date())
    out: list[ChartRow] = []
    for i, (r, w) in enumerate(sums):
        ts = first + i * step
        label = datetime.fromtimestamp(ts).strftime("%a %H:%M" if multi_day else "%H:%M")
        out.append(ChartRow(label, round(r), round(w), fmt_rate(r / step), fmt_rate(w / step),
                            _width(r / step, top, 100), _width(w / step, top, 100)))
    lines = [f"  {'time':<9} {'read':>{ascii_width + 12}} | written",
             *(f"  {c.label:<9} {c.read_rate:>11} "
               f"{'=' * _width(c.read_bytes / step, top, ascii_width):>{ascii_width}} | "
               f"{'#' * _width(c.write_bytes / step, top, ascii_width):<{ascii_width}} "
               f"{c.write_rate}".rstrip() for c in out)]
    return Chart(tuple(out), int(step), fmt_step(int(step)), fmt_rate(top) or "0 B/s",
                 fmt_rate(peak_r) or "-", fmt_rate(peak_w) or "-", tuple(lines))


def _width(value: float, top: float, full: int) -> int:
    """Bar length for `value` on a scale where `top` is `full`; anything above 0 shows."""
    if value <= 0 or top <= 0:
        return 0
    return max(1, min(full, round(full * value / top)))


# -- quality (the advice is in advice.py) ----------------------------------------------------
def _rating(kb_ops: float | None, share: float | None, requests: float,
            t: Thresholds) -> str:
    if kb_ops is None or requests < t.min_requests:
        return "none"
    if kb_ops > t.kb_ops or (share is not None and share > t.small_share):
        return "poor"
    if kb_ops > t.kb_ops / 4:
        return "fair"
    return "good"


def quality_rows(r: Figures, t: Thresholds) -> tuple[QualityRow, ...]:
    q, tot = r.quality or {}, r.totals or {}
    rows = []
    for kind, label in (("read", "Reads"), ("write", "Writes")):
        requests = float(tot.get(f"{kind}_bytes_samples", 0))
        kb_ops = q.get(f"{kind}_kb_ops")
        share = q.get(f"{kind}_small_share")
        basis = q.get(f"{kind}_small_share_basis") or 0.0
        rating = _rating(kb_ops, share_known(q, kind, t), requests, t)
        name, fg, bg = RATINGS[rating]
        if rating == "none" and requests:
            name = "few requests"
        rows.append(QualityRow(
            kind, label, fmt_count(requests), fmt_size(q.get(f"{kind}_mean_size")),
            fmt_pct(share, 0),
            f"(known for {fmt_pct(basis, 0)} of requests)" if share is not None and basis < 1
            else "",
            "-" if kb_ops is None else f"{kb_ops:.2f}", rating, name, fg, bg))
    return tuple(rows)


def metadata_rows(r: Figures, t: Thresholds) -> tuple[MetaRow, ...]:
    tot = r.totals or {}
    nh = node_hours(r)
    rows = []
    for op, n in sorted(((k, v) for k, v in tot.items() if k in META_NAMES and v),
                        key=lambda kv: -kv[1]):
        rate = n / nh
        storm = op in STORM_OPS and n >= t.min_metadata_ops and rate > t.metadata_per_node_hour
        rows.append(MetaRow(META_NAMES[op], fmt_count(n), fmt_si(rate), storm))
    return tuple(rows)


# -- targets and provenance --------------------------------------------------------------------
def target_rows(r: JobReport, top: int = 5) -> tuple[tuple[TargetRow, ...], int]:
    """The `top` targets by bytes, then every metadata target (MDT); and how many were left."""
    by_target: Mapping[str, Mapping[str, Any]] = r.io.by_target or {}
    total = _bytes(r.io.totals or {})
    data = sorted((n for n, c in by_target.items() if _bytes(c) > 0),
                  key=lambda n: (-_bytes(by_target[n]), n))
    meta = sorted((n for n, c in by_target.items() if _bytes(c) == 0 and _meta(c) > 0),
                  key=lambda n: (-_meta(by_target[n]), n))
    shown = data[:top] + meta[:3]
    rows = []
    for n in shown:
        c = by_target[n]
        share = _bytes(c) / total if total else 0.0
        rows.append(TargetRow(n, fmt_size(c.get("read_bytes", 0)),
                              fmt_size(c.get("write_bytes", 0)), fmt_count(_meta(c)),
                              _width(share, 1.0, 100), fmt_pct(share, 0) if share else ""))
    return tuple(rows), len(by_target) - len(shown)


def _count_range(n: int, r: tuple[int, int] | None) -> str:
    """`1,234 (1,200–1,300)` where the range is wider than 1 % of the count."""
    if r is None or not wide(n, r):
        return fmt_count(n)
    return f"{fmt_count(n)} ({fmt_count(r[0])}–{fmt_count(r[1])})"


def provenance(r: JobReport) -> Provenance:
    tot = r.io.totals or {}
    rec, amb, spl = (part or {} for part in (r.io.recovered, r.io.ambiguous, r.io.split))
    if _bytes(tot):
        basis, measure = "bytes", _bytes
    else:
        basis, measure = "metadata operations", _meta
    whole = measure(tot)
    rs = measure(rec) / whole if whole else 0.0
    as_ = measure(amb) / whole if whole else 0.0
    ss = measure(spl) / whole if whole else 0.0
    notes = []
    if rs:
        notes.append(f"{fmt_pct(rs)} of the {basis} came from Lustre entries that lacked the "
                     "job id (broken or missing job ids, `:uid:host`): they were given to this "
                     "job because your uid did them on its nodes while it ran.")
    if as_:
        notes.append(f"{fmt_pct(as_)} is ambiguous: another job of yours ran on the same node "
                     "at the same time, and that I/O was shared between the jobs pro rata by "
                     "time, so it may be off either way.")
    if ss:
        notes.append(f"{fmt_pct(ss)} was split at the job's start or end by time.")
    if any_wide(tot, int((r.io.quality or {}).get("metadata_ops") or 0), r.io.ranges or {}):
        notes.append("Figures with a range in brackets, as 95.9 GiB (95.1–96.4), are not "
                     "certain: the job did at least the first and at most the second, "
                     "depending on how much of the I/O it shared with your other jobs was "
                     "its own.")
    if not notes:
        notes.append("Every figure comes from Lustre entries that named this job: nothing "
                     "was estimated." if whole else "No I/O was recorded for this job.")
    return Provenance(basis, fmt_pct(1 - rs if whole else None), fmt_pct(rs), fmt_pct(as_),
                      fmt_pct(ss), rs, as_, tuple(notes))


def subject(r: JobReport) -> str:
    tot = r.io.totals or {}
    name = f" ({_clean(r.info.name, 60)})" if r.info.name else ""
    if _bytes(tot):
        what = (f"{human_bytes(tot.get('write_bytes', 0))} written, "
                f"{human_bytes(tot.get('read_bytes', 0))} read")
    elif _meta(tot):
        what = f"{fmt_count(_meta(tot))} metadata operations, no data"
    else:
        what = "no Lustre I/O recorded"
    return f"[slurm-io] job {r.info.jobid}{name}: {what}"


def _nodes_text(nodes: Sequence[str], limit: int = 8) -> str:
    if not nodes:
        return "-"
    shown = ", ".join(nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def build_view(r: JobReport, thresholds: Thresholds = _THRESHOLDS, *,
               resolution: float = 120.0, max_rows: int = 24, top_targets: int = 5) -> JobView:
    """The view model of one job report (its times are used as they are: a report rebuilt
    from the service's JSON by `JobReport.from_json` has whole seconds, as sent)."""
    i = r.info
    start, end = r.start, r.end
    tot = r.totals or {}
    q = r.quality or {}
    elapsed = r.elapsed
    chart_end = end
    if chart_end is None and start is not None and elapsed is not None:
        chart_end = start + elapsed
    targets, more = target_rows(r, top_targets)
    meta_n = int(q.get("metadata_ops") or _meta(tot))
    rg = r.io.ranges
    if r.running:
        status = "The job is still running: these are its figures so far."
    elif not r.complete:
        status = ("Some collectors had not yet read past the job's end when this was "
                  "written: the figures may still grow slightly.")
    else:
        status = ""
    return JobView(
        jobid=str(i.jobid), job=int(i.raw_id or 0),
        name=_clean(i.name or "-"), user=str(i.user or i.uid or "-"),
        account=str(i.account or "-"), partition=str(i.partition or "-"),
        state=str(i.state or "-"), exit_code=str(i.exit_code or "-"),
        nodes_count=len(i.nodes or ()), nodes_text=_nodes_text(list(i.nodes or ())),
        start=_time_label(start), end=_time_label(end),
        elapsed=fmt_duration(elapsed), running=r.running,
        complete=r.complete, work_dir=str(i.work_dir or "-"),
        read=bytes_with_range(tot.get("read_bytes", 0), rg.get("read_bytes")),
        written=bytes_with_range(tot.get("write_bytes", 0), rg.get("write_bytes")),
        read_bytes=int(tot.get("read_bytes", 0)), write_bytes=int(tot.get("write_bytes", 0)),
        total_bytes=_bytes(tot),
        read_requests=fmt_count(tot.get("read_bytes_samples", 0)),
        write_requests=fmt_count(tot.get("write_bytes_samples", 0)),
        read_mean=fmt_size(q.get("read_mean_size")), write_mean=fmt_size(q.get("write_mean_size")),
        metadata_ops=_count_range(meta_n, rg.get("metadata_ops")), metadata_ops_n=meta_n,
        node_hours="-" if elapsed is None else f"{node_hours(r):.1f}",
        subject=subject(r),
        chart=chart(r.io.timeline or (), start=start, end=chart_end, resolution=resolution,
                    max_rows=max_rows),
        quality=quality_rows(r, thresholds),
        advice=advice(r, thresholds),
        targets=targets, more_targets=more,
        metadata=metadata_rows(r, thresholds),
        provenance=provenance(r),
        status_note=status,
    )
