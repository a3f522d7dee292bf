"""Hand-written SVG charts of one job's I/O: rates and metadata operations over the job's
time, and the share per OST. Pure: a show document's timeline in, SVG text out.

Why hand-written: the login node has no internet (no CDN) and a vendored chart library is
kilobytes of JavaScript to review for a few lines and bars. The chart adapts instead of
zooming: the timeline (one row per collector interval) is summed into at most `MAX_BINS`
bins of a "nice" width (2 minutes for a 5-minute job, 2 hours for a week), and the time
axis labels clock times or days by the span, so a 5-minute job and a 7-day one both read.
Every chart has a title and a description for screen readers, and the page puts the same
numbers in a table next to it.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

READ = "#2563eb"  # as the mail's chart (mail.view_model)
WRITE = "#ea580c"
META = "#7c3aed"
GRID = "#cbd5e1"
INK = "#0f172a"
STEPS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
         172800, 604800)
MAX_BINS = 120
WIDTH, HEIGHT = 880, 220
LEFT, RIGHT, TOP, BOTTOM = 78, 12, 14, 34


@dataclass(frozen=True)
class Bins:
    """The timeline summed into bins of `width` seconds from `start`."""

    start: float
    width: float
    read: list[float]  # bytes per second over each bin
    write: list[float]
    meta: list[float]  # operations per second


def bin_width(span: float, resolution: float) -> float:
    """The smallest nice width, not finer than the collector's resolution, that puts the
    span in at most MAX_BINS bins."""
    for step in STEPS:
        if step >= resolution and span / step <= MAX_BINS:
            return float(step)
    return float(STEPS[-1])


def binned(timeline: Sequence[Sequence[float]], start: float | None, end: float) -> Bins:
    """Rates per bin of a timeline of [ts_end, read_bytes, write_bytes, metadata ops] rows
    (each the delta of the interval ending at ts_end)."""
    rows = sorted((float(r[0]), float(r[1]), float(r[2]), float(r[3])) for r in timeline
                  if len(r) >= 4)
    ends = [r[0] for r in rows]
    gaps = [b - a for a, b in itertools.pairwise(ends) if b > a]
    resolution = sorted(gaps)[len(gaps) // 2] if gaps else 60.0
    lo = start if start is not None else (ends[0] - resolution if ends else end - 300)
    hi = max(end, ends[-1] if ends else end)
    width = bin_width(max(hi - lo, 60.0), resolution)
    lo = math.floor(lo / width) * width
    n = max(1, math.ceil((hi - lo) / width))
    read, write, meta = [0.0] * n, [0.0] * n, [0.0] * n
    for ts, r, w, m in rows:
        k = min(n - 1, max(0, math.ceil((ts - lo) / width) - 1))
        read[k] += r / width
        write[k] += w / width
        meta[k] += m / width
    return Bins(lo, width, read, write, meta)


def nice_max(v: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten at or above v."""
    if v <= 0:
        return 1.0
    p = 10 ** math.floor(math.log10(v))
    return next(m * p for m in (1, 2, 5, 10) if m * p >= v)


def si(v: float, unit: str) -> str:
    for div, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def time_label(t: float, span: float) -> str:
    d = datetime.fromtimestamp(t)
    if span <= 2 * 86400:
        return d.strftime("%H:%M") if span > 600 else d.strftime("%H:%M:%S")
    return d.strftime("%a %d %H:%M") if span <= 4 * 86400 else d.strftime("%a %d")


def _ticks(lo: float, hi: float) -> list[float]:
    span = hi - lo
    step = next((s for s in STEPS if span / s <= 7), STEPS[-1])
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) // step) + 1)]


def _frame(title: str, desc: str, ident: str, ymax: float, unit: str, lo: float,
           hi: float) -> list[str]:
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" '
           f'aria-labelledby="{ident}-t {ident}-d" xmlns="http://www.w3.org/2000/svg">',
           f'<title id="{ident}-t">{html.escape(title)}</title>',
           f'<desc id="{ident}-d">{html.escape(desc)}</desc>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>']
    for k in range(5):
        y = TOP + ph - ph * k / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{GRID}" stroke-width="1"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
                   f'fill="{INK}">{html.escape(si(ymax * k / 4, unit))}</text>')
    for t in _ticks(lo, hi):
        x = LEFT + pw * (t - lo) / (hi - lo)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + ph}" y2="{TOP + ph + 4}" '
                   f'stroke="{INK}"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ph + 18}" text-anchor="middle" '
                   f'font-size="11" fill="{INK}">{html.escape(time_label(t, hi - lo))}</text>')
    return out


def _bars(values: list[float], lo: float, width: float, hi: float, ymax: float,
          colour: str, offset: int, share: int) -> list[str]:
    """Bars of one series; `share` series side by side in each bin, this one at `offset`."""
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bw = pw * width / (hi - lo)
    out = []
    for k, v in enumerate(values):
        if v <= 0:
            continue
        h = max(1.0, ph * min(v, ymax) / ymax)
        x = LEFT + pw * (k * width) / (hi - lo) + bw * offset / share
        w = max(1.0, bw / share - 0.5)
        out.append(f'<rect x="{x:.2f}" y="{TOP + ph - h:.2f}" width="{w:.2f}" '
                   f'height="{h:.2f}" fill="{colour}"/>')
    return out


def rates_svg(b: Bins) -> str:
    """Read and write rates per bin, side by side."""
    hi = b.start + b.width * len(b.read)
    ymax = nice_max(max([*b.read, *b.write, 0.0]))
    desc = (f"Read (blue) and write (orange) rates in bins of {int(b.width)} s; "
            f"highest read {si(max(b.read), 'B/s')}, highest write {si(max(b.write), 'B/s')}.")
    out = _frame("Read and write rates over the job's time", desc, "rates", ymax, "B/s",
                 b.start, hi)
    out += _bars(b.read, b.start, b.width, hi, ymax, READ, 0, 2)
    out += _bars(b.write, b.start, b.width, hi, ymax, WRITE, 1, 2)
    return "\n".join([*out, "</svg>"])


def meta_svg(b: Bins) -> str:
    """Metadata operations per second per bin."""
    hi = b.start + b.width * len(b.meta)
    ymax = nice_max(max([*b.meta, 0.0]))
    desc = (f"Metadata operations per second in bins of {int(b.width)} s; highest "
            f"{si(max(b.meta), 'op/s')}.")
    out = _frame("Metadata operations over the job's time", desc, "meta", ymax, "op/s",
                 b.start, hi)
    out += _bars(b.meta, b.start, b.width, hi, ymax, META, 0, 1)
    return "\n".join([*out, "</svg>"])


def ost_shares(by_target: dict[str, dict[str, float]], top: int = 16
               ) -> list[tuple[str, float, float]]:
    """(OST, read bytes, written bytes) of the OSTs, biggest first; the rest summed as
    'other OSTs' after the first `top`."""
    rows = sorted(((name, float(c.get("read_bytes", 0)), float(c.get("write_bytes", 0)))
                   for name, c in by_target.items() if "OST" in name.upper()),
                  key=lambda r: (-(r[1] + r[2]), r[0]))
    rows = [r for r in rows if r[1] + r[2] > 0]
    if len(rows) > top:
        rest = rows[top:]
        rows = [*rows[:top], (f"{len(rest)} other OSTs", sum(r[1] for r in rest),
                              sum(r[2] for r in rest))]
    return rows


def ost_svg(rows: list[tuple[str, float, float]]) -> str:
    """Horizontal bars: each OST's share of the job's bytes (read and written stacked)."""
    total = sum(r + w for _, r, w in rows) or 1.0
    bar_h, left, width = 18, 150, WIDTH - 150 - 70
    height = 10 + bar_h * len(rows)
    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           'aria-labelledby="ost-t ost-d" xmlns="http://www.w3.org/2000/svg">',
           '<title id="ost-t">Share of the job\'s bytes per OST</title>',
           f'<desc id="ost-d">{len(rows)} OSTs; the biggest holds '
           f'{100 * (rows[0][1] + rows[0][2]) / total if rows else 0:.0f}% of the bytes.</desc>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>']
    top_share = max(((r + w) / total for _, r, w in rows), default=1.0) or 1.0
    for k, (name, r, w) in enumerate(rows):
        y = 5 + k * bar_h
        rw, ww = width * r / total / top_share, width * w / total / top_share
        out.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" font-size="11" '
                   f'fill="{INK}">{html.escape(name)}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{rw:.2f}" height="{bar_h - 5}" '
                   f'fill="{READ}"/>')
        out.append(f'<rect x="{left + rw:.2f}" y="{y + 2}" width="{ww:.2f}" '
                   f'height="{bar_h - 5}" fill="{WRITE}"/>')
        out.append(f'<text x="{left + rw + ww + 4:.2f}" y="{y + 13}" font-size="11" '
                   f'fill="{INK}">{100 * (r + w) / total:.1f}%</text>')
    return "\n".join([*out, "</svg>"])
