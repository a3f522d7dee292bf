"""The mail's view model: the frozen values templates print, and their vocabulary.

Apart from slurm_io.mail.view (which computes them from a job report) so that a site
rewriting templates reads what `v` holds in one short module; view re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

READ_COLOUR = "#2563eb"  # the chart's read bars (blue)
WRITE_COLOUR = "#ea580c"  # the chart's write bars (orange)
SMALL_IO = 64 * 1024

# rows of the timeline: the smallest of these steps (seconds) that fits the job in max_rows
NICE_STEPS = (60, 120, 240, 300, 360, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400, 21600,
              43200, 86400, 172800, 345600, 604800)

# metadata operations that make a storm, with their plain names
STORM_OPS: dict[str, str] = {"open": "opens", "getattr": "stats", "mkdir": "mkdirs",
                             "unlink": "unlinks"}
META_NAMES: dict[str, str] = {
    "open": "opens", "close": "closes", "getattr": "stats (getattr)", "setattr": "setattrs",
    "mkdir": "mkdirs", "rmdir": "rmdirs", "unlink": "unlinks (deletes)", "mknod": "mknods",
    "link": "links", "rename": "renames", "samedir_rename": "renames within a directory",
    "crossdir_rename": "renames across directories", "getxattr": "getxattrs",
    "setxattr": "setxattrs", "statfs": "statfs", "sync": "syncs",
}

RATINGS: dict[str, tuple[str, str, str]] = {  # rating -> (label, text colour, background)
    "good": ("good", "#166534", "#dcfce7"),
    "fair": ("fair", "#854d0e", "#fef9c3"),
    "poor": ("poor", "#991b1b", "#fee2e2"),
    "none": ("n/a", "#475569", "#f1f5f9"),
}


@dataclass(frozen=True)
class Thresholds:
    """When a job's I/O earns advice (see the module docstring)."""

    kb_ops: float = 16.0
    small_share: float = 0.5
    min_share_basis: float = 0.5
    min_requests: int = 10_000
    metadata_per_node_hour: float = 1e5
    min_metadata_ops: int = 10_000


@dataclass(frozen=True)
class Advice:
    key: str  # small_writes, small_reads, metadata
    title: str
    finding: str
    suggestions: tuple[str, ...]


@dataclass(frozen=True)
class ChartRow:
    label: str
    read_bytes: int
    write_bytes: int
    read_rate: str  # "" when nothing moved
    write_rate: str
    read_pct: int  # bar width, 0..100 of the chart's scale (the peak rate of either kind)
    write_pct: int


@dataclass(frozen=True)
class Chart:
    rows: tuple[ChartRow, ...]
    step: int  # seconds per row
    step_label: str
    scale: str  # the rate a full bar stands for
    peak_read: str
    peak_write: str
    ascii: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.rows


@dataclass(frozen=True)
class QualityRow:
    kind: str  # read, write
    label: str  # Reads, Writes
    requests: str
    mean_size: str
    small_share: str
    small_basis: str  # "" or "(known for 40% of requests)"
    kb_ops: str
    rating: str  # good, fair, poor, none
    rating_label: str
    rating_fg: str
    rating_bg: str


@dataclass(frozen=True)
class TargetRow:
    name: str
    read: str
    written: str
    meta_ops: str
    share_pct: int  # of the job's bytes (0 for metadata targets)
    share: str


@dataclass(frozen=True)
class MetaRow:
    name: str
    count: str
    per_node_hour: str
    storm: bool


@dataclass(frozen=True)
class Provenance:
    basis: str  # "bytes" or "metadata operations"
    direct: str
    recovered: str
    ambiguous: str
    split: str
    recovered_share: float
    ambiguous_share: float
    notes: tuple[str, ...]


@dataclass(frozen=True)
class JobView:
    jobid: str
    job: int
    name: str
    user: str
    account: str
    partition: str
    state: str
    exit_code: str
    nodes_count: int
    nodes_text: str
    start: str
    end: str
    elapsed: str
    running: bool
    complete: bool
    work_dir: str
    read: str
    written: str
    read_bytes: int
    write_bytes: int
    total_bytes: int
    read_requests: str
    write_requests: str
    read_mean: str
    write_mean: str
    metadata_ops: str
    metadata_ops_n: int
    node_hours: str
    subject: str
    chart: Chart
    quality: tuple[QualityRow, ...]
    advice: tuple[Advice, ...]
    targets: tuple[TargetRow, ...]
    more_targets: int
    metadata: tuple[MetaRow, ...]
    provenance: Provenance
    status_note: str
    colours: dict[str, str] = field(default_factory=lambda: {"read": READ_COLOUR,
                                                             "write": WRITE_COLOUR})
