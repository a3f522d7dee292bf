"""Hand-made job reports shaped like `report.show.job_report`, for the pure mail tests.

They are made in the JSON form (`JobReport.as_json`), which tests change in place; `typed`
rebuilds the typed `JobReport` the mail's readers take, as the service's clients do.

The quality block is computed by the real `attribute.core.quality` from the totals and the
request-size bounds, so that the figures are consistent with what attribution produces.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from slurm_io.attribute.core import SizeProfile, quality
from slurm_io.report.jobreport import JobReport

START = 1_795_000_000.0  # 2026-11-18T07:46:40Z
KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
NOW = START + 30 * 86400  # long after every hand-made job (they carry their elapsed)


def typed(d: dict[str, Any]) -> JobReport:
    """The typed report of a hand-made one (its JSON form), by the project's own reader."""
    return JobReport.from_json(d, now=NOW)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t).isoformat(timespec="seconds")


def job_report(*, jobid: int = 123, name: str | None = "stream", user: str = "alice",
               uid: int = 1001, nodes: int = 1, elapsed: float = 3600.0,
               read_bytes: int = 0, read_size: int = 4 * MiB,
               write_bytes: int = 0, write_size: int = 4 * MiB,
               meta: dict[str, int] | None = None, recovered_share: float = 0.0,
               ambiguous_share: float = 0.0, resolution: float = 120.0,
               state: str = "COMPLETED", targets: int = 4) -> dict[str, Any]:
    """A finished job that streamed `read_bytes`/`write_bytes` evenly over its run in
    requests of `read_size`/`write_size` bytes, with metadata operations `meta`."""
    meta = meta or {}
    totals: dict[str, float] = {}
    profiles: dict[str, SizeProfile] = {}
    for kind, nbytes, size in (("read", read_bytes, read_size), ("write", write_bytes,
                                                                  write_size)):
        if nbytes:
            n = max(1, nbytes // size)
            totals[f"{kind}_bytes"] = nbytes
            totals[f"{kind}_bytes_samples"] = n
            p = SizeProfile()
            p.add(n, size, size, None, 1.0)
            profiles[kind] = p
    totals.update(meta)
    q = quality(totals, profiles)
    tot = {k: round(v) for k, v in totals.items()}
    node_names = [f"node{i:03d}" for i in range(1, nodes + 1)]
    bins = max(1, int(elapsed // resolution))
    first = (START // resolution) * resolution
    n_meta = sum(meta.values())
    timeline = [[first + i * resolution, round(read_bytes / bins), round(write_bytes / bins),
                 round(n_meta / bins)] for i in range(bins)]
    by_target: dict[str, dict[str, int]] = {"scratch-MDT0000": dict(meta)} if meta else {}
    for i in range(targets):
        by_target[f"scratch-OST{i:04d}"] = {"read_bytes": read_bytes // targets,
                                            "write_bytes": write_bytes // targets}

    def part(share: float) -> dict[str, int]:
        return {k: round(v * share) for k, v in tot.items() if round(v * share)}

    return {
        "jobid": str(jobid), "job": jobid, "user": user, "uid": uid, "account": "proj",
        "partition": "batch", "name": name, "nodes": node_names,
        "start": _iso(START), "end": _iso(START + elapsed), "elapsed": round(elapsed),
        "state": state, "exit_code": "0:0", "work_dir": f"/scratch/{user}", "running": False,
        "complete": True, "totals": tot, "recovered": part(recovered_share),
        "ambiguous": part(ambiguous_share), "split": {}, "by_target": by_target,
        "by_node": {n: {} for n in node_names}, "timeline": timeline, "quality": q,
    }


def small_writer(**kw: Any) -> dict[str, Any]:
    """Writes 8 GiB in 4 KiB requests (write_kb_ops 256)."""
    return job_report(**{"name": "tiny_writes", "write_bytes": 8 * GiB, "write_size": 4 * KiB,
                         "read_bytes": 2 * GiB, **kw})


def metadata_storm(**kw: Any) -> dict[str, Any]:
    """A million opens (and closes) in one node-hour, little data."""
    return job_report(**{"name": "many_files", "read_bytes": 200 * MiB,
                         "meta": {"open": 1_000_000, "close": 1_000_000, "getattr": 20_000},
                         **kw})


def healthy_streamer(**kw: Any) -> dict[str, Any]:
    """Streams 600 GiB in and 1.2 TiB out in 4 MiB requests over 4 nodes, few files."""
    return job_report(**{"name": "stream", "nodes": 4, "read_bytes": 600 * GiB,
                         "write_bytes": int(1.2 * TiB),
                         "meta": {"open": 2_000, "close": 2_000, "getattr": 1_500,
                                  "mkdir": 10},
                         **kw})
