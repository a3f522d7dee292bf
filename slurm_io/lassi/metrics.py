"""LASSi's risk and ops metrics (Sivalingam et al., "LASSi: metric based I/O analytics for
HPC"), as pure functions over plain data.

For an operation x on a filesystem fs and a value of x (a job's in one hour, or the whole
filesystem's in one hour):

    risk_fs(x) = (x - a * avg_fs(x)) / (a * avg_fs(x))

where avg_fs(x) is the average of the same kind of value over a baseline window (by default
the previous 7 days; see `averages`) and a the scaling factor (default 2). A risk above 0 means
"more than a times the usual"; 0 is "a times the usual"; -1 is "did nothing".

    risk_oss = sum of the positive risks of OSS_METRICS (read_kb, read_ops, write_kb, write_ops,
               other: OST operations other than reads and writes)
    risk_mds = sum of the positive risks of MDS_METRICS (the metadata operations on MDTs)

Ops metrics (request quality): read_kb_ops = read_ops * 1024 / read_kb, likewise write_kb_ops:
1 for 1 MiB requests (ideal for Lustre), 256 for 4 KiB requests.

Everything here works on `dict[str, float]` keyed by metric name; slurm_io.lassi.sql fetches
and stores, slurm_io.lassi.days puts the two together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from slurm_io.timebuckets import spread_buckets  # noqa: F401 -- the hour rule of LASSi

DEFAULT_A = 2.0
DEFAULT_BASELINE_DAYS = 7

# OSS side: data volume and requests on OSTs, plus every other OST operation.
OSS_METRICS: tuple[str, ...] = ("read_kb", "read_ops", "write_kb", "write_ops", "other")
# MDS side: metadata operations counted on MDTs. Left out on purpose: samedir_rename,
# crossdir_rename and the parallel_rename_* counters (sub-counts of `rename` in 2.15+, they
# would count renames twice), rename_trylocks (lock statistics, not client operations),
# migrate (an admin's `lfs migrate -m`) and data counters of Data-on-MDT.
MDS_METRICS: tuple[str, ...] = (
    "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr",
    "setattr", "getxattr", "setxattr", "statfs", "sync",
)
METRICS: tuple[str, ...] = OSS_METRICS + MDS_METRICS
# OST operation counters that are not "other": reads and writes are already in *_ops
OST_DATA_OPS: frozenset[str] = frozenset({"read", "write"})


def column(metric: str) -> str:
    """The SQL column of a metric in the lassi_* tables (metadata ops get an `md_` prefix)."""
    return f"md_{metric}" if metric in MDS_METRICS else metric


def risk(x: float, avg: float | None, a: float = DEFAULT_A) -> float:
    """LASSi's risk of value x against the average avg; 0 when there is no average."""
    if not avg or avg <= 0:
        return 0.0
    return (x - a * avg) / (a * avg)


def positive_risks(values: Mapping[str, float], avgs: Mapping[str, float | None],
                   metrics: Iterable[str], a: float = DEFAULT_A) -> dict[str, float]:
    """The positive risks of `metrics` (only those above 0)."""
    out = {}
    for m in metrics:
        r = risk(values.get(m, 0.0), avgs.get(m), a)
        if r > 0:
            out[m] = r
    return out


def kb_ops(ops: float, kb: float) -> float | None:
    """LASSi's x_kb_ops = x_ops * 1024 / x_kb (None without data)."""
    if kb <= 0 or ops <= 0:
        return None
    return ops * 1024.0 / kb


class Scored(NamedTuple):
    """One (job or filesystem) hour with its LASSi figures."""

    values: dict[str, float]  # metric -> value in the hour
    risk_oss: float
    risk_mds: float
    risks: dict[str, float]  # metric -> positive risk (the metrics that make it risky)
    read_kb_ops: float | None
    write_kb_ops: float | None


def score(values: Mapping[str, float], avgs: Mapping[str, float | None],
          a: float = DEFAULT_A) -> Scored:
    """risk_oss, risk_mds and the ops metrics of one hour's values."""
    oss = positive_risks(values, avgs, OSS_METRICS, a)
    mds = positive_risks(values, avgs, MDS_METRICS, a)
    return Scored(
        values={m: float(values.get(m, 0.0)) for m in METRICS},
        risk_oss=sum(oss.values()),
        risk_mds=sum(mds.values()),
        risks={**oss, **mds},
        read_kb_ops=kb_ops(values.get("read_ops", 0.0), values.get("read_kb", 0.0)),
        write_kb_ops=kb_ops(values.get("write_ops", 0.0), values.get("write_kb", 0.0)),
    )


def averages(rows: Iterable[Mapping[str, float]]) -> dict[str, float | None]:
    """avg_fs(x) for every metric: the mean of the values above 0 (None when there is none).

    Only non-zero values count: most jobs do no mkdir in a given hour, and averaging their
    zeros in would make any job that does a few look risky.
    """
    sums = dict.fromkeys(METRICS, 0.0)
    counts = dict.fromkeys(METRICS, 0)
    for r in rows:
        for m in METRICS:
            v = r.get(m, 0.0)
            if v > 0:
                sums[m] += v
                counts[m] += 1
    return {m: (sums[m] / counts[m] if counts[m] else None) for m in METRICS}


def fill_baseline(baseline: Mapping[str, float | None], own: Mapping[str, float | None]
                  ) -> tuple[dict[str, float | None], list[str]]:
    """The baseline averages, with the period's own average for metrics the baseline lacks.

    Returns (averages, the metrics taken from the period itself). A filesystem without
    history (the first week, a demo) is thereby compared with itself.
    """
    out: dict[str, float | None] = {}
    own_used = []
    for m in METRICS:
        b = baseline.get(m)
        if b:
            out[m] = b
        else:
            out[m] = own.get(m)
            if own.get(m):
                own_used.append(m)
    return out, own_used


def add_into(dst: dict[str, float], src: Mapping[str, float], f: float = 1.0) -> None:
    for k, v in src.items():
        if v:
            dst[k] = dst.get(k, 0.0) + v * f


def metric_values(kind: str, sums: Mapping[str, float]) -> dict[str, float]:
    """Metric values from summed Lustre counters of one target kind.

    `sums` has `read_bytes`, `read_bytes_samples`, `write_bytes`, `write_bytes_samples`,
    `other` (sum of the OST operation counters other than read/write) and one entry per MDS
    metric. OST targets give the OSS metrics, MDT targets the MDS metrics.
    """
    out: dict[str, float] = {}
    if kind == "OST":
        out["read_kb"] = sums.get("read_bytes", 0.0) / 1024.0
        out["read_ops"] = float(sums.get("read_bytes_samples", 0.0))
        out["write_kb"] = sums.get("write_bytes", 0.0) / 1024.0
        out["write_ops"] = float(sums.get("write_bytes_samples", 0.0))
        out["other"] = float(sums.get("other", 0.0))
    elif kind == "MDT":
        for m in MDS_METRICS:
            out[m] = float(sums.get(m, 0.0))
    return {k: v for k, v in out.items() if v}


def log_bin(rate: float, base: float) -> int | None:
    """k such that rate is in [base^k, base^(k+1)) (None for rates <= 0)."""
    import math

    if rate <= 0:
        return None
    k = math.floor(math.log(rate, base))
    # guard against log rounding at exact powers (log(64, 4) = 2.9999...)
    if base ** (k + 1) <= rate:
        k += 1
    elif base ** k > rate:
        k -= 1
    return k
