"""The reference job_stats parser: line by line, every release's format, every problem.

Why two parsers: an OSS prints hundreds of MB per read, which the fast parser
(slurm_io.parse.jobstats, with _jobstats_fast) handles in C-speed passes over whole chunks;
code like that is hard to check by reading. This module is the readable statement of what
the output means, written so that it is obviously right: one line at a time, one rule per
kind of line. The fast parser gives way to `read_entries` for every chunk it does not fully
understand, and tests/parse/test_reference.py checks that `parse` here and `jobstats.parse`
agree on generated text of every release, damaged or not.

Formats it reads (lctl of Lustre 2.10 .. 2.17): `target.job_stats=` headers, a `job_stats:`
line, entries `- job_id: ID` followed by `snapshot_time`/`start_time`/`elapsed_time` lines
(with or without ` secs.nsecs`) and counters `name: { samples: N, unit: U, min: .., max: ..,
sum: .., sumsq: .., hist: { 4K: 3 } }`; hard-wrapped counter lines are rejoined, glued
`max:16777216` and tabs are tolerated, unknown counters are kept.

Problems it reports (ParseProblem, never an exception): text outside any entry, text after
a header, entries without counters, malformed counters, counters printed twice, byte counters
without a sum, values beyond the bigint range, times beyond year 9999 (dropped), unknown
scalar fields (ignored), unparseable lines, duplicate ids in a target.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from slurm_io.model import ByteStats, Entry, ParseProblem, ParseResult, counts
from slurm_io.parse._jobstats_base import (
    HEADER,
    I64_MAX,
    MAX_DIGITS,
    MAX_TIME,
    U64_MAX,
    UNKNOWN_TARGET,
    clean_id,
    decode_bytes,
    decode_job_id,
    layout,
    target_of_param,
)
from slurm_io.text import clean

_JOBID = re.compile(r"^\s*-\s*job_id:\s*(.*?)\s*$")
# an id line damaged in its spacing (`- job_id :`): a new entry, broken, not the end of the last
_DAMAGED_JOBID = re.compile(r"^\s*-\s*job_id\s+:\s*(.*?)\s*$")
_TIME = re.compile(r"^\s*(\w+_time)\s*:\s*([0-9]+(?:\.[0-9]+)?)(?:\s*secs\.nsecs)?\s*$")
_COUNTER = re.compile(r"^\s*(\w+)\s*:\s*\{(.*)\}\s*$")
_FIELD = re.compile(r"^\s*(\w+)\s*:\s*(\S+)\s*$")
_HIST = re.compile(r"hist\s*:\s*\{([^}]*)\}")
_HIST_ITEM = re.compile(r"([^\s:,{}]+)\s*:\s*([0-9]+)")
_SCALAR = re.compile(r"^\s*(\w+)\s*:\s*(.*)$")
# lines that start something new and therefore never continue a hard-wrapped line
_LINE_START = re.compile(r"^\s*(?:-\s*job_id\s*:|\w+\s*:\s*\{|\w+_time\s*:|job_stats:)")
# where a target's entries begin: a line that starts exactly so (text before it is preamble)
ENTRY_START = b"- job_id:"


def hist(text: str) -> tuple[tuple[str, int], ...]:
    """`{ 4K: 35, 1M: 2 }` -> (("4K", 35), ("1M", 2)); `{  }` -> ()."""
    inner = text.strip("{} ")
    if not inner:
        return ()
    try:
        items = tuple((k.strip(), int(v)) for k, v in (p.split(":") for p in inner.split(",")))
    except ValueError:
        # items that read as label: count; a count too long for a u64 is damage, dropped
        items = tuple((k, int(v)) for k, v in _HIST_ITEM.findall(text) if len(v) <= MAX_DIGITS)
    # labels are JSON keys in PostgreSQL (jsonb refuses NUL and lone surrogates)
    return tuple((clean(k), v) for k, v in items)


def counter_fields(inner: str) -> dict[str, Any] | None:
    """`samples: 5, unit: bytes, min: 1, ..., hist: { 4K: 3 }` -> dict, or None if broken."""
    fields: dict[str, Any] = {}
    h = _HIST.search(inner)
    if h:
        fields["hist"] = hist(h.group(1))
        if len(fields["hist"]) < h.group(1).count(":") or any(
                v > U64_MAX for _, v in fields["hist"]):
            return None  # a bucket that could not be read: damage, not silently dropped
        inner = inner[: h.start()] + inner[h.end():]
    elif "hist" in inner:
        return None
    for part in inner.split(","):
        part = part.strip()
        if not part:
            continue
        m = _FIELD.match(part)
        if not m:
            # glued `max:16777216` is handled by \s*; anything else is damage
            return None
        key, val = m.group(1), m.group(2)
        if key in fields or key == "hist":
            return None  # a field printed twice (or a second histogram): damage
        if key == "unit":
            fields["unit"] = val
            continue
        if not (val.isascii() and val.isdigit()) or len(val) > MAX_DIGITS:
            return None  # not a number, or longer than any u64 (and int()'s digit limit)
        value = int(val)
        if value > (U64_MAX if key == "sumsq" else I64_MAX):
            fields["out_of_range"] = key
        fields[key] = value
    return fields


@dataclass
class _Pending:
    """The entry being read: what its lines said so far."""

    raw: str
    line: int
    snap: float | None = None
    start: float | None = None
    names: list[str] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    stats: dict[str, ByteStats] = field(default_factory=dict)
    broken: bool = False


@dataclass
class EntryBlock:
    """What `read_entries` found in a run of entry lines of one target."""

    entries: list[Entry] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)  # raw ids of entries that were damaged
    damaged: bool = False


def _logical_lines(lines: list[str], base: int) -> list[tuple[int, str]]:
    """(line number, line) with hard-wrapped lines rejoined: a line continuing an
    unbalanced `{` belongs to the line before."""
    logical: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if (logical and logical[-1][1].count("{") > logical[-1][1].count("}")
                and not _LINE_START.match(line)):
            ln, prev = logical[-1]
            logical[-1] = (ln, prev.rstrip() + " " + line.strip())
        else:
            logical.append((base + i, line))
    return logical


def read_entries(target: str, base: int, text: str) -> EntryBlock:
    """The entries in `text` (lines of one target's entries; its first line is line `base`).

    A broken entry is reported and its id kept in `broken`; its neighbours are unaffected.
    """
    out = EntryBlock()
    cur: _Pending | None = None

    def problem(lineno: int, line: str, msg: str) -> None:
        raw = cur.raw if cur is not None else None
        out.problems.append(ParseProblem(target, lineno, raw, msg, line.strip()[:200]))

    def close() -> None:
        if cur is None:
            return
        if not cur.names and not cur.broken:
            out.problems.append(ParseProblem(target, cur.line, cur.raw,
                                             "entry without counters", ""))
            cur.broken = True
        if cur.broken:
            out.broken.add(cur.raw)
            out.damaged = True
            return
        try:
            values = counts(cur.samples)
        except OverflowError:
            out.problems.append(ParseProblem(target, cur.line, cur.raw,
                                             "counter value beyond the bigint range", ""))
            out.broken.add(cur.raw)
            out.damaged = True
            return
        out.entries.append(Entry(target, cur.raw, decode_job_id(cur.raw), cur.snap, cur.start,
                                 layout(tuple(cur.names))[0], values, cur.stats))

    for lineno, line in _logical_lines(text.split("\n"), base):
        if not line.strip() or line.strip() == "job_stats:":
            continue
        m = _JOBID.match(line)
        damaged = None if m else _DAMAGED_JOBID.match(line)
        if m or damaged:
            close()  # the entry before it ends here, whole
            cur = _Pending(clean_id((m or damaged).group(1)), lineno)  # type: ignore[union-attr]
            if damaged:
                problem(lineno, line, "malformed job_id line")
                cur.broken = True
            continue
        if cur is None:
            out.damaged = True
            out.problems.append(ParseProblem(target, lineno, None, "text outside any entry",
                                             line[:200]))
            continue
        # outside an id, spaces are column padding (as the fast parser, which squeezes them
        # out, reads them): `300.0 secs.nsecs` and `4 4K` mean `300.0secs.nsecs` and `44K`
        bare = line.replace(" ", "")
        m = _TIME.match(bare)
        if m:
            value = float(m.group(2))
            if value > MAX_TIME and m.group(1) in ("snapshot_time", "start_time"):
                problem(lineno, line, f"{m.group(1)} beyond year 9999 ignored")
            elif m.group(1) == "snapshot_time":
                cur.snap = value
            elif m.group(1) == "start_time":
                cur.start = value
            continue
        m = _COUNTER.match(bare)
        if m:
            _read_counter(cur, m.group(1), counter_fields(m.group(2)),
                          lambda msg, ln=lineno, li=line: problem(ln, li, msg))
            continue
        if _SCALAR.match(bare) and "{" not in line and "}" not in line:
            # an unknown scalar field of a future release: harmless, but say so
            problem(lineno, line, "unknown field ignored")
            continue
        problem(lineno, line, "unparseable line")
        cur.broken = True
    close()
    return out


def _read_counter(cur: _Pending, name: str, fields: dict[str, Any] | None,
                  problem: Callable[[str], None]) -> None:
    """Add one counter line to the entry, or mark the entry broken saying why."""
    if fields is None or "samples" not in fields:
        problem(f"malformed counter {name!r}")
        cur.broken = True
        return
    if "out_of_range" in fields:
        problem(f"counter {name!r}: {fields['out_of_range']} beyond the bigint range")
        cur.broken = True
        return
    if name in cur.names:
        problem(f"counter {name!r} printed twice")
        cur.broken = True
        return
    cur.names.append(name)
    cur.samples.append(fields["samples"])
    if name.endswith("_bytes"):
        if "sum" not in fields:
            problem(f"byte counter {name!r} without sum")
            cur.broken = True
            return
        cur.stats[name] = ByteStats(fields["samples"], fields.get("min"), fields.get("max"),
                                    fields["sum"], fields.get("sumsq"), fields.get("hist"))


class _Reader:
    """Whole-output state: the current target, what each target holds, what went wrong."""

    def __init__(self, default_target: str) -> None:
        self.target = default_target
        self.targets: dict[str, list[Entry]] = {}
        self.seen: dict[str, set[str]] = {}
        self.broken: dict[str, set[str]] = {}
        self.damaged: set[str] = set()
        self.problems: list[ParseProblem] = []
        self.block: list[bytes] = []  # entry lines of the current target, not yet read
        self.block_line = 0  # line number of the line before the block's first

    def header(self, lineno: int, line: bytes, m: re.Match[bytes]) -> None:
        self.flush()
        self.target = target_of_param(m.group(1).decode("ascii"))
        self.targets.setdefault(self.target, [])
        rest = m.group(2).strip()
        if rest and rest != b"job_stats:":
            self.problems.append(ParseProblem(self.target, lineno, None,
                                              "unexpected text after header",
                                              decode_bytes(line[:200])))

    def preamble(self, lineno: int, line: bytes) -> None:
        """A line of a target before its first entry: `job_stats:` or blank is expected."""
        s = line.strip()
        if s and s != b"job_stats:":
            self.damaged.add(self.target)
            self.problems.append(ParseProblem(self.target, lineno, None,
                                              "text outside any entry", decode_bytes(s[:200])))

    def flush(self) -> None:
        """Read the collected entry lines; a duplicate id keeps its first entry."""
        if not self.block:
            return
        # trailing blank space is not part of the last entry
        text = decode_bytes(b"\n".join(self.block).rstrip(b" \t\r\n"))
        self.block = []
        found = read_entries(self.target, self.block_line, "\n" + text)
        self.problems.extend(found.problems)
        if found.broken:
            self.broken.setdefault(self.target, set()).update(found.broken)
        if found.damaged:
            self.damaged.add(self.target)
        dst = self.targets.setdefault(self.target, [])
        seen = self.seen.setdefault(self.target, set())
        for e in found.entries:
            if e.raw_id in seen:
                self.damaged.add(self.target)
                self.problems.append(
                    ParseProblem(self.target, 0, e.raw_id, "duplicate job_id in target", ""))
                continue
            seen.add(e.raw_id)
            dst.append(e)


def parse_lines(lines: Iterable[bytes], default_target: str = UNKNOWN_TARGET) -> ParseResult:
    """Parse lctl's output given as lines (bytes, without their newline)."""
    r = _Reader(default_target)
    in_entries = False
    for lineno, line in enumerate(lines, start=1):
        if b".job_stats=" in line:
            m = HEADER.fullmatch(line)
            if m is not None:
                r.header(lineno, line, m)
                in_entries = False
                continue
        if not in_entries and line.startswith(ENTRY_START):
            in_entries = True
            r.block_line = lineno - 1
        if in_entries:
            r.block.append(line)
        else:
            r.preamble(lineno, line)
        if b".job_stats=" in line:
            # a line naming a job_stats parameter that is no header (an odd id?) ends the
            # target's run of entries, as it does for the fast parser: what follows up to
            # the next entry is preamble
            r.flush()
            in_entries = False
    r.flush()
    return ParseResult(r.targets, r.problems, r.broken, frozenset(r.damaged))


def parse(text: str | bytes, default_target: str = UNKNOWN_TARGET) -> ParseResult:
    """Parse one complete lctl output, like slurm_io.parse.jobstats.parse (slower)."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    return parse_lines(text.split(b"\n"), default_target)
