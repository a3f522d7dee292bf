"""Which stored columns hold which Lustre counter, for views that sum them."""

from __future__ import annotations

from slurm_io.attribute.ranges import wide
from slurm_io.counter_names import BYTE_COUNTERS, OP_COUNTERS

# output name -> SQL column. Byte counters: `read_bytes` is the byte sum, and
# `read_bytes_samples` the number of requests (the counter's `samples`).
SUM_COLUMNS: dict[str, str] = {}
for _b in BYTE_COUNTERS:
    SUM_COLUMNS[_b] = _b
    SUM_COLUMNS[f"{_b}_samples"] = f"{_b}_samples"
for _op in OP_COUNTERS:
    SUM_COLUMNS[_op] = f"op_{_op}"


def sum_select(alias: str = "") -> str:
    """`coalesce(sum(a.read_bytes),0) AS "read_bytes", ...` for every counter column."""
    p = f"{alias}." if alias else ""
    return ", ".join(f'coalesce(sum({p}{col}), 0)::bigint AS "{name}"'
                     for name, col in SUM_COLUMNS.items())


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: float) -> str:
    for unit in _UNITS:
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def bytes_with_range(n: float, r: tuple[int, int] | None) -> str:
    """`95.9 GiB (95.1–96.4)` where the range the rules defend (attribute.ranges) is wider
    than 1 % of the figure, `95.9 GiB` elsewhere: the three in the unit of the most, so a
    figure of 0 B that may be 1.2 GiB reads `0.0 GiB (0.0–1.2)`."""
    if r is None or not wide(n, r):
        return human_bytes(n)
    unit = human_bytes(r[1]).split()[-1]
    div = float(1024 ** _UNITS.index(unit))
    digits = 0 if unit == "B" else 1

    def f(x: float) -> str:
        return f"{x / div:.{digits}f}"

    return f"{f(n)} {unit} ({f(r[0])}–{f(r[1])})"


def count_with_range(n: int, r: tuple[int, int] | None) -> str:
    """`1234 (1200–1300)` where the range is wider than 1 % of the count, `1234` elsewhere."""
    if r is None or not wide(n, r):
        return str(n)
    return f"{n} ({r[0]}–{r[1]})"
