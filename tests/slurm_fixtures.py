"""Real Slurm for tests: 22.05 on the host (scripts/setup-slurm.sh), 24.11 and 26.05 each in
a Debian chroot (scripts/setup-slurm-chroot.sh). Both set-ups are idempotent.

`slurm_cluster` (session) is parametrized by release: every test using it runs once per
release selected by $SLURM_IO_SLURM (comma-separated, e.g. `22.05` or `24.11,26.05`; default:
all three). It makes sure the testbed runs and returns a `SlurmCluster` to submit jobs as the
test users and wait for sacct to report them finished. Tests that need other testbed knobs
(e.g. the project's own EpilogSlurmctld) call `ensure_cluster(release, HOOK_EPILOG_SLURMCTLD=
...)` from their own fixture; each testbed is one per machine, so such knobs apply to every
session using it until the next set-up run changes them back.

In a chroot, commands run as `chroot DIR ...` with a clean environment (the host's own sacct
would talk to the host's cluster); `cluster.command("sacct")` is an absolute path of a
host-side wrapper doing that, for code under test that is given Slurm command paths. The
users alice and bob exist there with other uids than on the host: ask `cluster.uid()`.

Needs root (runuser, chroot, daemons). First set-up on a fresh machine: 22.05 ~25 s (Debian
packages), a chroot ~40-90 s (debootstrap + packages, then cached); later calls ~1-2 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP_SCRIPT = REPO / "scripts" / "setup-slurm.sh"
CHROOT_SETUP_SCRIPT = REPO / "scripts" / "setup-slurm-chroot.sh"
DEFAULT_LAB = Path("/var/lib/slurm-testbed")
RELEASES = ("22.05", "24.11", "26.05")
HOST_RELEASE = "22.05"
CHROOT_SUITES = {"24.11": "trixie", "26.05": "sid"}
TESTBEDS_ROOT = Path(os.environ.get("SLURM_IO_TESTBEDS", "/var/lib/slurm-io-testbeds"))
CHROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def selected_releases() -> list[str]:
    """The releases $SLURM_IO_SLURM names (default: all); an unknown name is an error."""
    wanted = [r.strip() for r in os.environ.get("SLURM_IO_SLURM", "").split(",") if r.strip()]
    unknown = sorted(set(wanted) - set(RELEASES))
    if unknown:
        raise pytest.UsageError(f"SLURM_IO_SLURM: unknown release(s) {', '.join(unknown)} "
                                f"(known: {', '.join(RELEASES)})")
    return wanted or list(RELEASES)
# sacct states after which a job's record is final
ACTIVE_STATES = frozenset({
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
})


def leader(jobid: str) -> int:
    """The job id an array task (`5_1`) or het-job component (`9+1`) was submitted as."""
    return int(re.split(r"[_+]", jobid, maxsplit=1)[0])


def sacct_time(t: float) -> str:
    """Local time as sacct's -S/-E take it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


class SlurmTestbedError(RuntimeError):
    """The testbed could not be set up, or a job did not get where a test needs it."""


@dataclass
class SlurmCluster:
    """The running testbed: where it lives and how to talk to it as a test user."""

    lab: Path  # as the cluster's commands see it (inside the chroot: the same path)
    env: dict[str, str] = field(default_factory=dict)  # for sbatch/sacct/scontrol/squeue
    release: str = HOST_RELEASE
    chroot: Path | None = None  # the chroot the cluster runs in (None: the host)

    @property
    def version(self) -> tuple[int, int]:
        major, minor = self.release.split(".")
        return int(major), int(minor)

    def host_path(self, path: Path | str) -> Path:
        """Where a path of the cluster's world is on the host."""
        return Path(f"{self.chroot}{path}") if self.chroot else Path(path)

    def command(self, name: str) -> str:
        """Absolute path of a Slurm command (sacct, scontrol, ...) that the host can run and
        that talks to this cluster: /usr/bin/NAME on the host, else a `chroot` wrapper."""
        if self.chroot is None:
            return f"/usr/bin/{name}"
        return str(TESTBEDS_ROOT / f"{self.chroot.name}.bin" / name)

    def uid(self, user: str) -> int:
        """The user's uid on the cluster (the chroots' differ from the host's)."""
        if self.chroot is None:
            import pwd
            return pwd.getpwnam(user).pw_uid
        return int(self.run(["id", "-u", user]).stdout.strip())

    def run(self, argv: Sequence[str], *, user: str | None = None, cwd: Path | None = None,
            check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a Slurm command (as `user` via runuser), output as text; `cwd` is a path of
        the cluster's world."""
        full = ["runuser", "-u", user, "--", *argv] if user else list(argv)
        env, run_cwd = self.env, cwd
        if self.chroot is not None:
            inner = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', str(cwd), *full] if cwd else full
            full = ["chroot", str(self.chroot), "/usr/bin/env", "-i", f"PATH={CHROOT_PATH}",
                    "LANG=C.UTF-8", "SLURM_TIME_FORMAT=standard", *inner]
            env, run_cwd = None, None
        proc = subprocess.run(full, capture_output=True, text=True, env=env, cwd=run_cwd,
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
                      since: float | None = None,
                      tasks: Mapping[int, int] | None = None) -> list[dict[str, str]]:
        """Block until every job (and every array task) is final, with an end time, in the
        listing `jobio jobs sync` reads: `sacct -a -X -S since -E now` (default since: a day
        ago). Not `sacct -j`: on 22.05 the windowed listing shows a just-ended job 2-4 s
        later than `sacct -j` does -- an array's tasks too, one by one, so `tasks` (array
        id -> number of tasks) waits until each array lists all of its own. Returns the
        jobs' lines."""
        ids = set(ids)
        start = sacct_time(time.time() - 86400 if since is None else since)
        fields = ["JobIDRaw", "JobID", "State", "End"]
        deadline = time.monotonic() + timeout
        while True:
            out = self.run(["sacct", "-a", "-X", "-P", "-S", start, "-E", "now",
                            "-o", ",".join(fields)])
            lines = [dict(zip(fields, line.split("|"), strict=True))
                     for line in out.stdout.splitlines()[1:] if line]
            # the leading number of JobID: an array's (5_1) or het job's (114+0) own id
            mine = [ln for ln in lines if int(ln["JobIDRaw"]) in ids
                    or leader(ln["JobID"]) in ids]
            seen = {leader(ln["JobID"]) for ln in mine} | {
                int(ln["JobIDRaw"]) for ln in mine}
            pending = [ln for ln in mine
                       if ln["State"].split()[0] in ACTIVE_STATES or ln["End"] == "Unknown"]
            listed = Counter(leader(ln["JobID"]) for ln in mine)
            if not pending and ids <= seen and all(
                    listed[a] >= n for a, n in (tasks or {}).items()):
                return mine
            if time.monotonic() > deadline:
                raise SlurmTestbedError(f"jobs not final in sacct: {pending or sorted(ids - seen)}")
            time.sleep(0.5)

    def hostnames(self, nodelist: str) -> list[str]:
        """Slurm's own expansion of a node list (`scontrol show hostnames`)."""
        return self.run(["scontrol", "show", "hostnames", nodelist]).stdout.split()


def ensure_cluster(release: str = HOST_RELEASE, lab: Path | None = None,
                   **knobs: str) -> SlurmCluster:
    """Run scripts/setup-slurm.sh on the host (22.05) or scripts/setup-slurm-chroot.sh
    (24.11, 26.05; idempotent: starts only what is not running) with the given knobs
    (LAB, NODES, HOOK_EPILOG_SLURMCTLD, ...; in a chroot, paths are the chroot's) and
    return the cluster."""
    if os.geteuid() != 0:
        raise SlurmTestbedError("the real-Slurm tests need root (daemons, runuser, useradd)")
    if release != HOST_RELEASE:
        return _ensure_chroot_cluster(release, knobs)
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


def _ensure_chroot_cluster(release: str, knobs: dict[str, str]) -> SlurmCluster:
    suite = CHROOT_SUITES.get(release)
    if suite is None:
        raise SlurmTestbedError(f"no testbed for Slurm {release} (known: {RELEASES})")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "HOOK_"))}
    env.update(ROOT=str(TESTBEDS_ROOT), **knobs)
    proc = subprocess.run(["bash", str(CHROOT_SETUP_SCRIPT), release], capture_output=True,
                          text=True, env=env, timeout=1800, check=False)
    if proc.returncode != 0:
        raise SlurmTestbedError(f"setup-slurm-chroot.sh {release} failed ({proc.returncode}):"
                                f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return SlurmCluster(lab=DEFAULT_LAB, env={"SLURM_CONF": str(DEFAULT_LAB / "etc" /
                                                                 "slurm.conf")},
                        release=release, chroot=TESTBEDS_ROOT / suite)


@pytest.fixture(scope="session", params=selected_releases(), ids=lambda r: f"slurm{r}")
def slurm_release(request: pytest.FixtureRequest) -> str:
    """A Slurm release of the session's selection ($SLURM_IO_SLURM)."""
    return request.param


@pytest.fixture(scope="session")
def slurm_cluster(slurm_release: str) -> SlurmCluster:
    """The real Slurm testbed of one release (set up if needed), shared by the session."""
    return ensure_cluster(slurm_release)


@pytest.fixture(scope="session")
def host_slurm_cluster() -> SlurmCluster:
    """The host's 22.05 testbed alone, for tests of that testbed's own set-up."""
    return ensure_cluster()
