"""`scontrol show job -o` and `scontrol show config` text -> the fields slurm-io uses. Pure.

22.05's EpilogSlurmctld environment has no start or end time (23.02+ sets
SLURM_JOB_START_TIME/SLURM_JOB_END_TIME); while the job is in slurmctld's memory (MinJobAge
after its end) scontrol has both, in local time like sacct (SLURM_TIME_FORMAT=standard).
"""

from __future__ import annotations

import re
import time

_FIELD = re.compile(r"(?:^|\s)(JobId|StartTime|EndTime)=(\S*)")
_CLUSTER = re.compile(r"^ClusterName\s*=\s*(\S+)\s*$", re.MULTILINE)
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def job_times(text: str, job: int) -> tuple[float | None, float | None]:
    """(start, end) in unix seconds of job `job` in `scontrol show job -o` output; None for
    a time that is not set (Unknown/None) or a job that is not in the text. The first line
    of that job counts (a het job prints one line per component, each with its own JobId)."""
    for line in text.splitlines():
        found: dict[str, str] = {}
        for m in _FIELD.finditer(line):
            found.setdefault(m.group(1), m.group(2))  # first: a job name may repeat them
        if found.get("JobId") == str(job):
            return _local(found.get("StartTime")), _local(found.get("EndTime"))
    return None, None


def _local(text: str | None) -> float | None:
    if not text or not _STAMP.fullmatch(text):
        return None
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def cluster_name(config_text: str) -> str | None:
    """ClusterName of `scontrol show config` output (`ClusterName             = lab`);
    None when the text has none."""
    m = _CLUSTER.search(config_text)
    return m.group(1) if m else None
