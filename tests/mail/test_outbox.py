"""The outbox (`jobio demo`'s mails as files): named by the job as sacct shows it and its
cluster, never by the database's row key, and one file per job run even where two clusters
number their jobs alike and a requeued job runs twice (docs/mail.md "Mails as files")."""

from __future__ import annotations

import email
from email import policy
from pathlib import Path

import psycopg
import pytest

from slurm_io.config import Config
from slurm_io.jobs.info import JobInfo
from slurm_io.jobs.store import upsert_jobs
from slurm_io.mail.builder import MailBuilder
from slurm_io.mail.outbox import outbox_name, write_mails
from slurm_io.model import JobRecord
from tests.mail.conftest import NOW

T0 = NOW - 5 * 86400


def _info(jobid: str, cluster: str | None, run: int = 0) -> JobInfo:
    return JobInfo(4294967296 + run, jobid, 1000, "alice", None, None, None, (), None, None,
                   None, None, None, None, cluster=cluster, run=run)


def test_the_name_is_the_cluster_the_sacct_id_and_the_run() -> None:
    assert outbox_name(_info("4711", "lab")) == "job-lab-4711"
    assert outbox_name(_info("8200_3", "lab")) == "job-lab-8200_3"
    assert outbox_name(_info("1853+1", "lab2605")) == "job-lab2605-1853+1"
    assert outbox_name(_info("4711", "lab", run=2)) == "job-lab-4711-r2"
    assert outbox_name(_info("4711", "hpc-a")) == "job-hpc-a-4711"


def test_unsafe_characters_are_escaped_and_never_collide() -> None:
    # a path separator, a space, upper case (one file on a case-insensitive disk), a
    # pending array's brackets and `-`, and `%` itself (so escapes cannot be forged)
    assert outbox_name(_info("8200_[3-5%2]", "Site/A b")) == \
        "job-%53ite%2f%41%20b-8200_%5b3%2d5%252%5d"
    names = [outbox_name(_info(j, c, r)) for c, j, r in [
        ("a-1", "2", 0), ("a", "1", 0), ("a", "1", 2), ("a-1", "2", 1),
        ("Lab", "7", 0), ("lab", "7", 0), ("%4cab", "7", 0), ("%4Cab", "7", 0), ("a%2d1", "2", 0),
        ("r1", "5", 0), ("", "5", 0), ("x", "5", 1)]]
    assert len(set(names)) == len(names), names
    for name in names:
        assert "/" not in name and " " not in name and name == name.lower()


def _record(raw: int, jobid: str, cluster: str, start: float, **kw) -> JobRecord:
    array = kw.pop("array", None)
    return JobRecord(raw, jobid, array, jobid.split("_")[1] if array else None, 1000, "alice",
                     "proj", "batch", f"run-{jobid}", ("node01",), start - 60, start,
                     start + 3600, "COMPLETED", "0:0", "/home/alice", None, "sacct",
                     cluster=cluster, **kw)


@pytest.mark.pg
def test_two_clusters_a_requeued_run_and_an_array_task_get_a_file_each(db_dsn: str,
                                                                        tmp_path: Path) -> None:
    records = [
        _record(4711, "4711", "lab", T0),
        _record(4711, "4711", "lab", T0 + 7200),  # the same job, requeued: run 1
        _record(4711, "4711", "other", T0),  # another cluster's job 4711
        _record(8203, "8200_3", "lab", T0, array=8200),
    ]
    with psycopg.connect(db_dsn) as conn:
        upsert_jobs(conn, records)
        conn.commit()
        keys = [r[0] for r in conn.execute("SELECT job FROM job ORDER BY job")]
        assert max(keys) >= 2**32  # row keys are not what anybody calls the jobs
        builder = MailBuilder(Config(mail_policy="all"), lookup=lambda job: None,
                              clock=lambda: NOW)
        out = tmp_path / "mails"
        out.mkdir()
        (out / f"job-{keys[0]}.eml").write_text("an earlier outbox's file")
        box = write_mails(conn, builder, keys, out)
    assert box.due == 4
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{n}.{ext}" for n in ("job-lab-4711", "job-lab-4711-r1", "job-other-4711",
                               "job-lab-8200_3") for ext in ("eml", "html"))
    for path in box.written:
        msg = email.message_from_bytes(path.read_bytes(), policy=policy.default)
        jobid = path.stem.split("-")[2]
        assert msg["Subject"].strip().startswith(f"[slurm-io] job {jobid} ("), msg["Subject"]
        assert "<html" in path.with_suffix(".html").read_text().lower()
