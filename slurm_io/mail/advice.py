"""Plain advice on a job's I/O pattern: many small requests, heavy metadata load.

Apart from slurm_io.mail.view (which lays out the whole report) because this is the part a
site tunes and reads on its own: the thresholds (Thresholds, site-configurable) and the
tips given to users. Alerts (slurm_io.alerts.rules) give the same advice on a running job's
window, so both must read the same rules. Pure: the figures the rules read (`Figures`: a
report.jobreport.JobReport, or the alerts' window of a running job) in, Advice out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from slurm_io.mail.fmt import fmt_count, fmt_pct, fmt_si, fmt_size
from slurm_io.mail.view_model import STORM_OPS, Advice, Thresholds

_THRESHOLDS = Thresholds()  # the defaults (a frozen value, shared)


class Figures(Protocol):
    """What the advice rules read of a job, so that a finished job's report
    (report.jobreport.JobReport) and a running job's window (alerts.rules) get the same
    words from the same rules without either being dressed up as the other."""

    @property
    def totals(self) -> Mapping[str, float]: ...
    @property
    def quality(self) -> Mapping[str, Any]: ...
    @property
    def nodes(self) -> Sequence[str]: ...
    @property
    def elapsed(self) -> float | None: ...


def share_known(q: Mapping[str, Any], kind: str, t: Thresholds) -> float | None:
    """The share of small requests of `kind`, or None where the histograms or bounds tell
    it for too few requests to be trusted (shared with the quality table of mail.view)."""
    share = q.get(f"{kind}_small_share")
    basis = q.get(f"{kind}_small_share_basis") or 0.0
    return share if share is not None and basis >= t.min_share_basis else None


def node_hours(r: Figures) -> float:
    """The job's node-hours for metadata rates: nodes × elapsed, at least one node-minute."""
    nodes = max(1, len(r.nodes or ()))
    elapsed = r.elapsed
    return nodes * max(60.0, float(elapsed if elapsed is not None else 3600)) / 3600



SMALL_WRITE_TIPS = (
    "Buffer output and write in large blocks (1 MiB or more): bigger stdio/Fortran buffers "
    "(setvbuf, FORT_BUFFERED=yes), or gather records in memory before writing them.",
    "Do not flush or fsync after every record; lower the logging verbosity of long runs.",
    "With MPI-IO, use collective writes (MPI_File_write_all) with collective buffering "
    "(romio_cb_write=enable) so that a few aggregators write large blocks.",
    "With HDF5 or NetCDF-4, use chunks of 1 MiB or more (H5Pset_chunk) and collective I/O "
    "(H5Pset_dxpl_mpio) instead of many tiny writes or datasets.",
)
SMALL_READ_TIPS = (
    "Read in large blocks (1 MiB or more) and keep data you reuse in memory instead of "
    "re-reading it.",
    "With MPI-IO, use collective reads (MPI_File_read_all, romio_cb_read=enable); with "
    "HDF5, match the chunking to how you read and enlarge the chunk cache (H5Pset_chunk_cache).",
    "Many small input files: pack them (tar, zip, HDF5, a squashfs image) or copy them once "
    "to node-local /tmp and read them there.",
)


def _small_io_advice(r: Figures, kind: str, t: Thresholds) -> Advice | None:
    q, tot = r.quality or {}, r.totals or {}
    requests = float(tot.get(f"{kind}_bytes_samples", 0))
    if requests < t.min_requests:
        return None
    kb_ops = q.get(f"{kind}_kb_ops")
    share = share_known(q, kind, t)
    by_ops = kb_ops is not None and kb_ops > t.kb_ops
    by_share = share is not None and share > t.small_share
    if not (by_ops or by_share):
        return None
    verb, noun = ("wrote", "write") if kind == "write" else ("read", "read")
    parts = [f"The job {verb} {fmt_size(tot.get(f'{kind}_bytes', 0))} in "
             f"{fmt_count(requests)} {noun} requests of {fmt_size(q.get(f'{kind}_mean_size'))} "
             f"on average ({kind}_kb_ops {kb_ops:.1f}; 1 means 1 MiB requests, ideal for "
             "Lustre)" if kb_ops is not None else ""]
    if share is not None:
        parts.append(f"{fmt_pct(share, 0)} of them were smaller than 64 KiB")
    finding = "; ".join(p for p in parts if p) + ". Small requests cost the file servers " \
        "as much as large ones and make the job slower than it needs to be."
    return Advice(f"small_{kind}s", f"Many small {noun}s", finding,
                  SMALL_WRITE_TIPS if kind == "write" else SMALL_READ_TIPS)


def _metadata_advice(r: Figures, t: Thresholds) -> Advice | None:
    tot = r.totals or {}
    nh = node_hours(r)
    storms = [(op, tot[op]) for op in STORM_OPS
              if tot.get(op, 0) >= t.min_metadata_ops
              and tot.get(op, 0) / nh > t.metadata_per_node_hour]
    if not storms:
        return None
    what = ", ".join(f"{fmt_count(n)} {STORM_OPS[op]} ({fmt_si(n / nh)} per node-hour)"
                     for op, n in storms)
    finding = (f"The job made {what}; more than {fmt_si(t.metadata_per_node_hour)} per "
               "node-hour loads the metadata server that every job on the cluster shares, "
               "and slows everyone's ls, open and file creation.")
    ops = {op for op, _ in storms}
    tips = ["Use fewer, larger files: one file per rank or a shared HDF5/NetCDF file instead "
            "of one file per step, record or task."]
    if "open" in ops:
        tips.append("Open each file once and keep it open while you write or read it, instead "
                    "of reopening it for every record.")
    if "getattr" in ops:
        tips.append("Avoid stat loops: do not poll for files with ls, stat, test -e or "
                    "os.path.exists in a loop, and avoid ls -l or find over large trees; keep "
                    "file lists in memory.")
    if "mkdir" in ops:
        tips.append("Create directory trees once at the start, not one directory per task "
                    "or step.")
    if "unlink" in ops:
        tips.append("Avoid creating and deleting many temporary files on Lustre.")
    tips.append("Put scratch work with many small files on node-local /tmp (or $TMPDIR) and "
                "copy the results back as one archive at the end of the job.")
    return Advice("metadata", "Heavy metadata load", finding, tuple(tips))


def advice(r: Figures, t: Thresholds = _THRESHOLDS) -> tuple[Advice, ...]:
    """Plain advice for a poor I/O pattern; empty for a healthy job."""
    found = [_small_io_advice(r, "write", t), _small_io_advice(r, "read", t),
             _metadata_advice(r, t)]
    return tuple(a for a in found if a is not None)
