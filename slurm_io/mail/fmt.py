"""How the mail (and alerts) print numbers: counts, sizes, rates, durations. Pure, a leaf.

Apart from slurm_io.mail.view so that alerts and other texts format figures the same way
without importing the view; view re-exports these names.
"""

from __future__ import annotations

from slurm_io.report.counters import human_bytes


def fmt_count(n: float | None) -> str:
    """1234567 -> '1,234,567'."""
    return "-" if n is None else f"{round(n):,}"


def fmt_si(n: float | None) -> str:
    """1234567 -> '1.2 M' (counts and rates of operations)."""
    if n is None:
        return "-"
    for div, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(n) >= div:
            x = n / div
            return f"{x:.0f}{unit}" if abs(x) >= 100 or x == int(x) else f"{x:.1f}{unit}"
    return f"{n:.0f}"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """0.2468 -> '24.7%'."""
    if x is None:
        return "-"
    return f"{100 * x:.{digits}f}%"


def fmt_size(n: float | None) -> str:
    return "-" if n is None else human_bytes(n)


def fmt_rate(bytes_per_s: float) -> str:
    return f"{human_bytes(bytes_per_s)}/s" if bytes_per_s > 0 else ""


def fmt_duration(s: float | None) -> str:
    """Seconds -> '1 h 02 min', '46 min 35 s', '2 d 03 h'."""
    if s is None:
        return "-"
    s = round(s)
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{d} d {h:02d} h"
    if h:
        return f"{h} h {m:02d} min"
    if m:
        return f"{m} min {sec:02d} s"
    return f"{sec} s"


def fmt_step(s: int) -> str:
    if s % 86400 == 0:
        return f"{s // 86400} d"
    if s % 3600 == 0:
        return f"{s // 3600} h"
    if s % 60 == 0:
        return f"{s // 60} min"
    return f"{s} s"
