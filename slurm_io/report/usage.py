"""`jobio usage`: totals per counter over a time range, split by id class and filesystem.

The admins' check that nothing was lost: the totals over all classes are everything the
collectors stored, attributable (job ids, recoverable `:uid:host`) or not (login `%e.%u`,
system uids, unrecoverable ids).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from slurm_io.model import IdClass
from slurm_io.report.counters import SUM_COLUMNS, human_bytes, sum_select

if TYPE_CHECKING:  # render_table is used by the service's clients, without psycopg
    import psycopg


def _nonzero(d: dict[str, int]) -> dict[str, int]:
    return {k: int(v) for k, v in d.items() if v}


def usage(conn: psycopg.Connection, start: float, end: float) -> dict[str, Any]:
    """Counters summed over deltas with ts_end in (start, end]."""
    s = datetime.fromtimestamp(start, UTC)
    e = datetime.fromtimestamp(end, UTC)
    names = list(SUM_COLUMNS)
    rows = conn.execute(
        f"""SELECT t.fs, d.id_class, count(*)::bigint AS n_rows, {sum_select('d')}
            FROM jobstats_delta d JOIN fs_target t USING (target_id)
            WHERE d.ts_end > %s AND d.ts_end <= %s
            GROUP BY 1, 2""",
        (s, e),
    ).fetchall()
    extra = conn.execute(
        """SELECT t.fs, d.id_class, x.key, sum(x.value::bigint)::bigint
           FROM jobstats_delta d JOIN fs_target t USING (target_id),
                jsonb_each_text(d.extra) x
           WHERE d.extra IS NOT NULL AND d.ts_end > %s AND d.ts_end <= %s
           GROUP BY 1, 2, 3""",
        (s, e),
    ).fetchall()
    totals: dict[str, int] = {}
    by_class: dict[str, dict[str, int]] = {}
    by_fs: dict[str, dict[str, int]] = {}
    n_rows = 0
    rows_by_class: dict[str, int] = {}

    def add(dst: dict[str, int], name: str, v: int) -> None:
        dst[name] = dst.get(name, 0) + int(v)

    for fs, cls, nrows, *vals in rows:
        label = IdClass(cls).label
        n_rows += nrows
        rows_by_class[label] = rows_by_class.get(label, 0) + nrows
        for name, v in zip(names, vals, strict=True):
            add(totals, name, v)
            add(by_class.setdefault(label, {}), name, v)
            add(by_fs.setdefault(fs or "-", {}), name, v)
    for fs, cls, key, v in extra:
        label = IdClass(cls).label
        add(totals, key, v)
        add(by_class.setdefault(label, {}), key, v)
        add(by_fs.setdefault(fs or "-", {}), key, v)
    return {
        "start": s.isoformat(),
        "end": e.isoformat(),
        "problems": problem_counts(conn, s, e),
        "rows": n_rows,
        "rows_by_class": dict(sorted(rows_by_class.items())),
        "totals": _nonzero(totals),
        "by_class": {k: _nonzero(v) for k, v in sorted(by_class.items())},
        "by_fs": {k: _nonzero(v) for k, v in sorted(by_fs.items())},
    }


def problem_counts(conn: psycopg.Connection, s: datetime, e: datetime) -> dict[str, Any] | None:
    """Problems recorded in (s, e] by source, and how many lost data (`lost` set).

    What the collectors could not take or lost is part of the answer to "was anything
    lost?". The quarantine is readable by admins only: for others this is None.
    """
    try:
        with conn.transaction():
            rows = conn.execute(
                """SELECT source, count(*)::bigint, count(lost)::bigint FROM problem
                   WHERE seen_at > %s AND seen_at <= %s GROUP BY 1 ORDER BY 1""",
                (s, e)).fetchall()
    except Exception as e:  # psycopg is imported lazily (clients render without it)
        if type(e).__name__ != "InsufficientPrivilege":
            raise
        return None
    return {"total": sum(r[1] for r in rows), "losses": sum(r[2] for r in rows),
            "by_source": {src: int(n) for src, n, _ in rows}}


_TABLE_COUNTERS = ("read_bytes", "write_bytes", "open", "close", "getattr", "mkdir", "unlink")


def render_table(u: dict[str, Any]) -> str:
    """A fixed-width table: one line per class and per filesystem, plus the total."""
    head = f"{'':<16}{'rows':>8}{'read':>12}{'written':>12}" + "".join(
        f"{c:>10}" for c in _TABLE_COUNTERS[2:]) + f"{'share':>8}"
    total_bytes = (u["totals"].get("read_bytes", 0) + u["totals"].get("write_bytes", 0)) or 1
    lines = [f"I/O stored between {u['start']} and {u['end']} ({u['rows']} delta rows)", "",
             head]

    def line(label: str, d: dict[str, int], rows: int | str = "") -> str:
        b = d.get("read_bytes", 0) + d.get("write_bytes", 0)
        return (f"{label:<16}{rows:>8}{human_bytes(d.get('read_bytes', 0)):>12}"
                f"{human_bytes(d.get('write_bytes', 0)):>12}"
                + "".join(f"{d.get(c, 0):>10}" for c in _TABLE_COUNTERS[2:])
                + f"{100 * b / total_bytes:>7.1f}%")

    lines.append("by id class:")
    lines += [line("  " + k, v, u["rows_by_class"].get(k, 0)) for k, v in u["by_class"].items()]
    lines.append("by filesystem:")
    lines += [line("  " + k, v) for k, v in u["by_fs"].items()]
    lines.append(line("total", u["totals"], u["rows"]))
    other = sorted(k for k in u["totals"] if k not in _TABLE_COUNTERS)
    if other:
        lines.append("")
        lines.append("other counters: " + ", ".join(f"{k}={u['totals'][k]}" for k in other))
    p = u.get("problems")
    if p is not None:
        lines.append("")
        detail = ", ".join(f"{k} {v}" for k, v in p["by_source"].items())
        lines.append(f"problems recorded: {p['total']}" + (f" ({detail})" if detail else "")
                     + f", of which losses: {p['losses']}"
                     + (" (see the problem table)" if p["total"] else ""))
    return "\n".join(lines)
