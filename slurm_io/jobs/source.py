"""Where job records come from: the `sacct` command, or pyslurm when it is importable.

Both sit behind `JobSource`, so `jobio jobs sync` (and tests) do not care which one runs.
sacct is the default because it works on every Slurm release we meet (22.05 on Debian 12)
while pyslurm builds only against the one libslurm release it was made for (docs/jobs.md).
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from slurm_io.jobs import fields
from slurm_io.jobs.sacct import parse_sacct_text
from slurm_io.model import JobRecord
from slurm_io.slurm import Slurm, SlurmError
from slurm_io.slurm.nodes import NodeListError, expand_nodes
from slurm_io.store.problems import Problem

log = logging.getLogger(__name__)

DEFAULT_SACCT = "/usr/bin/sacct"
EPOCH_START = "1970-01-01T00:00:00"  # sacct's -S for "no lower bound"


class JobSource(Protocol):
    """Anything that lists the jobs that were pending, running or ended in a time range."""

    def jobs(self, since: float | None, until: float | None) -> list[JobRecord]:
        """Jobs active in [since, until] (unix seconds; None: unbounded / now)."""
        ...


class SourceError(RuntimeError):
    """The job source could not be read (sacct missing, failing, or timing out)."""


def sacct_time(t: float) -> str:
    """A unix time as sacct's -S/-E want it: local time, like everything sacct prints."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


class SacctSource:
    """`sacct -a -X -P --format=<fields> -S .. -E ..`, parsed by parse_sacct.

    sacct runs through the Slurm seam (slurm_io.slurm): an absolute path (controller-side
    hooks and timers run with no or a minimal PATH), no shell, SLURM_TIME_FORMAT=standard, and
    the fields the release knows (SLUID from 24.11). Lines sacct printed but we could not read
    are logged and kept in `problems` (the rest is still returned).
    """

    def __init__(self, sacct: str = DEFAULT_SACCT, *, timeout: float = 600.0,
                 env: Mapping[str, str] | None = None, slurm: Slurm | None = None) -> None:
        self.slurm = slurm or Slurm(sacct=sacct, timeout=timeout, env=env)
        self.sacct = self.slurm.sacct
        self.timeout = timeout
        self.problems: list[str] = []
        self.refused: list[Problem] = []  # the lines behind `problems` that were skipped

    def cluster(self) -> str | None:
        """The cluster whose jobs this source lists (sacct's local cluster), None unknown."""
        return self.slurm.cluster()

    def window(self, since: float | None, until: float | None) -> tuple[str, str]:
        return (EPOCH_START if since is None else sacct_time(since),
                "now" if until is None else sacct_time(until))

    def command(self, since: float | None, until: float | None) -> list[str]:
        """The command line (for messages)."""
        start, end = self.window(since, until)
        return [self.sacct, "-a", "-X", "-P",
                f"--format={','.join(self.slurm.sacct_fields())}", "-S", start, "-E", end]

    def text(self, since: float | None, until: float | None) -> str:
        return self.slurm.sacct_jobs(self.window(since, until), timeout=self.timeout)

    def jobs(self, since: float | None, until: float | None) -> list[JobRecord]:
        try:
            text = self.text(since, until)
        except SlurmError as e:
            raise SourceError(str(e)) from e
        read = parse_sacct_text(text, source="sacct")
        records, self.problems, self.refused = read.jobs, read.messages, read.refused
        if self.refused:  # one line per run; the lines are in the quarantine
            log.warning("sacct output: %d line(s) refused (jobio problems), the first: %s",
                        len(self.refused), self.problems[0] if self.problems else "?")
        return records


class PyslurmSource:
    """Jobs from slurmdbd through pyslurm's `pyslurm.db.Jobs.load(JobFilter(...))`.

    Written against the source of pyslurm 25.11.2 (pyslurm/db/job.pyx; the API exists since
    23.2): JobFilter(start_time=, end_time=) (unix seconds accepted), Jobs.load(filter)
    returning a MultiClusterMap of Job with id (the raw job id), array_id, array_task_id,
    array_tasks_waiting, user_id, user_name, account, partition, name, nodelist,
    submit_time, start_time, end_time (None when unset), state, exit_code, exit_code_signal,
    working_directory, submit_command. Never run against a live libslurm here: pyslurm
    builds only for its own Slurm release and Debian 12 has 22.05 (docs/jobs.md).
    """

    def __init__(self, module: Any | None = None) -> None:
        self.pyslurm = module if module is not None else importlib.import_module("pyslurm")
        self.problems: list[str] = []
        self.refused: list[Problem] = []

    def jobs(self, since: float | None, until: float | None) -> list[JobRecord]:
        db = self.pyslurm.db
        flt = db.JobFilter(start_time=int(since) if since else None,
                           end_time=int(until) if until else None)
        try:
            loaded = db.Jobs.load(flt)
        except Exception as e:  # pyslurm raises RPCError and others; all mean "unreadable"
            raise SourceError(f"pyslurm could not load jobs: {e}") from e
        records: list[JobRecord] = []
        self.problems, self.refused = [], []
        # 23.x+ Jobs is a MultiClusterMap: iterating it yields job ids, values() the jobs
        jobs = loaded.values() if hasattr(loaded, "values") else loaded
        for job in jobs:
            try:
                records.append(record_from_pyslurm(job))
            except (ValueError, TypeError) as e:  # RecordError, NodeListError, bad types
                origin = f"job {getattr(job, 'id', '?')}"
                self.problems.append(f"{origin}: {e}")
                self.refused.append(Problem("pyslurm", str(e), origin, repr(job)))
        return records


def record_from_pyslurm(job: Any) -> JobRecord:
    """A JobRecord from a pyslurm.db.Job (duck-typed: pyslurm is an optional extra)."""
    array_job = getattr(job, "array_id", None) or None
    task = getattr(job, "array_task_id", None)
    waiting = getattr(job, "array_tasks_waiting", None)
    array_task = str(task) if task is not None else (f"[{waiting}]" if waiting else None)
    jobid = f"{array_job}_{array_task}" if array_job and array_task else str(job.id)
    exit_code = getattr(job, "exit_code", None)
    signal = getattr(job, "exit_code_signal", None) or 0
    try:
        nodes = expand_nodes(getattr(job, "nodelist", None) or "")
    except NodeListError as e:
        raise ValueError(str(e)) from e
    return fields.checked(JobRecord(
        job=int(job.id), jobid=jobid, array_job=array_job if array_task else None,
        array_task=array_task if array_job else None,
        uid=getattr(job, "user_id", None), user=getattr(job, "user_name", None) or None,
        account=getattr(job, "account", None) or None,
        partition=getattr(job, "partition", None) or None,
        name=getattr(job, "name", None) or None, nodes=nodes,
        submit=_float(getattr(job, "submit_time", None)),
        start=_float(getattr(job, "start_time", None)),
        end=_float(getattr(job, "end_time", None)),
        state=(getattr(job, "state", None) or "").split(" ")[0] or None,
        exit_code=None if exit_code is None else f"{exit_code}:{signal}",
        work_dir=getattr(job, "working_directory", None) or None,
        submit_line=getattr(job, "submit_command", None) or None,
        source="pyslurm",
    ))


def _float(value: Any) -> float | None:
    return float(value) if value else None


def pyslurm_available() -> bool:
    """True when `import pyslurm` works (it fails when built for another libslurm)."""
    try:
        importlib.import_module("pyslurm")
    except Exception:  # ImportError, or OSError/undefined symbols from a mismatched libslurm
        return False
    return True


def default_source(config: Any = None, *, sacct: str | None = None) -> JobSource:
    """pyslurm when importable, else sacct; an explicit `sacct` path always means sacct.

    `config` carries `[slurm] sacct` (path, None by default) and `scontrol`.
    """
    path = sacct or getattr(config, "sacct", None)
    if path is None and pyslurm_available():
        return PyslurmSource()
    return SacctSource(slurm=Slurm.from_config(config, sacct=path))
