"""`jobio usage`: totals per counter over a time range, split by id class and filesystem.

The admins' check that nothing was lost: the totals over all classes are everything the
collectors stored, attributable (job ids, recoverable `:uid:host`) or not (login `%e.%u`,
system uids, unrecoverable ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from slurm_io.model import IdClass
from slurm_io.report.counters import SUM_COLUMNS, human_bytes

if TYPE_CHECKING:  # render_table is used by the service's clients, without psycopg
    from psycopg import Connection

    from slurm_io.report.sql import ExtraSum, UsageSum
    from slurm_io.store.problems import SourceProblems


def _nonzero(d: dict[str, int]) -> dict[str, int]:
    return {k: int(v) for k, v in d.items() if v}


@dataclass(frozen=True)
class ProblemCounts:
    """Problems recorded in the range: how many, how many lost data, how many per source."""

    total: int
    losses: int
    by_source: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        return {"total": self.total, "losses": self.losses, "by_source": dict(self.by_source)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProblemCounts:
        return cls(d["total"], d["losses"], dict(d["by_source"]))


@dataclass(frozen=True)
class Usage:
    """What the collectors stored between `start` and `end` (ISO times, UTC): delta rows and
    counters in all, per id class (label) and per filesystem; the problems recorded (None:
    not an admin, the quarantine is not readable)."""

    start: str
    end: str
    problems: ProblemCounts | None
    rows: int
    rows_by_class: dict[str, int]
    totals: dict[str, int]
    by_class: dict[str, dict[str, int]]
    by_fs: dict[str, dict[str, int]]

    def as_json(self) -> dict[str, Any]:
        """The JSON document `jobio usage --json` and the read service give (keys in this
        order, as before the record existed)."""
        return {"start": self.start, "end": self.end,
                "problems": None if self.problems is None else self.problems.as_json(),
                "rows": self.rows, "rows_by_class": dict(self.rows_by_class),
                "totals": dict(self.totals),
                "by_class": {k: dict(v) for k, v in self.by_class.items()},
                "by_fs": {k: dict(v) for k, v in self.by_fs.items()}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Usage:
        """The record of a document `as_json` made (a read service's answer)."""
        p = d.get("problems")
        return cls(d["start"], d["end"], None if p is None else ProblemCounts.from_json(p),
                   d["rows"], dict(d["rows_by_class"]), dict(d["totals"]),
                   {k: dict(v) for k, v in d["by_class"].items()},
                   {k: dict(v) for k, v in d["by_fs"].items()})


def usage(conn: Connection, start: float, end: float) -> Usage:
    """Counters summed over deltas with ts_end in (start, end]."""
    from slurm_io.report import sql as q  # lazily: clients import this module to render

    s = datetime.fromtimestamp(start, UTC)
    e = datetime.fromtimestamp(end, UTC)
    return summarise(s, e, q.usage_sums(conn, s, e), q.usage_extra(conn, s, e),
                     problem_counts(conn, s, e))


def summarise(s: datetime, e: datetime, rows: list[UsageSum], extra: list[ExtraSum],
              problems: ProblemCounts | None) -> Usage:
    """The sums per filesystem and class folded into totals, per class label and per fs."""
    names = list(SUM_COLUMNS)
    totals: dict[str, int] = {}
    by_class: dict[str, dict[str, int]] = {}
    by_fs: dict[str, dict[str, int]] = {}
    n_rows = 0
    rows_by_class: dict[str, int] = {}

    def add(dst: dict[str, int], name: str, v: int) -> None:
        dst[name] = dst.get(name, 0) + int(v)

    for r in rows:
        label = IdClass(r.id_class).label
        n_rows += r.rows
        rows_by_class[label] = rows_by_class.get(label, 0) + r.rows
        for name, v in zip(names, r.sums, strict=True):
            add(totals, name, v)
            add(by_class.setdefault(label, {}), name, v)
            add(by_fs.setdefault(r.fs or "-", {}), name, v)
    for x in extra:
        label = IdClass(x.id_class).label
        add(totals, x.key, x.value)
        add(by_class.setdefault(label, {}), x.key, x.value)
        add(by_fs.setdefault(x.fs or "-", {}), x.key, x.value)
    return Usage(s.isoformat(), e.isoformat(), problems, n_rows,
                 dict(sorted(rows_by_class.items())), _nonzero(totals),
                 {k: _nonzero(v) for k, v in sorted(by_class.items())},
                 {k: _nonzero(v) for k, v in sorted(by_fs.items())})


def problem_counts(conn: Connection, s: datetime, e: datetime) -> ProblemCounts | None:
    """Problems recorded in (s, e] by source, and how many lost data (`lost` set).

    What the collectors could not take or lost is part of the answer to "was anything
    lost?". The quarantine is readable by admins only: for others this is None.
    """
    from slurm_io.store import problems as quarantine
    from slurm_io.store.errors import InsufficientPrivilege

    try:
        rows = quarantine.by_source(conn, s, e)
    except InsufficientPrivilege:
        return None
    return counted(rows)


def counted(rows: list[SourceProblems]) -> ProblemCounts:
    """The problems per source added up."""
    return ProblemCounts(sum(r.n for r in rows), sum(r.losses for r in rows),
                         {r.source: int(r.n) for r in rows})


_TABLE_COUNTERS = ("read_bytes", "write_bytes", "open", "close", "getattr", "mkdir", "unlink")


def render_table(u: Usage) -> str:
    """A fixed-width table: one line per class and per filesystem, plus the total."""
    head = f"{'':<16}{'rows':>8}{'read':>12}{'written':>12}" + "".join(
        f"{c:>10}" for c in _TABLE_COUNTERS[2:]) + f"{'share':>8}"
    total_bytes = (u.totals.get("read_bytes", 0) + u.totals.get("write_bytes", 0)) or 1
    lines = [f"I/O stored between {u.start} and {u.end} ({u.rows} delta rows)", "",
             head]

    def line(label: str, d: dict[str, int], rows: int | str = "") -> str:
        b = d.get("read_bytes", 0) + d.get("write_bytes", 0)
        return (f"{label:<16}{rows:>8}{human_bytes(d.get('read_bytes', 0)):>12}"
                f"{human_bytes(d.get('write_bytes', 0)):>12}"
                + "".join(f"{d.get(c, 0):>10}" for c in _TABLE_COUNTERS[2:])
                + f"{100 * b / total_bytes:>7.1f}%")

    lines.append("by id class:")
    lines += [line("  " + k, v, u.rows_by_class.get(k, 0)) for k, v in u.by_class.items()]
    lines.append("by filesystem:")
    lines += [line("  " + k, v) for k, v in u.by_fs.items()]
    lines.append(line("total", u.totals, u.rows))
    other = sorted(k for k in u.totals if k not in _TABLE_COUNTERS)
    if other:
        lines.append("")
        lines.append("other counters: " + ", ".join(f"{k}={u.totals[k]}" for k in other))
    p = u.problems
    if p is not None:
        lines.append("")
        detail = ", ".join(f"{k} {v}" for k, v in p.by_source.items())
        lines.append(f"problems recorded: {p.total}" + (f" ({detail})" if detail else "")
                     + f", of which losses: {p.losses}"
                     + (" (see the problem table)" if p.total else ""))
    return "\n".join(lines)
