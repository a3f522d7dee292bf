"""`sacct --json` -> JobRecords. Pure. Not what slurm-io syncs from: the conformance check.

`jobs sync` reads `sacct -P` (jobs.sacct) on every release. The JSON output is read here to
cross-check that parser on each release's captures and to document where JSON falls short:

- no numeric uid in any release (22.05's dbv0.0.38, 24.11's v0.0.42, 26.05's v0.0.45), and
  attribution of `:uid:host` job ids needs it -- the reason JSON cannot replace `-P`;
- 22.05: `exit_code.return_code` of an `exit 3` job is 0 (status FAILED): wrong; no
  `submit_line`;
- 24.11: no `sluid` (its text sacct has SLUID); 26.05 has `sluid` and `original_sluid`.

The shapes: 22.05 gives plain numbers (None when unset) and `state.current` as a string;
24.11+ give `{"set": bool, "infinite": bool, "number": n}` and lists of state/status flags.
"""

from __future__ import annotations

import json
from typing import Any

from slurm_io.model import JobRecord
from slurm_io.slurm.nodes import NodeListError, expand_nodes


def _number(value: Any) -> int | None:
    """A plain number, or the {set, number} object of data_parser v0.0.40+; None if unset."""
    if isinstance(value, dict):
        return int(value["number"]) if value.get("set") and not value.get("infinite") else None
    if isinstance(value, bool) or value is None:
        return None
    return int(value)


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return str(value).split()[0] if value else None


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def record_from_json(job: dict[str, Any]) -> JobRecord:
    """One element of `jobs[]`; ValueError when it names no job or has unreadable nodes."""
    raw = _number(job.get("job_id"))
    if not raw:
        raise ValueError("no job_id")
    array = job.get("array") or {}
    array_job = _number(array.get("job_id")) or None
    task = _number(array.get("task_id"))
    het = job.get("het") or {}
    het_job = _number(het.get("job_id")) or None
    offset = _number(het.get("job_offset"))
    if array_job and task is not None:
        jobid = f"{array_job}_{task}"
    elif het_job and offset is not None:
        jobid = f"{het_job}+{offset}"
    else:
        jobid = str(raw)
    times = job.get("time") or {}
    exit_code = job.get("exit_code") or {}
    rc = _number(exit_code.get("return_code"))
    signal = _number((exit_code.get("signal") or {}).get("id"))
    nodes_text = job.get("nodes") or ""
    try:
        nodes = () if nodes_text == "None assigned" else expand_nodes(nodes_text)
    except NodeListError as e:
        raise ValueError(f"job {raw}: {e}") from e
    return JobRecord(
        job=raw, jobid=jobid,
        array_job=array_job if array_job and task is not None else None,
        array_task=str(task) if array_job and task is not None else None,
        uid=None,  # not in sacct's JSON (any release)
        user=_text(job.get("user")), account=_text(job.get("account")),
        partition=_text(job.get("partition")), name=_text(job.get("name")), nodes=nodes,
        submit=float(_number(times.get("submission")) or 0) or None,
        start=float(_number(times.get("start")) or 0) or None,
        end=float(_number(times.get("end")) or 0) or None,
        state=_first((job.get("state") or {}).get("current")),
        exit_code=None if rc is None else f"{rc}:{signal or 0}",
        work_dir=_text(job.get("working_directory")),
        submit_line=_text(job.get("submit_line")),
        source="sacct-json",
        sluid=_text(job.get("sluid")),
    )


def parse_sacct_json(text: str) -> tuple[list[JobRecord], list[str]]:
    """Records of `sacct --json` text and the problems met (a bad job is skipped)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return [], [f"not JSON: {e}"]
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        return [], ["no `jobs` list"]
    records: list[JobRecord] = []
    problems: list[str] = []
    for i, job in enumerate(jobs):
        try:
            records.append(record_from_json(job))
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            problems.append(f"jobs[{i}]: {e}")
    return records, problems
