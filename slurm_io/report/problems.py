"""`jobio problems`: the quarantine (store.problems) as an admin reads it.

Everything shown came from outside (sacct lines, spool files, job_stats text), so every text
goes through slurm_io.text.display: control characters are escaped and cannot drive the
admin's terminal; a record's bytes are shown the same way (invalid UTF-8 as `\\xHH`).
"""

from __future__ import annotations

from typing import Any

from slurm_io.store import problems as store
from slurm_io.store.problems import StoredProblem
from slurm_io.text import clean, display


def one(conn: Any, problem_id: int) -> StoredProblem | None:
    """The problem `problem_id`, or None."""
    return store.one(conn, problem_id)


def _line(text: str | None) -> str:
    return "-" if text is None else display(text).replace("\n", "\\n").replace("\t", "\\t")


def render_list(problems: list[StoredProblem], counts: dict[str, int]) -> str:
    """Newest first, one line each; then how many there are per source."""
    if not problems:
        lines = ["no problems recorded" + ("" if not counts else " that match")]
    else:
        lines = [f"{'id':>8}  {'seen (UTC)':<20}{'source':<12}{'origin':<24}reason"]
        for p in problems:
            seen = p.seen_at.astimezone().strftime("%Y-%m-%dT%H:%M:%S")
            lines.append(f"{p.id:>8}  {seen:<20}{_line(p.source)[:11]:<12}"
                         f"{_line(p.origin)[:23]:<24}{_line(p.reason)}"
                         + (f"  [lost: {_line(p.lost)}]" if p.lost else ""))
    if counts:
        lines.append("")
        lines.append("problems per source: " + ", ".join(
            f"{_line(s)} {n}" for s, n in sorted(counts.items())))
    return "\n".join(lines)


def render_one(p: StoredProblem) -> str:
    """One problem with its record, escaped but complete (newlines kept)."""
    lines = [f"problem {p.id}, seen {p.seen_at.isoformat(timespec='seconds')}",
             f"source: {_line(p.source)}", f"origin: {_line(p.origin)}",
             f"reason: {_line(p.reason)}", f"lost:   {_line(p.lost)}"]
    if p.record is None:
        lines.append("record: none kept")
    else:
        data = bytes(p.record)
        lines.append(f"record: {len(data)} bytes (control characters and invalid UTF-8 as "
                     "\\xHH):")
        lines.append(display(clean(data)))
    return "\n".join(lines)


def as_json(p: StoredProblem) -> dict[str, Any]:
    return {"id": p.id, "seen_at": p.seen_at.isoformat(), "source": p.source,
            "origin": p.origin, "reason": p.reason, "lost": p.lost,
            "record": None if p.record is None else display(clean(bytes(p.record)))}
