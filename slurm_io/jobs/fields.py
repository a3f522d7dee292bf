"""Checked values of a Slurm job record: ids, uids, times and text, from sacct or the hook.

Every record slurm-io gets from Slurm (a sacct line, an EpilogSlurmctld environment, a hook
spool file) is user-influenced text: `sbatch -J` and `--chdir` take any byte but NUL, and a
spool file can be damaged. One value PostgreSQL refuses used to fail a whole import or stop
the reporter's spool ingest for every later job. So values are checked here, at the edge,
and a record is either stored with clean values or refused as a whole with one line that
says why (RecordError). Pure and standard-library only: the job-end hook imports it inside
its time budget.

- Integers are ASCII digits only. Python's int() also takes other scripts' digits
  (`int('٣') == 3`) and str.isdigit() takes `²`, which int() then rejects: neither is a
  Slurm id. Each integer has the range of the column it goes to.
- Text goes through slurm_io.text.clean (invalid UTF-8 and NUL become `\\xHH`).
- Slurm's placeholders for "not set" become NULL: `(null)` (C's printf of a NULL string, e.g.
  SLURM_JOB_ACCOUNT of a job without account), `Unknown`, `None assigned`, `None` and the
  empty string. In the text a user chooses (job name, submit line) only `(null)` and the
  empty string are placeholders: `sbatch -J None` is a real name.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from slurm_io.text import clean, display

if TYPE_CHECKING:  # the hook imports this module: no import it does not need
    from slurm_io.model import JobRecord

# Column ranges (sql/0002_jobs.sql): job ids are bigint, uids integer. A Unix uid is
# unsigned 32-bit, but the uid columns (job, job_node, job_io, RLS) are PostgreSQL integer:
# uids above 2^31-1 cannot be stored and are refused with that reason.
JOB_ID_MAX = 2**63 - 1
UID_MAX = 2**32 - 1
UID_COLUMN_MAX = 2**31 - 1
# Times: what PostgreSQL's timestamptz and Python's datetime both hold (years 1..9999).
TIME_MIN = -62135596800.0  # 0001-01-01T00:00:00Z
TIME_MAX = 253402300799.0  # 9999-12-31T23:59:59Z

PLACEHOLDERS = frozenset({"", "(null)", "Unknown", "None assigned", "None"})
FREE_TEXT_PLACEHOLDERS = frozenset({"", "(null)"})


class RecordError(ValueError):
    """A record from Slurm that cannot be stored; the message says why, in one line."""


def shown(value: str, limit: int = 40) -> str:
    """`value` quoted for a reason text: cleaned, control characters escaped, shortened."""
    text = display(value)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def slurm_text(value: str | bytes | None) -> str | None:
    """A value Slurm fills in (user, account, partition, node list, state, work dir):
    cleaned, None for a placeholder."""
    if value is None:
        return None
    text = clean(value)
    return None if text.strip() in PLACEHOLDERS else text


def free_text(value: str | bytes | None) -> str | None:
    """A value a user chooses (job name, submit line): cleaned, None for `(null)`/empty."""
    if value is None:
        return None
    text = clean(value)
    return None if text in FREE_TEXT_PLACEHOLDERS else text


def ascii_int(text: str, what: str, *, high: int, low: int = 0) -> int:
    """`text` as an integer in [low, high]: ASCII digits only, else RecordError."""
    if not (text.isascii() and text.isdigit()):
        raise RecordError(f"{what} {shown(text)} is not a number")
    if len(text) > 20 and text.lstrip("0")[20:]:  # int() of huge strings is slow or refused
        raise RecordError(f"{what} {shown(text)} is out of range ({low}..{high})")
    value = int(text)
    if not low <= value <= high:
        raise RecordError(f"{what} {value} is out of range ({low}..{high})")
    return value


def job_id(text: str, what: str = "job id") -> int:
    """A Slurm job id (JobIDRaw, SLURM_JOB_ID, an array's or het job's id): 1..2^63-1."""
    return ascii_int(text, what, low=1, high=JOB_ID_MAX)


def is_job_id(text: str) -> bool:
    """Whether `text` is a job id job_id() accepts (the hook's cheap first check)."""
    try:
        job_id(text)
    except RecordError:
        return False
    return True


def uid(text: str, what: str = "uid") -> int:
    """A uid: ASCII digits, at most 2^32-1 (Unix), and at most 2^31-1 (the columns)."""
    value = ascii_int(text, what, high=UID_MAX)
    if value > UID_COLUMN_MAX:
        raise RecordError(f"{what} {value} is above {UID_COLUMN_MAX}, which the database's "
                          "uid columns (integer) cannot hold")
    return value


def unix_time(value: float, what: str) -> float:
    """A unix time PostgreSQL and datetime can hold, else RecordError."""
    if not math.isfinite(value) or not TIME_MIN <= value <= TIME_MAX:
        raise RecordError(f"{what} {value!r} is out of range (years 1..9999)")
    return value


def checked(rec: JobRecord) -> JobRecord:
    """`rec` (from a source that does not check its values itself, e.g. pyslurm) with its
    text cleaned and placeholders as None; RecordError when an id, uid or time cannot be
    stored."""
    for name, value, high in (("job id", rec.job, JOB_ID_MAX),
                              ("array job id", rec.array_job, JOB_ID_MAX),
                              ("uid", rec.uid, UID_COLUMN_MAX)):
        if value is not None and not 0 <= value <= high:
            raise RecordError(f"{name} {value} is out of range (0..{high})")
    for name in ("submit", "start", "end"):
        value = getattr(rec, name)
        if value is not None:
            unix_time(value, name)
    return rec._replace(
        jobid=clean(rec.jobid), array_task=slurm_text(rec.array_task),
        user=slurm_text(rec.user), account=slurm_text(rec.account),
        partition=slurm_text(rec.partition), name=free_text(rec.name),
        nodes=tuple(clean(n) for n in rec.nodes), state=slurm_text(rec.state),
        exit_code=slurm_text(rec.exit_code), work_dir=slurm_text(rec.work_dir),
        submit_line=free_text(rec.submit_line))
