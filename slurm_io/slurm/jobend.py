"""What the job-end hook asks Slurm, with the standard library only.

The EpilogSlurmctld hook (notify.hook) must stay within its budget and import nothing
heavy (docs/hook.md): its background child asks `scontrol show job -o` for the start and
end time that 22.05 leaves out of the environment. `Slurm` (slurm.commands) would do, but
it belongs to the daemons (config object, release probe, dataclasses); this function is the
same call -- absolute path from `[slurm] scontrol`, SLURM_TIME_FORMAT=standard, stdin from
/dev/null, a timeout -- through slurm_io.procs, parsed by the pure slurm.scontrol.
"""

from __future__ import annotations

import os

from slurm_io import procs
from slurm_io.slurm.scontrol import job_times

HOOK_TIMEOUT = 5.0  # seconds: an RPC to slurmctld; the child's own deadline is db_timeout


def scontrol_job_times(scontrol: str, job: int, *, timeout: float = HOOK_TIMEOUT
                       ) -> tuple[float | None, float | None]:
    """(start, end) in unix seconds of job `job` from `scontrol show job -o` while the job
    is in slurmctld's memory; (None, None) when scontrol does not know it (or fails: its
    exit status is not looked at, its output decides). Raises OSError when scontrol cannot
    run and procs.Timeout when it hangs; the hook logs both. Only SLURM_CONF is passed on
    from the environment (the hook's holds nothing else of Slurm's that matters here)."""
    env = {"SLURM_TIME_FORMAT": "standard",
           **{k: v for k, v in os.environ.items() if k == "SLURM_CONF"}}
    out = procs.run([scontrol, "show", "job", "-o", str(int(job))], timeout=timeout, env=env,
                    text=True, errors="surrogateescape").stdout
    return job_times(out, job)
