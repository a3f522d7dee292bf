"""Plain data shared by every stage of the pipeline (parse -> repair -> delta -> store).

Everything here is immutable and free of I/O so that the functional core can be tested
without servers. Records are NamedTuples rather than dataclasses because a collector cycle
creates ~100k of them and tuple construction is several times cheaper in CPython.
"""

from __future__ import annotations

import enum
from array import array
from collections.abc import Iterable
from typing import NamedTuple

# the counter names live in a leaf of their own (re-exported here): the readers that need only
# the names (report.show, the client mode of `jobio`) skip this module's types (issue 25)
from slurm_io.counter_names import BYTE_COUNTERS as BYTE_COUNTERS
from slurm_io.counter_names import KNOWN_COUNTERS as KNOWN_COUNTERS
from slurm_io.counter_names import METADATA_OPS as METADATA_OPS
from slurm_io.counter_names import OP_COUNTERS as OP_COUNTERS


class ByteStats(NamedTuple):
    """Cumulative (as read) or interval (as delta) statistics of a byte counter."""

    samples: int
    min: int | None
    max: int | None
    sum: int
    sumsq: int | None
    hist: tuple[tuple[str, int], ...] | None  # (bucket label, count); None when not printed


def counts(values: Iterable[int] | bytes) -> array:
    """Counter samples as Entry keeps them: a packed array of 64-bit integers.

    Why not a tuple: a collector holds ~100k entries per target in its state, and 25 counters
    as a tuple of int objects take ~660 bytes where the array takes ~280. Signed because they
    are stored as PostgreSQL bigint: a larger value (9.2e18 operations on one target) is
    damage, and array() says so (OverflowError).
    """
    return array("q", values)


class Entry(NamedTuple):
    """One job_stats entry of one target, as read.

    `names`/`samples` are parallel sequences in print order (the layout tuple is shared
    between entries of the same release, so it costs one pointer per entry); the parser
    makes `samples` a `counts()` array (any int sequence works for the pipeline's
    functions). `stats` holds the full statistics of byte counters only.
    """

    target: str  # e.g. "scratch-OST0003"
    raw_id: str  # the job_id exactly as printed (quotes and escapes included)
    job_id: str  # decoded: quotes removed, \xHH escapes resolved
    snapshot_time: float | None
    start_time: float | None
    names: tuple[str, ...]
    samples: array | tuple[int, ...]
    stats: dict[str, ByteStats]
    # hash of the entry's text in this read (0: not computed). The collector's parser reuses
    # the previous read's Entry when id and digest are unchanged: most entries are idle.
    digest: int = 0

    def counter(self, name: str) -> int | None:
        """Samples of counter `name`, or None when the entry does not print it."""
        try:
            return self.samples[self.names.index(name)]
        except ValueError:
            return None


class ParseProblem(NamedTuple):
    """A part of the input that could not be turned into an entry. Never fatal."""

    target: str | None
    line: int  # 1-based line number in the parsed text (0 when unknown)
    raw_id: str | None  # the entry's id when it could still be read
    message: str
    text: str  # the offending text, shortened


class TargetRead(NamedTuple):
    """All entries of one target in one read (one `...job_stats=` block)."""

    target: str
    entries: list[Entry]


class ParseResult(NamedTuple):
    targets: dict[str, list[Entry]]  # target -> entries, in print order
    problems: list[ParseProblem]
    # ids of entries that were present but broken: the delta engine must not treat their
    # absence as a counter reset (that would count their whole history again next read).
    broken_ids: dict[str, set[str]]
    # targets whose block was damaged (broken entries, stray text, duplicates, truncation):
    # there an id's absence is no evidence that Lustre freed it
    damaged: frozenset[str] = frozenset()

    @property
    def n_entries(self) -> int:
        return sum(len(v) for v in self.targets.values())

    def targets_by_id(self) -> dict[str, dict[str, Entry]]:
        """target -> raw id -> entry: what a next parse may reuse."""
        return {t: {e.raw_id: e for e in es} for t, es in self.targets.items()}


class IdClass(enum.IntEnum):
    """How a job_id was classified (stored as smallint; values are part of the schema)."""

    EXACT = 1  # job:uid:host, all valid
    FQDN = 2  # as EXACT but the host was a FQDN and has been shortened
    JOB_ONLY = 3  # only the job (`123` or `123:`)
    JOB_UID = 4  # job + uid, host missing
    JOB_MISSING = 5  # `:uid:host`; recoverable by uid + node + time at attribution
    EXE = 6  # `%e.%u` of a user process outside a job (login nodes)
    SYSTEM = 7  # a system uid (root, daemons), with or without job
    UNRECOVERABLE = 8  # broken beyond repair; stored as load of nobody
    EMPTY = 9  # empty job_id

    @property
    def label(self) -> str:
        return self.name.lower()


class JobId(NamedTuple):
    """The result of classifying (and where possible repairing) one job_id."""

    id_class: IdClass
    job: int | None  # Slurm job id (SLURM_JOB_ID, numeric)
    uid: int | None
    host: str | None  # short host name
    exe: str | None
    repaired: bool  # something was fixed (FQDN shortened, trailing separator dropped, ...)


class Delta(NamedTuple):
    """What one entry did on one target during (t0, t1]: the online difference of two reads.

    `samples` maps counter name -> samples delta for every counter that moved (byte counters
    included); `stats` maps byte counter -> ByteStats of the interval (min/max are the
    cumulative extremes at t1, which bound the interval's request sizes).
    """

    target: str
    raw_id: str
    job_id: str
    t0: float
    t1: float
    last_update: float | None
    samples: dict[str, int]
    stats: dict[str, ByteStats]
    flags: int
    # the entry's start_time (2.15.2+: when Lustre created it) when it lies inside (t0, t1):
    # nothing of the delta happened before it (attribution narrows the interval); else None
    entry_start: float | None = None


class DeltaFlag(enum.IntFlag):
    """Why a delta was computed the way it was (stored with the row for audits)."""

    NONE = 0
    NEW = 1  # id not in the previous read of the target: counted from zero since then
    RESET_DROP = 2  # a counter went down: the entry was freed and re-created
    RESET_START = 4  # start_time changed: re-created (2.15.2+), even if counters grew
    GAP = 8  # reads were missed: the interval spans more than one collector period
    RESET_ABSENT = 16  # the id was absent from an intermediate read (freed in between)


class Batch(NamedTuple):
    """What one collector cycle hands to storage: durable (spooled) before it is sent.

    (collector, seq) identifies the batch for exactly-once ingest. `deltas` carry the
    classification of their id so that storage needs no knowledge of the jobid grammar.
    """

    collector: str
    seq: int
    read_time: float
    targets: tuple[str, ...]
    deltas: list[tuple[Delta, JobId]]
    n_entries: int
    n_problems: int
    n_repaired: int
    n_unattributable: int
    # identity of the database the collector's state is bound to (store.problems
    # .database_identity), None while unbound: a batch is never written into another one
    db: str | None = None


class JobRecord(NamedTuple):
    """One Slurm job as slurm-io keeps it (from sacct, the job-end hook or pyslurm).

    `job` is JobIDRaw: what Lustre's `%j` (SLURM_JOB_ID) prints, also for array tasks, whose
    display id (`5_1`) is `jobid`. Times are unix seconds; `end` None while running/unknown.
    """

    job: int
    jobid: str
    array_job: int | None
    array_task: str | None
    uid: int | None
    user: str | None
    account: str | None
    partition: str | None
    name: str | None
    nodes: tuple[str, ...]  # expanded short host names; () when none assigned
    submit: float | None
    start: float | None
    end: float | None
    state: str | None  # e.g. COMPLETED, FAILED, CANCELLED, TIMEOUT, RUNNING
    exit_code: str | None  # "3:0"
    work_dir: str | None
    submit_line: str | None
    source: str  # "sacct", "hook", "pyslurm", "import"
    # Slurm's unique id of the job run (SLUID, 25.11+ hook env; 24.11+ text sacct); None before
    sluid: str | None = None
    # ClusterName (SLURM_CLUSTER_NAME, sacct's Cluster); None: the database's default cluster
    cluster: str | None = None


class Problem(NamedTuple):
    """One refused record (or one loss), as reported by an intake; stored by store.problems.

    Here, among the leaf types, because the pure parsers (jobs.sacct, parse) report their
    refusals with it and must not import the store that keeps them."""

    source: str  # 'sacct', 'hook-spool', 'jobstats', 'batch', 'state', 'hook-env'
    reason: str  # one line: what was wrong
    origin: str | None = None  # collector, file name, line number ...
    record: bytes | str | None = None  # the record as received
    lost: str | None = None  # what could not be stored because of it
