"""PNG plots of the daily report and the slowdown analysis (matplotlib, Agg, no pyplot state).

Every function takes plain data (lists of dicts as slurm_io.lassi.sql and report.daily return
them) and a path, and writes one PNG. Times are unix seconds, shown in UTC.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import matplotlib

matplotlib.use("Agg")

from matplotlib import dates as mdates
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

DPI = 100
OTHER_COLOUR = "#c8c8c8"
# colour-blind safe (Okabe-Ito) for the top jobs
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000")


def _dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _time_axis(ax: Any, start: float, end: float) -> None:
    ax.set_xlim(_dt(start), _dt(end))
    span = end - start
    ax.xaxis.set_major_locator(mdates.HourLocator(interval=max(1, round(span / 3600 / 12))))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=UTC))
    ax.grid(True, axis="both", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, facecolor="white")
    return path


def _empty(ax: Any, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#777777",
            fontsize=12)


# -- LASSi risk --------------------------------------------------------------------------------
def risk(path: Path, span: tuple[float, float], fs_hours: Sequence[dict[str, Any]],
         job_hours: Sequence[dict[str, Any]], *, top_n: int = 6) -> Path:
    """Per filesystem: OSS and MDS risk per hour. Bars: the jobs' risks stacked (the day's
    riskiest jobs in colour, the others grey, the top job of each hour named above its bar);
    black line: the risk of the filesystem as a whole (right axis)."""
    fss = sorted({r["fs"] for r in fs_hours} | {r["fs"] for r in job_hours}) or ["-"]
    fig = Figure(figsize=(13, 3.6 * 2 * len(fss)), layout="constrained")
    axes = fig.subplots(2 * len(fss), 1, squeeze=False)[:, 0]
    width = 3600 / 86400 * 0.8  # bar width in days (matplotlib date units)
    for i, fs in enumerate(fss):
        for j, (key, label) in enumerate((("risk_oss", "OSS risk"), ("risk_mds", "MDS risk"))):
            ax = axes[2 * i + j]
            jh = [r for r in job_hours if r["fs"] == fs and r[key] > 0]
            per_job: dict[str, float] = defaultdict(float)
            for r in jh:
                per_job[r["jobid"]] += r[key]
            top = [k for k, _ in sorted(per_job.items(), key=lambda kv: -kv[1])[:top_n]]
            names = {r["jobid"]: f"{r['jobid']} {r['user']} {r['name'] or ''}".strip()
                     for r in jh}
            hours = sorted({r["hour"] for r in jh})
            bottoms = dict.fromkeys(hours, 0.0)
            series = [*top, None]
            for k, jobid in enumerate(series):
                vals = defaultdict(float)
                for r in jh:
                    if (r["jobid"] == jobid) if jobid else (r["jobid"] not in top):
                        vals[r["hour"]] += r[key]
                xs = [h for h in hours if vals[h] > 0]
                if not xs:
                    continue
                ax.bar([_dt(h + 1800) for h in xs], [vals[h] for h in xs], width=width,
                       bottom=[bottoms[h] for h in xs],
                       color=PALETTE[k % len(PALETTE)] if jobid else OTHER_COLOUR,
                       label=names[jobid] if jobid else "other jobs", edgecolor="white",
                       linewidth=0.5)
                for h in xs:
                    bottoms[h] += vals[h]
            # the top contributor of each hour, above its bar
            for h in hours:
                best = max((r for r in jh if r["hour"] == h), key=lambda r: r[key])
                ax.annotate(best["jobid"], (_dt(h + 1800), bottoms[h]), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom", fontsize=7,
                            rotation=90, color="#333333")
            if hours:
                ax.set_ylim(0, max(bottoms.values()) * 1.35)
            ax.set_ylabel(f"jobs' {key}\n(sum of positive risks)")
            ax.set_title(f"{fs}: {label} per hour (bars: the jobs' risks, stacked; black "
                         "line: the filesystem as a whole; > 0: more than a times the usual)",
                         loc="left", fontsize=10)
            fh = sorted((r for r in fs_hours if r["fs"] == fs), key=lambda r: r["hour"])
            ax2 = ax.twinx()
            if fh:
                ax2.plot([_dt(r["hour"] + 1800) for r in fh], [r[key] for r in fh],
                         color="black", marker="o", markersize=3, linewidth=1.5,
                         label=f"filesystem {key}")
                ax2.set_ylim(0, max(1.0, max(r[key] for r in fh)) * 1.2)
            ax2.set_ylabel(f"filesystem {key}")
            _time_axis(ax, *span)
            if not jh and not fh:
                _empty(ax)
            handles, labels = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            if handles or h2:
                ax.legend(handles + h2, labels + l2, loc="upper left", fontsize=8,
                          bbox_to_anchor=(1.07, 1.0), borderaxespad=0, frameon=False,
                          title="riskiest jobs of the day", title_fontsize=8)
    axes[-1].set_xlabel("hour (UTC)")
    return _save(fig, path)


# -- request quality ---------------------------------------------------------------------------
def quality(path: Path, span: tuple[float, float], fs_hours: Sequence[dict[str, Any]],
            job_hours: Sequence[dict[str, Any]]) -> Path:
    """read_kb_ops and write_kb_ops per hour: the filesystem's (lines) and each job's (dots)."""
    fig = Figure(figsize=(12, 6.5), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for ax, kind, colour in ((axes[0], "read", "#0072B2"), (axes[1], "write", "#D55E00")):
        key = f"{kind}_kb_ops"
        jh = [r for r in job_hours if r[key]]
        if jh:
            ax.scatter([_dt(r["hour"] + 1800) for r in jh], [r[key] for r in jh], s=9,
                       color=colour, alpha=0.25, linewidths=0, label="a job's hour")
        for fs in sorted({r["fs"] for r in fs_hours}):
            fh = sorted((r for r in fs_hours if r["fs"] == fs and r[key]),
                        key=lambda r: r["hour"])
            if fh:
                ax.plot([_dt(r["hour"] + 1800) for r in fh], [r[key] for r in fh],
                        color="black", marker="o", markersize=3, linewidth=1.5,
                        label=f"{fs} as a whole")
        ax.set_yscale("log")
        ax.set_ylim(0.2, 2000)
        for y, text in ((1, "1: 1 MiB requests (ideal)"), (256, "256: 4 KiB requests")):
            ax.axhline(y, color="#777777", linestyle="--", linewidth=0.8)
            ax.text(1.0, y, " " + text, transform=ax.get_yaxis_transform(), fontsize=8,
                    va="center", ha="left", color="#555555")
        ax.set_ylabel(f"{key}\n(requests per MiB)")
        ax.set_title(f"{kind} quality: {kind}_ops x 1024 / {kind}_kb (lower is better)",
                     loc="left", fontsize=11)
        _time_axis(ax, *span)
        if not jh:
            _empty(ax)
        else:
            ax.legend(loc="upper left", fontsize=8)
    axes[-1].set_xlabel("hour (UTC)")
    return _save(fig, path)


# -- aggregate rates ---------------------------------------------------------------------------
def rates(path: Path, span: tuple[float, float], width: float, series: Sequence[dict[str, Any]]
          ) -> Path:
    """Aggregate read and write MB/s and metadata ops/s per collector interval, per fs.

    `series`: dicts with fs, t (interval start), read_bytes, write_bytes, md_ops."""
    fig = Figure(figsize=(12, 6.5), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    fss = sorted({r["fs"] for r in series})
    for fs in fss:
        pts = sorted((r for r in series if r["fs"] == fs), key=lambda r: r["t"])
        x = [_dt(r["t"] + width / 2) for r in pts]
        tag = f"{fs} " if len(fss) > 1 else ""
        axes[0].plot(x, [r["write_bytes"] / width / 1e6 for r in pts], color="#D55E00",
                     linewidth=1, label=f"{tag}write")
        axes[0].plot(x, [r["read_bytes"] / width / 1e6 for r in pts], color="#0072B2",
                     linewidth=1, label=f"{tag}read")
        axes[1].plot(x, [r["md_ops"] / width for r in pts], color="#009E73", linewidth=1,
                     label=f"{tag}metadata ops")
    axes[0].set_ylabel("MB/s (10^6 bytes)")
    axes[0].set_title(f"aggregate data rates ({width:.0f} s intervals)", loc="left",
                      fontsize=11)
    axes[1].set_ylabel("operations/s")
    axes[1].set_title("aggregate metadata rate (MDT operations)", loc="left", fontsize=11)
    for ax in axes:
        _time_axis(ax, *span)
        ax.set_ylim(bottom=0)
        if fss:
            ax.legend(loc="upper left", fontsize=8)
        else:
            _empty(ax)
    axes[-1].set_xlabel("time (UTC)")
    return _save(fig, path)


# -- heat map of per-job rates -------------------------------------------------------------------
def _rate_label(v: float, unit: str) -> str:
    if unit == "B/s":
        for u in ("B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"):
            if v < 1024 or u == "TiB/s":
                return f"{v:g} {u}" if v >= 1 else f"{v:.2g} {u}"
            v /= 1024
    return f"{v:g}" if v >= 1 else f"1/{1 / v:g}"


def heatmap(path: Path, span: tuple[float, float], width: float, base: float,
            counts: dict[str, dict[tuple[int, int], int]]) -> Path:
    """Per metric (write, read, metadata): how many series (jobs, and users/hosts outside
    jobs) had a rate in [base^k, base^(k+1)) in each interval; colour = count (log)."""
    panels = (("write", "write rate", "B/s"), ("read", "read rate", "B/s"),
              ("meta", "metadata rate", "ops/s"))
    fig = Figure(figsize=(12, 10), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    n_buckets = max(1, round((span[1] - span[0]) / width))
    b0 = int(span[0] // width)
    for ax, (key, title, unit) in zip(axes, panels, strict=True):
        c = counts.get(key, {})
        if not c:
            _empty(ax)
            ax.set_title(f"{title}: no data", loc="left", fontsize=11)
            _time_axis(ax, *span)
            continue
        ks = [k for _, k in c]
        k0, k1 = min(ks), max(ks)
        grid = [[math.nan] * n_buckets for _ in range(k1 - k0 + 1)]
        for (b, k), n in c.items():
            col = b - b0
            if 0 <= col < n_buckets:
                grid[k - k0][col] = n
        xs = [_dt(b0 * width + i * width) for i in range(n_buckets + 1)]
        ys = [base ** k for k in range(k0, k1 + 2)]
        mesh = ax.pcolormesh(xs, ys, grid, cmap="viridis", shading="flat",
                             norm=LogNorm(vmin=1, vmax=max(1, max(c.values()))))
        ax.set_yscale("log", base=base)
        ticks = ys[:: max(1, len(ys) // 8)]
        ax.set_yticks(ticks)
        ax.set_yticklabels([_rate_label(y, unit) for y in ticks], fontsize=8)
        ax.minorticks_off()
        ax.set_ylabel(unit)
        ax.set_title(f"{title}: series per log bin [{base:g}^k, {base:g}^(k+1)) per "
                     f"{width:.0f} s interval", loc="left", fontsize=11)
        _time_axis(ax, *span)
        ax.grid(False)
        bar = fig.colorbar(mesh, ax=ax, label="series (jobs, users, hosts)", pad=0.01)
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        bar.ax.yaxis.set_minor_formatter(FuncFormatter(
            lambda v, _p: f"{v:g}" if str(v)[0] in "25" else ""))
    axes[-1].set_xlabel("time (UTC)")
    return _save(fig, path)


# -- slowdown ----------------------------------------------------------------------------------
class Run(Protocol):
    """What the slowdown plot needs of a run (slowdown.RunRisk has it)."""

    jobid: str
    elapsed: float
    fs_risk_oss: float | None
    fs_risk_mds: float | None


def slowdown(path: Path, title: str, jobs: Sequence[Run]) -> Path:
    """Run time against the filesystem's mean OSS and MDS risk during each run."""
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, key, colour in ((axes[0], "fs_risk_oss", "#0072B2"),
                            (axes[1], "fs_risk_mds", "#009E73")):
        pts = [j for j in jobs if getattr(j, key) is not None and j.elapsed]
        if pts:
            ax.scatter([getattr(j, key) for j in pts], [j.elapsed / 60 for j in pts], s=36,
                       color=colour, edgecolor="black", linewidth=0.5)
            for j in pts:
                ax.annotate(j.jobid, (getattr(j, key), j.elapsed / 60), xytext=(4, 3),
                            textcoords="offset points", fontsize=7, color="#444444")
        else:
            _empty(ax, "no LASSi hours for these runs")
        ax.set_xlabel(f"mean filesystem {key[3:]} during the run")
        ax.grid(True, color="#e6e6e6")
        ax.set_axisbelow(True)
        top = max([1.0, *[getattr(j, key) for j in pts]]) * 1.15  # risks are >= 0
        ax.set_xlim(-0.03 * top, top)
    axes[0].set_ylabel("run time (minutes)")
    axes[0].set_ylim(bottom=0)
    fig.suptitle(title, fontsize=11)
    return _save(fig, path)
