"""The job-end hook's environment -> JobRecord. Pure: the hook passes `os.environ` in.

EpilogSlurmctld (22.05) gets SLURM_* variables only: ids, user, account, partition, node
list, work dir and exit code, but no state and no start/end times (those arrive in 23.02 as
SLURM_JOB_START_TIME/SLURM_JOB_END_TIME and are used when present). A cancelled or timed-out
job shows exit code 0 here, so the record carries no state: sacct's later, final record
fills it in (see store.upsert_jobs for how the two merge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from slurm_io.jobs.nodes import expand_nodes
from slurm_io.model import JobRecord

_EXIT2 = re.compile(r"^\d+:\d+$")


def record_from_hook_env(env: Mapping[str, str]) -> JobRecord:
    """The job described by an EpilogSlurmctld (or PrologSlurmctld) environment.

    Raises ValueError when the environment names no job (SLURM_JOB_ID missing or not a
    number) or its node list cannot be expanded: the caller (the hook) decides what to log.
    """
    raw = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or ""
    if not raw.isdigit():
        raise ValueError(f"SLURM_JOB_ID {raw!r} is not a job id")
    job = int(raw)
    array_id = env.get("SLURM_ARRAY_JOB_ID") or ""
    task = env.get("SLURM_ARRAY_TASK_ID") or ""
    is_task = array_id.isdigit() and task != ""
    # a het-job component (24.11+ env; each component has its own raw id and hook run):
    # sacct's display id is `leader+offset`
    het, offset = env.get("SLURM_HET_JOB_ID") or "", env.get("SLURM_HET_JOB_OFFSET") or ""
    jobid = (f"{array_id}_{task}" if is_task
             else f"{het}+{offset}" if het.isdigit() and offset.isdigit() else str(job))
    return JobRecord(
        job=job,
        jobid=jobid,
        array_job=int(array_id) if is_task else None,
        array_task=task if is_task else None,
        uid=_int(env.get("SLURM_JOB_UID")),
        user=env.get("SLURM_JOB_USER") or None,
        account=env.get("SLURM_JOB_ACCOUNT") or None,
        partition=env.get("SLURM_JOB_PARTITION") or None,
        name=env.get("SLURM_JOB_NAME") or None,
        nodes=expand_nodes(env.get("SLURM_JOB_NODELIST") or ""),
        submit=None,
        start=_time(env.get("SLURM_JOB_START_TIME")),
        end=_time(env.get("SLURM_JOB_END_TIME")),
        state=None,
        exit_code=_exit_code(env),
        work_dir=env.get("SLURM_JOB_WORK_DIR") or None,
        submit_line=None,
        source="hook",
        sluid=env.get("SLURM_JOB_SLUID") or None,  # 25.11+
    )


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _time(text: str | None) -> float | None:
    """Unix seconds (23.02+ variables); 0 means "not set" in Slurm."""
    value = _int(text)
    return float(value) if value else None


def _exit_code(env: Mapping[str, str]) -> str | None:
    """`exit:signal` as sacct prints it: SLURM_JOB_EXIT_CODE2, else decoded from the raw
    wait status in SLURM_JOB_EXIT_CODE (768 = exit 3)."""
    text = env.get("SLURM_JOB_EXIT_CODE2") or ""
    if _EXIT2.match(text):
        return text
    status = _int(env.get("SLURM_JOB_EXIT_CODE"))
    if status is None:
        return None
    return f"{(status >> 8) & 0xFF}:{status & 0x7F}"
