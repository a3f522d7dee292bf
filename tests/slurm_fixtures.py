"""A real Slurm 22.05 for tests: the testbed of scripts/setup-slurm.sh (idempotent).

`slurm_cluster` (session) makes sure the testbed runs and returns a `SlurmCluster` to submit
jobs as the test users and wait for sacct to report them finished. Tests that need other
testbed knobs (e.g. the project's own EpilogSlurmctld) call `ensure_cluster(
HOOK_EPILOG_SLURMCTLD=...)` from their own fixture; note that the testbed is one per machine,
so such knobs apply to every session using it until the next set-up run changes them back.

Needs root (runuser, daemons); on a fresh machine the first set-up installs the Debian
packages (~25 s), later calls take ~2 s.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP_SCRIPT = REPO / "scripts" / "setup-slurm.sh"
DEFAULT_LAB = Path("/var/lib/slurm-testbed")
# sacct states after which a job's record is final
ACTIVE_STATES = frozenset({
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
})


def sacct_time(t: float) -> str:
    """Local time as sacct's -S/-E take it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


class SlurmTestbedError(RuntimeError):
    """The testbed could not be set up, or a job did not get where a test needs it."""


@dataclass
class SlurmCluster:
    """The running testbed: where it lives and how to talk to it as a test user."""

    lab: Path
    env: dict[str, str] = field(default_factory=dict)  # for sbatch/sacct/scontrol/squeue

    def run(self, argv: Sequence[str], *, user: str | None = None, cwd: Path | None = None,
            check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a Slurm command (as `user` via runuser), output as text."""
        full = ["runuser", "-u", user, "--", *argv] if user else list(argv)
        proc = subprocess.run(full, capture_output=True, text=True, env=self.env, cwd=cwd,
                              timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise SlurmTestbedError(f"{' '.join(full)} failed ({proc.returncode}): "
                                    f"{proc.stderr.strip() or proc.stdout.strip()}")
        return proc

    def job_dir(self, user: str) -> Path:
        """A directory `user` may write job output to (made by setup-slurm.sh)."""
        return self.lab / "jobs" / user

    def submit(self, user: str, args: Sequence[str]) -> int:
        """`sbatch --parsable ARGS` as `user` in the user's job directory; the job id (for an
        array: the array's id)."""
        out = self.run(["sbatch", "--parsable", *args], user=user, cwd=self.job_dir(user))
        return int(out.stdout.strip().split(";")[0])

    def cancel(self, user: str, job_id: int) -> None:
        self.run(["scancel", str(job_id)], user=user)

    def squeue_state(self, job_id: int) -> str:
        """The job's state in slurmctld's memory ('' once it is gone)."""
        out = self.run(["squeue", "-h", "-j", str(job_id), "-o", "%T"], check=False)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""

    def wait_running(self, job_id: int, timeout: float = 120) -> None:
        """Block until the job runs (a hang guard, not a timing check)."""
        deadline = time.monotonic() + timeout
        while (state := self.squeue_state(job_id)) != "RUNNING":
            if state in ("", "COMPLETED", "FAILED", "CANCELLED") or time.monotonic() > deadline:
                raise SlurmTestbedError(f"job {job_id} did not start running (state {state!r})")
            time.sleep(0.25)

    def sacct_lines(self, ids: Iterable[int], fields: Sequence[str]) -> list[dict[str, str]]:
        """`sacct -X -P -j IDS -o FIELDS` as dicts (array ids list all their tasks)."""
        ids = list(ids)
        out = self.run(["sacct", "-X", "-P", "-j", ",".join(map(str, ids)),
                        "-o", ",".join(fields)])
        header, *lines = out.stdout.splitlines()
        names = header.split("|")
        return [dict(zip(names, line.split("|", len(names) - 1), strict=True))
                for line in lines if line]

    def wait_finished(self, ids: Iterable[int], timeout: float = 300,
                      since: float | None = None) -> list[dict[str, str]]:
        """Block until every job (and every array task) is final, with an end time, in the
        listing `jobio jobs sync` reads: `sacct -a -X -S since -E now` (default since: a day
        ago). Not `sacct -j`: on 22.05 the windowed listing shows a just-ended job 2-4 s
        later than `sacct -j` does. Returns the jobs' lines."""
        ids = set(ids)
        start = sacct_time(time.time() - 86400 if since is None else since)
        fields = ["JobIDRaw", "JobID", "State", "End"]
        deadline = time.monotonic() + timeout
        while True:
            out = self.run(["sacct", "-a", "-X", "-P", "-S", start, "-E", "now",
                            "-o", ",".join(fields)])
            lines = [dict(zip(fields, line.split("|"), strict=True))
                     for line in out.stdout.splitlines()[1:] if line]
            # the testbed is shared: other jobs' ids may be `5_1`, `114+0` (het jobs)
            mine = [ln for ln in lines if int(ln["JobIDRaw"]) in ids
                    or _lead(ln["JobID"]) in ids]
            seen = {_lead(ln["JobID"]) for ln in mine} | {
                int(ln["JobIDRaw"]) for ln in mine}
            pending = [ln for ln in mine
                       if ln["State"].split()[0] in ACTIVE_STATES or ln["End"] == "Unknown"]
            if not pending and ids <= seen:
                return mine
            if time.monotonic() > deadline:
                raise SlurmTestbedError(f"jobs not final in sacct: {pending or sorted(ids - seen)}")
            time.sleep(0.5)

    def hostnames(self, nodelist: str) -> list[str]:
        """Slurm's own expansion of a node list (`scontrol show hostnames`)."""
        return self.run(["scontrol", "show", "hostnames", nodelist]).stdout.split()


def ensure_cluster(lab: Path | None = None, **knobs: str) -> SlurmCluster:
    """Run scripts/setup-slurm.sh (idempotent: starts only what is not running) with the
    given knobs (LAB, NODES, HOOK_EPILOG_SLURMCTLD, ...) and return the cluster."""
    if os.geteuid() != 0:
        raise SlurmTestbedError("the real-Slurm tests need root (daemons, runuser, useradd)")
    lab = lab or Path(os.environ.get("LAB", DEFAULT_LAB))
    env = {**os.environ, "LAB": str(lab), **knobs}
    proc = subprocess.run(["bash", str(SETUP_SCRIPT)], capture_output=True, text=True,
                          env=env, timeout=900, check=False)
    if proc.returncode != 0:
        raise SlurmTestbedError(f"setup-slurm.sh failed ({proc.returncode}):\n"
                                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    slurm_env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SACCT_",
                                                                          "SBATCH_", "SQUEUE_"))}
    slurm_env["SLURM_CONF"] = str(lab / "etc" / "slurm.conf")
    slurm_env["SLURM_TIME_FORMAT"] = "standard"
    return SlurmCluster(lab=lab, env=slurm_env)


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """The real Slurm testbed (set up if needed), shared by the whole session."""
    return ensure_cluster()


def _lead(jobid: str) -> int:
    """The leading number of a sacct JobID (`5`, `5_1`, `114+0`)."""
    digits = len(jobid) - len(jobid.lstrip("0123456789"))
    return int(jobid[:digits] or -1)
