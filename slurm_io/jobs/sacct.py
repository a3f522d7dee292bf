"""`sacct -P` (`--parsable2`) text -> JobRecords. Pure: no subprocess, no clock, no passwd.

Why parse text and not `sacct --json`: on Slurm 22.05 the JSON lacks the uid and the submit
line and reports exit code 0 for a job that exited 3 (see docs/jobs.md).

Quirks handled (all seen on a real Slurm 22.05; see tests/jobs/test_sacct.py):
- columns in any order, found by the header line; absent optional columns give None;
- step lines (`123.batch`, `123.0`, `123.extern`, `5_1.batch`) are skipped, except for a job
  whose allocation line is absent: then its steps are merged into one record;
- array tasks: JobID `5_1` with JobIDRaw 7 is job 7 (what Lustre's %j prints), jobid `5_1`,
  array 5, task `1`; the pending rest of an array (`5_[2-9]`, no nodes) keeps job=JobIDRaw;
- `CANCELLED by 1003` -> state CANCELLED; `Unknown`/`None` times -> None;
- compressed node lists expanded with python-hostlist, FQDNs shortened, `None assigned` -> ();
- `--parsable2` does not escape: a `|` or a newline inside a free-text column (JobName,
  WorkDir, SubmitLine, ...) is put back into that column (the typed columns anchor the split);
- times are the local time of the machine that ran sacct (pass `tz` for another zone);
  during the autumn DST change a local time is ambiguous and the first one is taken.
A line that cannot be read becomes a problem message; it never stops the parse.

Values are checked as slurm_io.jobs.fields says: text cleaned (any byte a user put into a
job name or directory is stored, odd bytes as `\\xHH`), Slurm's placeholders (`(null)`,
`Unknown`, `None assigned`, `None`, empty) as NULL, integers ASCII digits within their
column's range. A line with a value that cannot be stored is refused as a whole
(`SacctRead.refused`: the quarantine's Problem rows, with the line as received).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, tzinfo
from itertools import islice
from typing import NamedTuple

from slurm_io.jobs import fields
from slurm_io.jobs.fields import RecordError
from slurm_io.jobs.runs import latest_per_run
from slurm_io.model import JobRecord, Problem
from slurm_io.slurm.nodes import NodeListError, expand_nodes
from slurm_io.text import display

# Columns whose text a user chooses: sacct -P prints them as they are, `|` and newlines too.
FREE_TEXT: frozenset[str] = frozenset({
    "JobName", "WorkDir", "SubmitLine", "Comment", "AdminComment", "SystemComment",
    "Constraints", "Container", "Extra",
})

_TIME = r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown|None|N/A)?"
_NAME = r"[^\s|]*"
# Typed columns: used to find where a `|` inside a free-text column belongs, and to tell a
# record's first line from the continuation of a previous record's newline.
_SHAPES: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.ASCII)
    for names, pattern in (
        (("JobID",), r"\d+(?:_(?:\d+|\[[\d,%:-]*\]))?(?:\+\d+)?(?:\.[\w+-]+)?"),
        (("JobIDRaw",), r"\d+(?:\.[\w+-]+)?"),
        (("UID", "GID", "NNodes", "NCPUS", "AllocCPUS", "ReqCPUS", "ElapsedRaw", "NTasks"),
         r"\d*"),
        (("State",), r"(?:[A-Z_]+(?: by \d+)?\+?)?"),
        (("ExitCode", "DerivedExitCode"), r"(?:\d+:\d+)?"),
        (("Submit", "Start", "End", "Eligible"), _TIME),
        (("NodeList",), r"None assigned|[^\s|]*"),
        (("User", "Group", "Account", "Partition", "Cluster", "QOS"), _NAME),
    )
    for name in names
}
# re.ASCII: `\d` would also match other scripts' digits, which int() then accepts
# the pending rest of an array: `5_[2-9%2]`, `5_[1,3-5]`, `5_[1-9:2]`
_ARRAY = re.compile(r"^(\d+)_(\d+|\[[\d,%:-]*\])$", re.ASCII)
_PLAIN = re.compile(r"^\d+$", re.ASCII)
_HET = re.compile(r"^(\d+)\+(\d+)$", re.ASCII)  # heterogeneous job component: 123+0
_NO_TIME = frozenset({"", "Unknown", "None", "N/A"})
_MAX_SPLITS = 20_000  # candidate placements of stray `|` tried per line


class _LineError(RecordError):
    """One record that cannot be read; becomes a problem message."""


class SacctRead(NamedTuple):
    """What parse_sacct_text found: the jobs, the refused lines (quarantine rows, source
    'sacct', origin `line N`), and every message (refusals and warnings) in line order.
    Every record read is either accepted or refused: `records == accepted + len(refused)`
    (several accepted records can make one job: steps, a repeated job)."""

    jobs: list[JobRecord]
    refused: list[Problem]
    messages: list[str]
    records: int = 0
    accepted: int = 0


def parse_sacct(text: str, *, source: str = "import",
                tz: tzinfo | None = None) -> tuple[list[JobRecord], list[str]]:
    """Jobs in `sacct -P` text with its header line, and the problems met (never raises).

    `source` is stored with every record ("import" for a file, "sacct" for a live run).
    `tz` is the zone of the printed times; None means this machine's local time, which is
    what sacct prints when it runs here.
    """
    read = parse_sacct_text(text, source=source, tz=tz)
    return read.jobs, read.messages


def parse_sacct_text(text: str, *, source: str = "import",
                     tz: tzinfo | None = None) -> SacctRead:
    """As parse_sacct, keeping the refused lines apart (for the quarantine)."""
    # only "\n" ends a line: str.splitlines() also splits at \x1c, \x85, U+2028 ..., which
    # a job name may hold
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return SacctRead([], [], [])
    header = [h.strip() for h in lines[first].split("|")]
    trailing_bar = len(header) > 1 and header[-1] == ""  # `sacct -p` ends lines with `|`
    if trailing_bar:
        header.pop()
    if "JobID" not in header:
        reason = "no sacct header line (run sacct with -P and without -n/--noheader)"
        return SacctRead([], [Problem("sacct", reason, f"line {first + 1}", lines[first])],
                         [f"line {first + 1}: {reason}: {_snip(lines[first])}"], 1, 0)
    parser = _RecordParser(header, source, tz)
    problems: list[str] = []
    refused: list[Problem] = []
    allocations: dict[tuple[str | None, int], list[JobRecord]] = {}
    steps: dict[tuple[str | None, int], list[tuple[str, JobRecord]]] = {}
    order: dict[tuple[str | None, int], None] = {}  # jobs in order of first appearance
    n_records = 0
    for lineno, record in _records(lines[first + 1:], first + 2, header, trailing_bar):
        n_records += 1
        try:
            step, rec, warning = parser.parse(record)
        except Exception as e:  # RecordError; anything else is a bug, still one line only
            reason = str(e) if isinstance(e, RecordError) else f"{type(e).__name__}: {e}"
            problems.append(f"line {lineno}: {reason}: {_snip(record)}")
            refused.append(Problem("sacct", reason, f"line {lineno}", record))
            continue
        if warning:
            problems.append(f"line {lineno}: {warning}: {_snip(record)}")
        key = (rec.cluster, rec.job)
        order.setdefault(key)
        if step is None:  # a repeated line of one run: the later wins; a requeued job's
            allocations.setdefault(key, []).append(rec)  # runs (sacct -D) stay apart
        else:
            steps.setdefault(key, []).append((step, rec))
    jobs: list[JobRecord] = []
    for k in order:
        jobs += latest_per_run(allocations[k]) if k in allocations else [_merge_steps(steps[k])]
    return SacctRead(jobs, refused, problems, n_records, n_records - len(refused))


def _snip(text: str, limit: int = 160) -> str:
    text = display(text.replace("\n", "\\n"))
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _records(lines: Sequence[str], first_lineno: int, header: list[str],
             trailing_bar: bool) -> Iterator[tuple[int, str]]:
    """(line number, text) of each record, physical lines re-joined where a free-text
    value contained a newline.

    A record is continued while it has fewer fields than the header (newline in a middle
    column) unless the next line is a whole record by itself (then the short one is bad), or
    when the next line cannot start a record and the last column is free text (newline in
    SubmitLine: the usual case, e.g. `sbatch --wrap $'a\\nb'`). So a stray line after a
    complete record reads as the end of its submit line: the two cannot be told apart.
    """
    n = len(header)
    first_shape = _SHAPES.get(header[0])
    last_free = header[-1] in FREE_TEXT

    def starts_record(line: str) -> bool:
        if first_shape is not None:
            return first_shape.fullmatch(line.split("|", 1)[0]) is not None
        return line.count("|") + 1 >= n

    buf: list[str] = []
    buf_line = 0
    buf_fields = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        fields = line.count("|") + 1
        if buf and (
            (buf_fields < n and not (fields >= n and starts_record(line)))
            or (buf_fields >= n and last_free and not starts_record(line))
        ):
            buf.append(line)
            buf_fields += fields - 1
            continue
        if buf:
            yield buf_line, _strip_bar("\n".join(buf), trailing_bar)
        buf, buf_line, buf_fields = [line], first_lineno + i, fields
    if buf:
        yield buf_line, _strip_bar("\n".join(buf), trailing_bar)


def _strip_bar(record: str, trailing_bar: bool) -> str:
    return record[:-1] if trailing_bar and record.endswith("|") else record


class _RecordParser:
    """Turns one record's text into a JobRecord for a given header (column positions)."""

    def __init__(self, header: list[str], source: str, tz: tzinfo | None) -> None:
        self.header = header
        self.n = len(header)
        self.source = source
        self.tz = tz
        self.free = [i for i, h in enumerate(header) if h in FREE_TEXT]
        self.typed = [(i, _SHAPES[h]) for i, h in enumerate(header) if h in _SHAPES]
        self.col: dict[str, int] = {}
        for i, h in enumerate(header):
            self.col.setdefault(h, i)

    def parse(self, record: str) -> tuple[str | None, JobRecord, str | None]:
        """(step name or None, record, warning) of one record; RecordError if unreadable."""
        values = self._split(record)
        get = self._getter(values)
        jobid_text = get("JobID") or ""
        raw_text = get("JobIDRaw") or ""
        jobid, _, step = jobid_text.partition(".")
        raw = raw_text.partition(".")[0]
        if not jobid:
            raise _LineError("empty JobID")
        array_job: int | None = None
        array_task: str | None = None
        m = _ARRAY.match(jobid)
        het = _HET.match(jobid)
        if m:
            array_job, array_task = fields.job_id(m.group(1), "array job id"), m.group(2)
        elif not (_PLAIN.match(jobid) or het):
            raise _LineError(f"bad JobID {fields.shown(jobid_text)}")
        if raw:
            if not _PLAIN.match(raw):
                raise _LineError(f"bad JobIDRaw {fields.shown(raw_text)}")
            job = fields.job_id(raw, "JobIDRaw")
        elif _PLAIN.match(jobid):
            job = fields.job_id(jobid, "JobID")
        elif het and het.group(2).lstrip("0") == "":
            job = fields.job_id(het.group(1), "JobID")  # component 0 has the leader's id
        elif array_job is not None and array_task is not None and array_task.startswith("["):
            job = array_job  # the pending rest of an array is the array's own record
        else:
            raise _LineError(f"JobID {jobid!r} needs JobIDRaw (its raw id is Lustre's %j)")
        if het:
            fields.job_id(het.group(1), "het job id")
        uid_text = fields.slurm_text(get("UID"))
        try:
            nodes = expand_nodes(fields.slurm_text(get("NodeList")) or "")
        except NodeListError as e:
            raise _LineError(str(e)) from e
        state_text = fields.slurm_text(get("State"))
        rec = JobRecord(
            job=job,
            jobid=jobid,
            array_job=array_job,
            array_task=array_task,
            uid=None if uid_text is None else fields.uid(uid_text, "UID"),
            user=fields.slurm_text(get("User")),
            account=fields.slurm_text(get("Account")),
            partition=fields.slurm_text(get("Partition")),
            name=fields.free_text(get("JobName")),
            nodes=nodes,
            submit=self._time(get("Submit"), "Submit"),
            start=self._time(get("Start"), "Start"),
            end=self._time(get("End"), "End"),
            # `CANCELLED by 1003`: the canceller's uid is not part of the state
            state=state_text.split()[0].rstrip("+") or None if state_text else None,
            exit_code=fields.slurm_text(get("ExitCode")),
            work_dir=fields.slurm_text(get("WorkDir")),
            submit_line=fields.free_text(get("SubmitLine")),
            source=self.source,
            sluid=fields.slurm_text(get("SLUID")),  # 24.11+ (SACCT_FIELDS_SLUID)
            cluster=fields.slurm_text(get("Cluster")),
        )
        warning = None
        n_nodes = get("NNodes")
        if (not step and nodes and n_nodes and n_nodes.isascii() and n_nodes.isdigit()
                and int(n_nodes) != len(nodes)):
            warning = f"NNodes {n_nodes} but NodeList names {len(nodes)} node(s)"
        return (step or None), rec, warning

    def _getter(self, values: list[str]) -> Callable[[str], str | None]:
        col = self.col

        def get(name: str) -> str | None:
            i = col.get(name)
            if i is None:
                return None
            v = values[i]
            return v if v != "" else None

        return get

    def _time(self, text: str | None, what: str) -> float | None:
        if text is None or text in _NO_TIME:
            return None
        if text.isascii() and text.isdigit():  # SLURM_TIME_FORMAT=%s
            return fields.unix_time(float(fields.ascii_int(text, what, high=2**63 - 1)), what)
        try:
            dt = datetime.fromisoformat(text)
            if dt.tzinfo is None and self.tz is not None:
                dt = dt.replace(tzinfo=self.tz)
            return fields.unix_time(dt.timestamp(), what)
        except (ValueError, OverflowError, OSError) as e:
            if isinstance(e, RecordError):
                raise
            raise _LineError(f"bad time {fields.shown(text)} (SLURM_TIME_FORMAT must be "
                             "standard)") from e

    def _split(self, record: str) -> list[str]:
        """The record's n values; a `|` inside free text is put back where it fits."""
        parts = record.split("|")
        extra = len(parts) - self.n
        if extra == 0:
            return parts
        if extra < 0:
            raise _LineError(f"{len(parts)} fields but the header has {self.n}")
        if not self.free:
            raise _LineError(f"{len(parts)} fields but the header has {self.n}")
        for shares in islice(_placements(extra, len(self.free)), _MAX_SPLITS):
            values = self._assemble(parts, shares)
            if all(shape.fullmatch(values[i]) for i, shape in self.typed):
                return values
        raise _LineError(f"{len(parts)} fields but the header has {self.n}, and no "
                         "free-text column can take the extra '|'")

    def _assemble(self, parts: list[str], shares: tuple[int, ...]) -> list[str]:
        extra_of = dict(zip(self.free, shares, strict=True))
        values: list[str] = []
        p = 0
        for i in range(self.n):
            take = 1 + extra_of.get(i, 0)
            values.append("|".join(parts[p:p + take]))
            p += take
        return values


def _placements(extra: int, columns: int) -> Iterator[tuple[int, ...]]:
    """Ways to give `extra` stray `|` to `columns` free-text columns, the later columns
    first: a `|` in a submit line (a shell pipe in --wrap) is far more common than one in a
    job name or directory."""
    if columns == 1:
        yield (extra,)
        return
    for last in range(extra, -1, -1):
        for rest in _placements(extra - last, columns - 1):
            yield (*rest, last)


def _merge_steps(steps: list[tuple[str, JobRecord]]) -> JobRecord:
    """One record for a job seen only through its steps (allocation line filtered out).

    The batch step carries the job's state and exit code; the nodes are the union of all
    steps' nodes (the batch step runs on one node only), the times span all steps.
    """
    primary = next((r for s, r in steps if s == "batch"), steps[0][1])
    records = [r for _, r in steps]
    nodes = tuple(dict.fromkeys(n for r in records for n in r.nodes))
    starts = [r.start for r in records if r.start is not None]
    ends = [r.end for r in records]
    end = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
    return primary._replace(nodes=nodes, start=min(starts) if starts else None, end=end)
