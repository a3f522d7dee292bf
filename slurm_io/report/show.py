"""`jobio show` / `jobio JOBID`: a job's I/O, like sacct shows its accounting.

The figures come from report.figures (stored or computed: the rule of attribute.figures);
this module renders the typed JobReport: the human view, sacct's `-o` table and `-P`. The
JSON (`--json`, the service) is JobReport.as_json; the tables humanise bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from slurm_io.attribute.ranges import any_wide
from slurm_io.counter_names import BYTE_COUNTERS, KNOWN_COUNTERS
from slurm_io.lassi.summary import LassiSummary
from slurm_io.report.counters import bytes_with_range, count_with_range, human_bytes
from slurm_io.report.jobreport import JobReport, iso
from slurm_io.text import display


class JobSpec(NamedTuple):
    """A job named on the command line, as `sacct -j` takes it (the step is dropped)."""

    number: int  # the job, array or het job id
    display: str | None  # `123_4` or `1853+1`: one array task or het component, by jobid


_SPEC = re.compile(r"([0-9]+)(?:[_+]([0-9]+))?(?:\.\w+)?", re.ASCII)
_JOB_ID_MAX = 2**63 - 1  # job.job is bigint


def parse_job_spec(spec: str) -> JobSpec | None:
    """`123`, `123_4`, `1853+1` (each with an optional `.step`) -> JobSpec; None when
    `spec` is not a job id (other scripts' digits, a number beyond the job column)."""
    m = _SPEC.fullmatch(spec)
    if m is None or int(m.group(1)) > _JOB_ID_MAX:
        return None
    base = spec.split(".", 1)[0]
    return JobSpec(int(m.group(1)), base if m.group(2) is not None else None)


def lassi_line(lassi: LassiSummary | None) -> list[str]:
    if not lassi:
        return []
    worst = ", ".join(f"{k} {v:.1f}" for k, v in list(lassi.risks_max.items())[:3])
    return [f"  LASSi ({','.join(lassi.fs)}, {lassi.hours} h, {lassi.risky_hours} "
            f"risky): risk_oss max {lassi.risk_oss_max:.2f} mean "
            f"{lassi.risk_oss_mean:.2f}, risk_mds max {lassi.risk_mds_max:.2f} mean "
            f"{lassi.risk_mds_mean:.2f}" + (f"; worst: {worst}" if worst else "")]


# -- human table -------------------------------------------------------------------------------
def _elapsed(s: int | None) -> str:
    if s is None:
        return "-"
    d, rem = divmod(int(s), 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{sec:02d}"


def _pct(part: dict[str, int], total: dict[str, int]) -> str:
    b = total.get("read_bytes", 0) + total.get("write_bytes", 0)
    p = part.get("read_bytes", 0) + part.get("write_bytes", 0)
    return f"{100 * p / b:.1f}%" if b else "-"


def render(r: JobReport, *, targets: bool = False, timeline: bool = False) -> str:
    i, io = r.info, r.io
    t = io.totals
    q = io.quality
    rg = io.ranges
    start, end = iso(r.start), iso(r.end)
    lines = [
        # names, users and nodes come from Slurm: shown escaped (slurm_io.text.display)
        f"Job {i.jobid} ({display(i.name or '-')})  "
        f"user {display(str(i.user or i.uid))}  "
        f"state {i.state or '-'}{' (running: I/O so far)' if r.running else ''}"
        + (f"  cluster {display(i.cluster)}" if i.cluster else "")
        + (f"  run {i.run} (requeued)" if i.run else ""),
        f"  nodes {len(i.nodes)}: {display(','.join(i.nodes)) or '-'}",
        f"  start {start or '-'}  end {end or '-'}  elapsed {_elapsed(r.elapsed)}",
        f"  read    {bytes_with_range(t.get('read_bytes', 0), rg.get('read_bytes')):>12} in "
        f"{t.get('read_bytes_samples', 0):>10} requests   mean {_size(q['read_mean_size'])}"
        f"   small {_share(q['read_small_share'])}   read_kb_ops {_num(q['read_kb_ops'])}",
        f"  written {bytes_with_range(t.get('write_bytes', 0), rg.get('write_bytes')):>12} in "
        f"{t.get('write_bytes_samples', 0):>10} requests   mean {_size(q['write_mean_size'])}"
        f"   small {_share(q['write_small_share'])}   write_kb_ops {_num(q['write_kb_ops'])}",
        f"  metadata ops {count_with_range(q['metadata_ops'], rg.get('metadata_ops'))}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(t.items())
                    if k not in ("read_bytes", "write_bytes", "read_bytes_samples",
                                 "write_bytes_samples", "read", "write") and v),
        f"  recovered from job-less ids {_pct(io.recovered, t)}, "
        f"ambiguous (shared with the user's other jobs) {_pct(io.ambiguous, t)} "
        f"(split by evidence {_pct(io.by_evidence, t)}, "
        f"by time {_pct(io.by_time, t)}), "
        f"split pro rata at the job's edges {_pct(io.split, t)}"
        + ("" if r.complete or r.running else "  [collectors have not read past the "
           "job's end yet: figures may grow]")
        + ("" if r.replication_lag is None
           else f"  [read from a standby {r.replication_lag:.1f} s behind the primary]")
        + (f"  [revised after late data: revision {r.revision}]"
           if (r.revision or 1) > 1 else ""),
    ]
    if shows_range(r):
        lines.append("  (least–most): what the job can have done at least and at most, given "
                     "the I/O without job id it shared with the user's other jobs on its nodes")
    lines += lassi_line(r.lassi)
    if targets:
        lines.append(f"  {'target':<22}{'read':>12}{'written':>12}{'meta ops':>10}")
        for name, c in io.by_target.items():
            meta = sum(v for k, v in c.items() if not k.startswith(("read", "write")))
            lines.append(f"  {display(name):<22}{human_bytes(c.get('read_bytes', 0)):>12}"
                         f"{human_bytes(c.get('write_bytes', 0)):>12}{meta:>10}")
    if timeline:
        lines.append(f"  {'time':<21}{'read':>12}{'written':>12}{'meta ops':>10}")
        for ts, rb, wb, m in io.timeline:
            lines.append(f"  {iso(ts):<21}{human_bytes(rb):>12}{human_bytes(wb):>12}{m:>10}")
    return "\n".join(lines)


def shows_range(r: JobReport) -> bool:
    """Whether any figure of the report is shown with its range (wider than 1 %)."""
    return any_wide(r.io.totals, r.io.quality.get("metadata_ops", 0), r.io.ranges)


def _size(n: int | None) -> str:
    return "-" if n is None else human_bytes(n)


def _share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


# -- sacct-like parsable output ----------------------------------------------------------------
FIELDS: dict[str, Callable[[JobReport], Any]] = {
    "jobid": lambda r: r.info.jobid,
    "jobidraw": lambda r: r.info.raw_id,
    "cluster": lambda r: r.info.cluster,
    "user": lambda r: r.info.user,
    "uid": lambda r: r.info.uid,
    "jobname": lambda r: r.info.name,
    "account": lambda r: r.info.account,
    "partition": lambda r: r.info.partition,
    "state": lambda r: r.info.state,
    "start": lambda r: iso(r.start),
    "end": lambda r: iso(r.end) or "Unknown",
    "elapsed": lambda r: _elapsed(r.elapsed),
    "nnodes": lambda r: len(r.info.nodes),
    "nodelist": lambda r: ",".join(r.info.nodes),
    "readbytes": lambda r: r.io.totals.get("read_bytes", 0),
    "writebytes": lambda r: r.io.totals.get("write_bytes", 0),
    "readreqs": lambda r: r.io.totals.get("read_bytes_samples", 0),
    "writereqs": lambda r: r.io.totals.get("write_bytes_samples", 0),
    "metaops": lambda r: r.io.quality["metadata_ops"],
    "readkbops": lambda r: r.io.quality["read_kb_ops"],
    "writekbops": lambda r: r.io.quality["write_kb_ops"],
    "recoveredbytes": lambda r: (r.io.recovered.get("read_bytes", 0)
                                 + r.io.recovered.get("write_bytes", 0)),
    "ambiguousbytes": lambda r: (r.io.ambiguous.get("read_bytes", 0)
                                 + r.io.ambiguous.get("write_bytes", 0)),
    # how sure the figures are (attribute.ranges): bytes and counts, empty where unknown
    # (figures stored by an older release)
    "readbytesleast": lambda r: _bound(r, "read_bytes", 0),
    "readbytesmost": lambda r: _bound(r, "read_bytes", 1),
    "writebytesleast": lambda r: _bound(r, "write_bytes", 0),
    "writebytesmost": lambda r: _bound(r, "write_bytes", 1),
    "metaopsleast": lambda r: _bound(r, "metadata_ops", 0),
    "metaopsmost": lambda r: _bound(r, "metadata_ops", 1),
}


def _bound(r: JobReport, figure: str, side: int) -> int | None:
    got = r.io.ranges.get(figure)
    return None if got is None else got[side]
DEFAULT_FORMAT = "JobID,User,State,Elapsed,NNodes,ReadBytes,WriteBytes,MetaOps"


class Column(NamedTuple):
    """One `-o` field: its name as given, how to read it, and sacct's `%N` width (`%-N`:
    left-justified)."""

    name: str
    get: Callable[[JobReport], Any]
    width: int | None
    left: bool


_FIELD_RE = re.compile(r"(?P<name>[A-Za-z_][\w]*)(?:%(?P<left>-)?(?P<width>\d+))?")
_COUNTER_FIELDS = KNOWN_COUNTERS | {f"{b}_samples" for b in BYTE_COUNTERS}


def parse_format(fmt: str) -> list[Column]:
    """sacct's `--format`/`-o`: comma-separated field names (sacct's, or a Lustre counter
    like `open`; case-insensitive), each with an optional `%N` width. ValueError names a field
    that is neither, so that a typo is not printed as a column of zeros."""
    cols = []
    for item in (c.strip() for c in fmt.split(",")):
        if not item:
            continue
        m = _FIELD_RE.fullmatch(item)
        name = m.group("name") if m else item
        if m is None or (name.lower() not in FIELDS and name.lower() not in _COUNTER_FIELDS):
            raise ValueError(f"unknown field {item!r} in --format (sacct names: "
                             f"{', '.join(sorted(FIELDS))}; or a Lustre counter such as "
                             "read_bytes, open, mkdir)")
        key = name.lower()
        get = FIELDS.get(key) or (lambda r, k=key: r.io.totals.get(k, 0))
        width = int(m.group("width")) if m.group("width") else None
        if width == 0:
            raise ValueError(f"width 0 in field {item!r} of --format")
        cols.append(Column(name, get, width, bool(m.group("left"))))
    if not cols:
        raise ValueError("--format names no field")
    return cols


def _value(v: Any) -> str:
    return "" if v is None else display(str(v))


def parsable(reports: list[JobReport], fmt: str, *, header: bool = True) -> str:
    """`-P` output: `|`-separated, sacct's field names (case-insensitive), counters by
    Lustre name also accepted (e.g. `open`, `mkdir`). Widths are ignored, as by sacct."""
    cols = parse_format(fmt)
    out = ["|".join(c.name for c in cols)] if header else []
    for r in reports:
        out.append("|".join(_value(c.get(r)) for c in cols))
    return "\n".join(out)


def table(reports: list[JobReport], fmt: str, *, header: bool = True) -> str:
    """`-o` without `-P`: sacct's fixed-width table. A field is as wide as its `%N` (else as
    its widest value, at least its name), right-justified (`%-N`: left); a longer value is
    cut and ends in `+`, as in sacct."""
    cols = parse_format(fmt)
    rows = [[_value(c.get(r)) for c in cols] for r in reports]
    widths = [c.width or max([len(c.name), *(len(row[i]) for row in rows)])
              for i, c in enumerate(cols)]

    def cell(text: str, i: int) -> str:
        w = widths[i]
        if len(text) > w:
            text = text[:w - 1] + "+"
        return text.ljust(w) if cols[i].left else text.rjust(w)

    out = []
    if header:
        out.append(" ".join(cell(c.name, i) for i, c in enumerate(cols)))
        out.append(" ".join("-" * w for w in widths))
    out += [" ".join(cell(v, i) for i, v in enumerate(row)) for row in rows]
    return "\n".join(out)
