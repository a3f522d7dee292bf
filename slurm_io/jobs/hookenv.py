"""The job-end hook's environment -> JobRecord. Pure: the hook passes `os.environ` in.

EpilogSlurmctld (22.05) gets SLURM_* variables only: ids, user, account, partition, node
list, work dir and exit code, but no state and no start/end times (those arrive in 23.02 as
SLURM_JOB_START_TIME/SLURM_JOB_END_TIME and are used when present). A cancelled or timed-out
job shows exit code 0 here, so the record carries no state: sacct's later, final record
fills it in (see store.upsert_jobs for how the two merge).

Ids: SLURM_JOB_ID is the raw id (Lustre's %j) of the job, of an array task and of a het
job's component alike. The display id is `A_T` for an array task (SLURM_ARRAY_JOB_ID/
TASK_ID) and `J+O` for a het component (SLURM_HET_JOB_ID/OFFSET, 24.11+; the older
SLURM_PACK_JOB_ID/OFFSET are the same values), as sacct's JobID prints them.

Every value is checked (slurm_io.jobs.fields): the environment is what the user's job left
behind, any byte but NUL. Text is cleaned, placeholders such as `(null)` become None, and a
value that cannot be stored refuses the whole record with RecordError.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from slurm_io.jobs import fields
from slurm_io.jobs.fields import RecordError
from slurm_io.model import JobRecord
from slurm_io.slurm.nodes import expand_nodes

_EXIT2 = re.compile(r"[0-9]{1,10}:[0-9]{1,10}")
_TASK_MAX = 2**32 - 1


def record_from_hook_env(env: Mapping[str, str]) -> JobRecord:
    """The job described by an EpilogSlurmctld (or PrologSlurmctld) environment.

    Raises RecordError (a ValueError) when the environment names no job or holds a value
    that cannot be stored (an id or uid out of range, not ASCII digits), and NodeListError
    (a ValueError) when its node list cannot be expanded: the caller decides what to keep.
    """
    raw = _value(env, "SLURM_JOB_ID") or _value(env, "SLURM_JOBID")
    if raw is None:
        raise RecordError("no SLURM_JOB_ID")
    job = fields.job_id(raw, "SLURM_JOB_ID")
    jobid, array_job, array_task = _display_id(env, job)
    uid_text = _value(env, "SLURM_JOB_UID")
    return JobRecord(
        job=job,
        jobid=jobid,
        array_job=array_job,
        array_task=array_task,
        uid=None if uid_text is None else fields.uid(uid_text, "SLURM_JOB_UID"),
        user=_value(env, "SLURM_JOB_USER"),
        account=_value(env, "SLURM_JOB_ACCOUNT"),
        partition=_value(env, "SLURM_JOB_PARTITION"),
        name=fields.free_text(env.get("SLURM_JOB_NAME")),
        nodes=expand_nodes(_value(env, "SLURM_JOB_NODELIST") or ""),
        submit=None,
        start=_time(env, "SLURM_JOB_START_TIME"),
        end=_time(env, "SLURM_JOB_END_TIME"),
        state=None,
        exit_code=_exit_code(env),
        work_dir=_value(env, "SLURM_JOB_WORK_DIR"),
        submit_line=None,
        source="hook",
        sluid=_value(env, "SLURM_JOB_SLUID"),  # 25.11+
        cluster=_value(env, "SLURM_CLUSTER_NAME"),
    )


def _value(env: Mapping[str, str], name: str) -> str | None:
    """A Slurm-filled variable, cleaned; None when absent or a placeholder."""
    return fields.slurm_text(env.get(name))


def _display_id(env: Mapping[str, str], job: int) -> tuple[str, int | None, str | None]:
    """(jobid, array_job, array_task): `A_T` for an array task, `J+O` for a het component,
    else the raw id."""
    array_id = _value(env, "SLURM_ARRAY_JOB_ID")
    task = _value(env, "SLURM_ARRAY_TASK_ID")
    if array_id is not None and task is not None:
        array_job = fields.job_id(array_id, "SLURM_ARRAY_JOB_ID")
        task_no = fields.ascii_int(task, "SLURM_ARRAY_TASK_ID", high=_TASK_MAX)
        return f"{array_job}_{task_no}", array_job, str(task_no)
    het_id = _value(env, "SLURM_HET_JOB_ID") or _value(env, "SLURM_PACK_JOB_ID")
    offset = _value(env, "SLURM_HET_JOB_OFFSET") or _value(env, "SLURM_PACK_JOB_OFFSET")
    if het_id is not None and offset is not None:
        leader = fields.job_id(het_id, "SLURM_HET_JOB_ID")
        off = fields.ascii_int(offset, "SLURM_HET_JOB_OFFSET", high=_TASK_MAX)
        return f"{leader}+{off}", None, None
    return str(job), None, None


def _time(env: Mapping[str, str], name: str) -> float | None:
    """Unix seconds (23.02+ variables); 0 means "not set" in Slurm."""
    text = _value(env, name)
    if text is None:
        return None
    value = fields.ascii_int(text, name, high=int(fields.TIME_MAX))
    return float(value) if value else None


def _exit_code(env: Mapping[str, str]) -> str | None:
    """`exit:signal` as sacct prints it: SLURM_JOB_EXIT_CODE2, else decoded from the raw
    wait status in SLURM_JOB_EXIT_CODE (768 = exit 3)."""
    text = _value(env, "SLURM_JOB_EXIT_CODE2") or ""
    if _EXIT2.fullmatch(text):
        return text
    raw = _value(env, "SLURM_JOB_EXIT_CODE")
    if raw is None:
        return None
    status = fields.ascii_int(raw, "SLURM_JOB_EXIT_CODE", high=2**32 - 1)
    return f"{(status >> 8) & 0xFF}:{status & 0x7F}"
