"""Which running jobs hurt the file system now: the rules of `jobio alerts` (pure).

A job's figures over the window (default the last hour; the job's own deltas, summed per
filesystem) are checked against three rules, each a *kind* of alert:

* `risk`: LASSi risk_oss or risk_mds of the window above `alerts.risk`, against the job-hour
  averages of the stored baseline (slurm_io.lassi; no stored baseline, no risk rule);
* `metadata`: at least `alerts.metadata_ops` metadata operations in the window (about 280/s
  for a million an hour), the figures naming the largest operations;
* `small_writes`: at least `alerts.small_writes` write requests of a mean size of at most
  `alerts.small_write_size`, in at least `alerts.sustained` of the window's collector
  intervals (sustained, not a burst at the end of a step).

The advice is the per-job report's (slurm_io.mail.advice.advice), computed on the window's
figures, so users read the same words in the alert and, later, in their job's mail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slurm_io.lassi import metrics as lassi
from slurm_io.mail import view
from slurm_io.model import METADATA_OPS

KINDS = ("risk", "metadata", "small_writes")


@dataclass(frozen=True)
class Rules:
    window: float = 3600.0
    interval: float = 120.0  # the collectors' interval
    risk: float = 5.0
    metadata_ops: float = 1e6
    small_writes: int = 200_000
    small_write_size: int = 16384
    sustained: float = 0.75
    a: float = lassi.DEFAULT_A


@dataclass
class JobWindow:
    """A running job's figures over the window."""

    job: int
    jobid: str
    uid: int | None
    user: str | None
    account: str | None
    name: str | None
    nodes: tuple[str, ...]
    start: float | None
    totals: dict[str, float] = field(default_factory=dict)  # counter -> sum (all filesystems)
    lassi: dict[str, dict[str, float]] = field(default_factory=dict)  # fs -> LASSi metrics
    write_intervals: int = 0  # collector intervals with writes
    data_until: float | None = None  # newest ts_end used


@dataclass(frozen=True)
class Finding:
    kind: str
    summary: str  # one line, for the subject and the log
    figures: dict[str, Any]


def lassi_values(by_kind: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """LASSi's metrics of one filesystem from counters summed per target kind (MDT, OST)."""
    ost = by_kind.get("OST", {})
    mdt = by_kind.get("MDT", {})
    out = {
        "read_kb": ost.get("read_bytes", 0.0) / 1024, "write_kb": ost.get("write_bytes", 0.0)
        / 1024, "read_ops": ost.get("read_bytes_samples", 0.0),
        "write_ops": ost.get("write_bytes_samples", 0.0),
        "other": sum(v for k, v in ost.items() if k not in ("read_bytes", "write_bytes",
                                                            "read_bytes_samples",
                                                            "write_bytes_samples")
                     and k not in lassi.OST_DATA_OPS),
    }
    for m in lassi.MDS_METRICS:
        out[m] = mdt.get(m, 0.0)
    return out


def check(w: JobWindow, rules: Rules,
          baseline: Mapping[str, Mapping[str, float | None]]) -> list[Finding]:
    """The findings for one job; `baseline` is fs -> job-hour averages (may be empty)."""
    out: list[Finding] = []
    hours = rules.window / 3600.0
    worst: tuple[float, float, str, dict[str, float]] | None = None
    for fs, values in w.lassi.items():
        avgs = baseline.get(fs)
        if not avgs:
            continue
        per_hour = {k: v / hours for k, v in values.items()}  # the averages are per hour
        s = lassi.score(per_hour, avgs, rules.a)
        if worst is None or max(s.risk_oss, s.risk_mds) > max(worst[0], worst[1]):
            worst = (s.risk_oss, s.risk_mds, fs, s.risks)
    if worst is not None and max(worst[0], worst[1]) > rules.risk:
        oss, mds, fs, risks = worst
        top = sorted(risks.items(), key=lambda kv: -kv[1])[:3]
        out.append(Finding("risk", f"LASSi risk {max(oss, mds):.1f} on {fs} (OSS {oss:.1f}, "
                           f"MDS {mds:.1f}; the usual job is at most 0)",
                           {"fs": fs, "risk_oss": round(oss, 2), "risk_mds": round(mds, 2),
                            "threshold": rules.risk,
                            "riskiest": {k: round(v, 2) for k, v in top}}))
    meta = {op: w.totals.get(op, 0.0) for op in METADATA_OPS if w.totals.get(op)}
    n_meta = sum(meta.values())
    if n_meta >= rules.metadata_ops:
        top = sorted(meta.items(), key=lambda kv: -kv[1])[:4]
        what = ", ".join(f"{view.fmt_count(n)} {view.META_NAMES.get(op, op)}" for op, n in top)
        out.append(Finding("metadata", f"{view.fmt_count(n_meta)} metadata operations in "
                           f"{_span(rules.window)} ({n_meta / rules.window:,.0f}/s): {what}",
                           {"metadata_ops": int(n_meta), "per_second": round(n_meta /
                                                                             rules.window, 1),
                            "ops": {k: int(v) for k, v in top},
                            "threshold": rules.metadata_ops}))
    reqs = w.totals.get("write_bytes_samples", 0.0)
    written = w.totals.get("write_bytes", 0.0)
    slots = max(1, round(rules.window / rules.interval))
    share = min(1.0, w.write_intervals / slots)
    if reqs >= rules.small_writes and reqs > 0 and written / reqs <= rules.small_write_size \
            and share >= rules.sustained:
        mean = written / reqs
        out.append(Finding("small_writes", f"{view.fmt_count(reqs)} writes of "
                           f"{view.fmt_size(mean)} on average in {_span(rules.window)}, in "
                           f"{share:.0%} of the collector intervals",
                           {"write_requests": int(reqs), "mean_size": round(mean),
                            "write_bytes": int(written), "sustained": round(share, 2),
                            "threshold_requests": rules.small_writes,
                            "threshold_size": rules.small_write_size}))
    return out


def _span(seconds: float) -> str:
    return "the last hour" if seconds == 3600 else f"the last {view.fmt_duration(seconds)}"


def span(seconds: float) -> str:
    """"the hour", "the 30 min" ... (for "in the hour up to 12:00")."""
    return "the hour" if seconds == 3600 else f"the {view.fmt_duration(seconds)}"


def advice(w: JobWindow, findings: list[Finding], rules: Rules,
           thresholds: view.Thresholds | None = None) -> tuple[view.Advice, ...]:
    """The job report's advice texts for what was found (computed on the window, with the
    report's thresholds where the window passes them, else with none: the rules above
    decided already, this only picks the texts)."""
    report = WindowFigures(w.totals, window_quality(w.totals), w.nodes, rules.window)
    every = view.Thresholds(kb_ops=0.0, min_requests=0, metadata_per_node_hour=0.0,
                            min_metadata_ops=0)
    found = {f.kind for f in findings}
    wanted = set()
    if "metadata" in found or ("risk" in found and _meta_risky(findings)):
        wanted.add("metadata")
    if "small_writes" in found or ("risk" in found and not _meta_risky(findings)):
        wanted.add("small_writes")
    texts = {a.key: a for a in view.advice(report, every)}
    texts.update({a.key: a for a in view.advice(report, thresholds or view.Thresholds())})
    return tuple(texts[k] for k in ("small_writes", "metadata") if k in wanted and k in texts)


@dataclass(frozen=True)
class WindowFigures:
    """A running job's window as the advice rules read it (mail.advice.Figures): the
    window's totals and quality over its length, so alerts and mails share one rule set."""

    totals: Mapping[str, float]
    quality: Mapping[str, Any]
    nodes: tuple[str, ...]
    elapsed: float


def window_quality(totals: Mapping[str, float]) -> dict[str, Any]:
    """The part of a report's quality block the advice reads, from a window's totals."""
    return {"write_kb_ops": lassi.kb_ops(totals.get("write_bytes_samples", 0),
                                         totals.get("write_bytes", 0) / 1024),
            "read_kb_ops": lassi.kb_ops(totals.get("read_bytes_samples", 0),
                                        totals.get("read_bytes", 0) / 1024),
            "write_mean_size": (totals.get("write_bytes", 0) / totals["write_bytes_samples"]
                                if totals.get("write_bytes_samples") else None),
            }


def _meta_risky(findings: list[Finding]) -> bool:
    f = next((f for f in findings if f.kind == "risk"), None)
    return f is not None and f.figures["risk_mds"] >= f.figures["risk_oss"]
