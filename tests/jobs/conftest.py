"""A mix of real jobs on the Slurm testbed, submitted once per session as alice and bob."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from tests.slurm_fixtures import SlurmCluster

QUIRKY_NAME = "io|test"
QUIRKY_WRAP = "echo a | cat\necho b"


@dataclass(frozen=True)
class SubmittedJobs:
    """Job ids by role (`array` is the array's id), when they were submitted, and what sacct
    said once all of them were final."""

    ids: dict[str, int]
    submitted_at: float
    sacct: list[dict[str, str]]


@pytest.fixture(scope="session")
def slurm_cluster(host_slurm_cluster: SlurmCluster) -> SlurmCluster:
    """These tests read the host testbed's files and uids directly: the 22.05 testbed only
    (the releases in chroots are covered by tests/e2e and tests/mail)."""
    return host_slurm_cluster


@pytest.fixture(scope="session")
def submitted_jobs(slurm_cluster: SlurmCluster) -> SubmittedJobs:
    c = slurm_cluster
    t0 = time.time()
    ids = {
        "single": c.submit("alice", ["-J", "single", "-N1", "--wrap", "echo single; sleep 1"]),
        "multi": c.submit("alice", ["-J", "multi", "-N", "3", "--ntasks-per-node=1",
                                    "--wrap", "srun hostname"]),
        "fail": c.submit("bob", ["-J", "fail", "--wrap", "echo failing; exit 3"]),
        "cancel": c.submit("bob", ["-J", "cancelme", "--wrap", "sleep 300"]),
        "array": c.submit("bob", ["-J", "arr", "--array=1-3", "--wrap", "sleep 1"]),
        "quirky": c.submit("alice", ["-J", QUIRKY_NAME, "--wrap", QUIRKY_WRAP]),
    }
    c.wait_running(ids["cancel"])
    c.cancel("bob", ids["cancel"])
    lines = c.wait_finished(ids.values(), since=t0 - 60, tasks={ids["array"]: 3})
    return SubmittedJobs(ids=ids, submitted_at=t0, sacct=lines)
