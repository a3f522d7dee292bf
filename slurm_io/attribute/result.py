"""The result type of attribution, `JobIO`: a job's attributed I/O.

A leaf (typing only): the reports and the client mode of `jobio` rebuild a `JobIO` from the
service's JSON without importing the rules (attribute.core, evidence, observed, sizes), which
cost every `jobio --server ... JOBID` on a login node start-up time it never uses (issue 25).
attribute.core re-exports it.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class JobIO(NamedTuple):
    """A job's attributed I/O. `recovered` is the part of `totals` from `:uid:host` deltas;
    `ambiguous` the part of it other jobs of the uid could own, split by what the data shows
    (`by_evidence`) or, where it shows nothing, by time overlap (`by_time`)."""

    job: int
    totals: dict[str, int]
    recovered: dict[str, int]
    ambiguous: dict[str, int]
    split: dict[str, int]
    by_target: dict[str, dict[str, int]]
    by_node: dict[str, dict[str, int]]
    timeline: list[list[float]]  # [ts, read_bytes, write_bytes, metadata ops]
    quality: dict[str, Any]
    n_direct: int
    n_recovered: int
    by_evidence: dict[str, int]
    by_time: dict[str, int]
    # (hour start, fs, target kind) -> (counters, their recovered part); hours (h, h + 1 h]
    # of ts_end, long intervals spread evenly (slurm_io.timebuckets)
    hours: dict[tuple[float, str, str], tuple[dict[str, int], dict[str, int]]]
    # figure -> (least, most) the job can have done (attribute.ranges): read_bytes,
    # write_bytes, metadata_ops; {} where unknown (figures stored by an older release)
    ranges: dict[str, tuple[int, int]] = {}  # noqa: RUF012 (never mutated)

    def as_json(self) -> dict[str, Any]:
        return {
            "totals": self.totals, "recovered": self.recovered, "ambiguous": self.ambiguous,
            "ambiguous_evidence": self.by_evidence, "ambiguous_time": self.by_time,
            "split": self.split, "by_target": self.by_target, "by_node": self.by_node,
            "timeline": self.timeline, "quality": self.quality,
            "ranges": ranges_json(self.ranges),
        }


def ranges_json(ranges: dict[str, tuple[int, int]]) -> dict[str, dict[str, int]]:
    """`{"read_bytes": {"least": L, "most": M}, ...}`: the JSON form (`--json`, the
    service, job_io.ranges)."""
    return {k: {"least": lo, "most": hi} for k, (lo, hi) in ranges.items()}


def ranges_from_json(d: dict[str, Any] | None) -> dict[str, tuple[int, int]]:
    """The inverse of ranges_json; {} for none (an older service or stored row)."""
    return {k: (int(v["least"]), int(v["most"])) for k, v in (d or {}).items()
            if isinstance(v, dict) and "least" in v and "most" in v}
