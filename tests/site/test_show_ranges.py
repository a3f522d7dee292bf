"""How sure a figure is, as alice reads it with the installed `jobio` (her own OS account).

Two jobs of alice ran together on node01; each wrote by its own id, and one read lost both
ids (`:uid:host`): either job may have written it. `jobio attribute` (root) stores the
figures and their ranges (sql/0022); alice's `jobio show` (human, `-P -o`, `--json`) shows
each job's range exactly as root reads it, and the mail's text part carries it too.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from slurm_io.model import IdClass
from tests.site.conftest import T1, Site, run_as

pytestmark = [pytest.mark.pg]
GiB = 1 << 30
START = T1 + timedelta(days=3)  # apart from the other site tests' jobs and windows
JOBS = (8501, 8502)
OWN = {8501: 3 * GiB, 8502: 1 * GiB}  # written per 10 min by the job's own id
BLIND = 4 * GiB  # one read of 10 min without either id


@pytest.fixture(scope="module")
def shared(site: Site, uids: dict[str, int]) -> Site:
    alice = uids["alice"]
    end = START + timedelta(hours=1)
    with psycopg.connect(site.superuser_dsn) as conn, conn.transaction():
        from slurm_io.store import partitions

        partitions.ensure_partitions(conn, START.timestamp(), end.timestamp() + 86400,
                                     ahead_days=0)
        (host,) = conn.execute("SELECT host_id FROM host WHERE name = 'node01'").fetchone()
        for job in JOBS:
            conn.execute(
                "INSERT INTO job (job, jobid, uid, user_name, account, partition, name, nodes, "
                "start_time, end_time, state, exit_code, work_dir, source) VALUES "
                "(%s, %s, %s, 'alice', 'proj', 'batch', %s, '{node01}', %s, %s, 'COMPLETED', "
                "'0:0', '/home/alice/run', 'test')",
                (job, str(job), alice, f"farm-{job}", START, end))
            conn.execute("INSERT INTO job_node (host_id, job, uid, start_time, end_time) "
                         "VALUES (%s, %s, %s, %s, %s)", (host, job, alice, START, end))
        for k in range(6):
            t = START + timedelta(minutes=10 * (k + 1))
            rows = ([(None, int(IdClass.JOB_MISSING), f":{alice}:node01", BLIND)] if k == 3
                    else [(j, int(IdClass.EXACT), f"{j}:{alice}:node01", OWN[j])
                          for j in JOBS])
            for job, cls, raw, wb in rows:
                conn.execute(
                    "INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, "
                    "uid, host_id, raw_id, write_bytes, write_bytes_samples) VALUES "
                    "(%s, %s, 1, %s, %s, %s, %s, %s, %s, %s)",
                    (t - timedelta(minutes=10), t, cls, job, alice, host, raw, wb,
                     wb // (4 << 20)))
        conn.execute(
            "INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, "
            "n_problems, n_repaired, n_unattributable, targets) "
            "VALUES ('oss1', 3, %s, 0, 0, 0, 0, 0, '{}')", (end + timedelta(days=1),))
    done = run_as(None, site.jobio, ["--dsn", site.superuser_dsn, "attribute", "--since",
                                     START.strftime("%Y-%m-%dT%H:%M:%S")])
    assert done.returncode == 0, done.stderr
    return site


@pytest.fixture(scope="module")
def alice_config(site: Site) -> Path:
    return site.config("ranges", f'dsn = "{site.user_dsn}"\n')


def test_alice_sees_the_range_of_each_of_her_jobs_as_root_stored_it(
        shared: Site, alice_config: Path) -> None:
    fmt = "JobID,WriteBytes,WriteBytesLeast,WriteBytesMost,MetaOpsLeast"
    mine = run_as("alice", shared.jobio, ["show", *map(str, JOBS), "-P", "-o", fmt],
                  config=alice_config)
    assert mine.returncode == 0, mine.stderr
    root = run_as(None, shared.jobio, ["--dsn", shared.superuser_dsn, "show",
                                       *map(str, JOBS), "-P", "-o", fmt])
    assert mine.stdout == root.stdout
    rows = [ln.split("|") for ln in mine.stdout.splitlines()[1:]]
    got = {int(r[0]): tuple(int(x) for x in r[1:4]) for r in rows}
    for job in JOBS:
        figure, least, most = got[job]
        # its own five reads for sure, at most the blind read too; the figure in between
        assert (least, most) == (5 * OWN[job], 5 * OWN[job] + BLIND)
        assert least < figure < most
    assert sum(got[j][0] for j in JOBS) == 5 * (OWN[8501] + OWN[8502]) + BLIND
    assert [r[4] for r in rows] == ["0", "0"]


def test_the_human_view_json_and_mail_carry_the_range(shared: Site, alice_config: Path) -> None:
    text = run_as("alice", shared.jobio, ["show", "8502"], config=alice_config)
    assert text.returncode == 0, text.stderr
    assert "  written " in text.stdout and "GiB (5.0–9.0)" in text.stdout
    assert "(least–most): what the job can have done" in text.stdout
    doc = json.loads(run_as("alice", shared.jobio, ["show", "8502", "--json"],
                            config=alice_config).stdout)
    assert doc[0]["ranges"]["write_bytes"] == {"least": 5 * GiB, "most": 9 * GiB}
    mail = run_as("alice", shared.jobio, ["report", "8502"], config=alice_config)
    assert mail.returncode == 0, mail.stderr
    assert "GiB (5.0–9.0)" in mail.stdout


def test_through_the_service_alice_gets_the_same_ranges(shared: Site) -> None:
    """`jobio serve`'s answer carries the ranges (`"ranges"`), and the client renders them
    as the database's own reader does."""
    from tests.site.test_service import started_service

    root = ["--dsn", shared.superuser_dsn]
    with started_service(shared, "ranges-service") as service:
        for args in (["show", "8502"], ["show", "8501", "8502", "--json"],
                     ["show", "8501", "-P", "-o", "JobID,WriteBytesLeast,WriteBytesMost"]):
            mine = service.run("alice", *args)
            assert mine.returncode == 0, mine.stderr
            assert mine.stdout == run_as(None, shared.jobio, [*root, *args]).stdout
        doc = json.loads(service.run("alice", "show", "8501", "--json").stdout)
    assert doc[0]["ranges"]["write_bytes"] == {"least": 15 * GiB, "most": 19 * GiB}
