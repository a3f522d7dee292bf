"""Which stored columns hold which Lustre counter, for views that sum them."""

from __future__ import annotations

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


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover
