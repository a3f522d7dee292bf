"""Start and end times from `scontrol show job -o` (the 22.05 hook's fallback), and the
cluster name from `scontrol show config` (where `jobs sync` resumes)."""

from __future__ import annotations

import time

import pytest

from slurm_io.slurm.scontrol import cluster_name, job_times
from tests.shared import shared_file

LINE = ("JobId=3 JobName=x=EndTime=bogus UserId=bob(1001) JobState=FAILED "
        "SubmitTime=2026-11-23T16:32:02 StartTime=2026-11-23T16:32:03 "
        "EndTime=2026-11-23T16:32:05 Deadline=N/A")


def local(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def test_times_are_read_as_local_time_of_the_named_job():
    assert job_times(LINE, 3) == (local("2026-11-23T16:32:03"), local("2026-11-23T16:32:05"))


def test_another_job_or_no_output_gives_no_times():
    assert job_times(LINE, 4) == (None, None)
    assert job_times("", 3) == (None, None)
    assert job_times("slurm_load_jobs error: Invalid job id specified", 3) == (None, None)


def test_unset_times_are_none():
    running = LINE.replace("EndTime=2026-11-23T16:32:05", "EndTime=Unknown")
    assert job_times(running, 3) == (local("2026-11-23T16:32:03"), None)


def test_a_het_job_gives_the_line_of_the_component_asked_for():
    text = (LINE.replace("JobId=3", "JobId=9 HetJobId=9 HetJobOffset=0") + "\n"
            + LINE.replace("JobId=3", "JobId=10 HetJobId=9 HetJobOffset=1")
            .replace("16:32:05", "16:32:09"))
    assert job_times(text, 10)[1] == local("2026-11-23T16:32:09")
    assert job_times(text, 9)[1] == local("2026-11-23T16:32:05")


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_the_cluster_name_of_a_real_show_config(release):
    text = shared_file("fixtures", "slurm", release, "scontrol_show_config.txt").read_text()
    assert cluster_name(text) == "lab"


def test_a_config_without_a_cluster_name_names_none():
    assert cluster_name("ClusterName             = site-a\nControlMachine = ctl\n") == "site-a"
    assert cluster_name("AccountingStorageType = accounting_storage/slurmdbd\n") is None
    assert cluster_name("") is None
    # a value that merely mentions it is not the field
    assert cluster_name("SlurmctldParameters = ClusterName=x\n") is None
