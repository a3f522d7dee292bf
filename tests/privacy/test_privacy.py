"""PrivateData in the database: real OS users, peer authentication, row-level security.

alice and bob are ordinary users with jobs; carol is in the `slurmio-admin` group. They are
real OS accounts (created here with useradd when missing; a Slurm testbed may have made them
already) and talk to the session's embedded PostgreSQL with psql through its unix socket, so
what is tested is what a user gets: the server learns who they are from the kernel (peer)
and the policies of sql/0004_privacy.sql decide what they see.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from slurm_io.store import partitions
from tests import needs
from tests.privacy.privacy_db import (
    ADMIN,
    ALICE_JOBS,
    BOB_JOBS,
    ORPHAN_JOB,
    OTHER_JOBS,
    ROWS_PER_JOB,
    UID_ONLY_ROWS,
    USERS,
    _counts_as,
    _expected,
    _totals,
    psql,
    query_as,
)

pytestmark = [
    pytest.mark.pg,
    needs.root("creates OS users and runs as them: root"),
]


# -- what users see ------------------------------------------------------------------------


@pytest.mark.parametrize("user", USERS)
def test_a_user_sees_exactly_their_own_jobs_nodes_io_and_deltas(
    pg_dsn: str, db: str, uids: dict[str, int], user: str
) -> None:
    own_jobs = ALICE_JOBS if user == "alice" else BOB_JOBS
    nodes = len(own_jobs) + (1 if user == "alice" else 0)  # 5001 ran on two nodes
    deltas = len(own_jobs) * ROWS_PER_JOB + UID_ONLY_ROWS[user]
    assert _expected(pg_dsn, db, uids[user]) == (len(own_jobs), nodes, len(own_jobs), deltas)
    assert _counts_as(user, pg_dsn, db) == (len(own_jobs), nodes, len(own_jobs), deltas)
    jobs = query_as(user, pg_dsn, db, "SELECT string_agg(job::text, ',' ORDER BY job) FROM job")
    assert jobs == ",".join(map(str, own_jobs))
    uids_seen = query_as(user, pg_dsn, db, "SELECT DISTINCT uid FROM jobstats_delta")
    assert uids_seen == str(uids[user])


def test_another_users_job_stays_invisible_even_when_asked_for_by_id(
    pg_dsn: str, db: str
) -> None:
    bob_job = BOB_JOBS[0]
    assert _counts_as("alice", pg_dsn, db, f"WHERE job = {bob_job}") == (0, 0, 0, 0)
    totals = query_as(
        "alice", pg_dsn, db,
        f"SELECT count(*), sum(read_bytes) FROM jobstats_delta WHERE job = {bob_job}",
    )
    assert totals == "0|"
    assert query_as("alice", pg_dsn, db, f"SELECT totals FROM job_io WHERE job = {bob_job}") == ""
    # Nor through COPY, a join, or the orphan job (unknown owner).
    copied = query_as("alice", pg_dsn, db, f"COPY (SELECT * FROM jobstats_delta WHERE job IN "
                                           f"({bob_job}, {ORPHAN_JOB})) TO STDOUT")
    assert copied == ""
    joined = query_as("alice", pg_dsn, db, "SELECT count(*) FROM job_node n "
                                           f"JOIN job j USING (job) WHERE j.job = {bob_job}")
    assert joined == "0"
    # Bob does see it.
    assert _counts_as("bob", pg_dsn, db, f"WHERE job = {bob_job}") == (1, 1, 1, ROWS_PER_JOB)


def test_the_admin_group_sees_everything(pg_dsn: str, db: str) -> None:
    totals = _totals(pg_dsn, db)
    assert totals[0] == len(ALICE_JOBS) + len(BOB_JOBS) + len(OTHER_JOBS) + 1
    assert _counts_as(ADMIN, pg_dsn, db) == totals
    assert int(query_as(ADMIN, pg_dsn, db, "SELECT count(*) FROM ingest_batch")) >= 1
    assert query_as(ADMIN, pg_dsn, db,
                    f"SELECT count(*) FROM jobstats_delta WHERE job = {ORPHAN_JOB}") == "100"


def test_dimensions_are_readable_by_users_and_collector_bookkeeping_is_not(
    pg_dsn: str, db: str
) -> None:
    assert query_as("alice", pg_dsn, db, "SELECT count(*) FROM host") == "2"
    assert query_as("alice", pg_dsn, db, "SELECT name FROM fs_target") == "scratch-OST0000"
    for table in ("ingest_batch", "jobio_account"):
        proc = psql("alice", pg_dsn, db, f"SELECT count(*) FROM {table}")
        assert proc.returncode != 0
        assert f"permission denied for table {table}" in proc.stderr


# -- what users cannot do ------------------------------------------------------------------


DENIED = [
    ("INSERT INTO job (job, jobid, uid, source) VALUES (1, '1', {uid}, 'x')",
     "permission denied for table job"),
    ("UPDATE job SET uid = {uid}", "permission denied for table job"),
    ("DELETE FROM jobstats_delta", "permission denied for table jobstats_delta"),
    ("INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, by_target, by_node,"
     " timeline, quality) VALUES (5001, {uid}, true, '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', "
     "'[]', '{{}}')", "permission denied for table job_io"),
    ("TRUNCATE job_node", "permission denied for table job_node"),
    ("INSERT INTO jobio_account VALUES ('alice', 0)", "permission denied for table jobio_account"),
    ("ALTER TABLE job DISABLE ROW LEVEL SECURITY", "must be owner of table job"),
    ("DROP POLICY jobio_user_own ON jobstats_delta", "must be owner of"),
    ("CREATE TABLE mine (a int)", "permission denied for schema public"),
    ("SET ROLE jobio_admin", 'permission denied to set role "jobio_admin"'),
    ("SET ROLE bob", 'permission denied to set role "bob"'),
    ("GRANT jobio_admin TO alice", "must have admin option on role"),
    ("SELECT count(*) FROM jobstats_delta_p20240402",
     "permission denied for table jobstats_delta_p20240402"),
    ("SELECT jobio_ensure_partitions('2030-01-01', '2030-01-02')",
     "permission denied for function jobio_ensure_partitions"),
]


@pytest.mark.parametrize(("statement", "message"), DENIED, ids=[d[0][:40] for d in DENIED])
def test_a_user_cannot_write_or_widen_their_view(
    pg_dsn: str, db: str, uids: dict[str, int], statement: str, message: str
) -> None:
    proc = psql("alice", pg_dsn, db, statement.format(uid=uids["alice"]))
    assert proc.returncode != 0, proc.stdout
    assert message in proc.stderr


def test_the_admin_reads_but_cannot_write(pg_dsn: str, db: str) -> None:
    for statement in ("UPDATE job SET name = 'x'", "DELETE FROM job_io",
                      "INSERT INTO jobio_account VALUES ('carol', 0)"):
        proc = psql(ADMIN, pg_dsn, db, statement)
        assert proc.returncode != 0
        assert "permission denied" in proc.stderr


@pytest.mark.parametrize("role", ["slurmio", "bob", "carol", "jobio_admin"])
def test_a_user_cannot_log_in_as_anyone_else(pg_dsn: str, db: str, role: str) -> None:
    proc = psql("alice", pg_dsn, db, "SELECT current_user", role=role)
    assert proc.returncode != 0, proc.stdout
    assert f'Peer authentication failed for user "{role}"' in proc.stderr
    assert query_as("alice", pg_dsn, db, "SELECT current_user") == "alice"


# -- rows of partitions made later, and the plan ----------------------------------------------


def test_partitions_made_at_run_time_are_covered_by_the_parents_policies(
    pg_dsn: str, db: str, uids: dict[str, int]
) -> None:
    day = datetime(2024, 5, 1, 6, 0, tzinfo=UTC)
    with psycopg.connect(make_conninfo(pg_dsn, dbname=db)) as conn:
        created = partitions.ensure_partitions(conn, day.timestamp(), day.timestamp(), 0)
        assert created == ["jobstats_delta_p20240501"]
        with conn.transaction():
            for job, uid in ((ALICE_JOBS[0], uids["alice"]), (BOB_JOBS[0], uids["bob"])):
                conn.execute(
                    "INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, "
                    "uid, raw_id) VALUES (%s, %s, 1, 0, %s, %s, 'x')",
                    (day - timedelta(minutes=2), day, job, uid),
                )
    may_day = "ts_end >= '2024-05-01' AND ts_end < '2024-05-02'"
    assert query_as("alice", pg_dsn, db, f"SELECT job FROM jobstats_delta WHERE {may_day}") == (
        str(ALICE_JOBS[0])
    )
    assert query_as(ADMIN, pg_dsn, db, f"SELECT count(*) FROM jobstats_delta WHERE {may_day}") == (
        "2"
    )
    proc = psql("alice", pg_dsn, db, "SELECT * FROM jobstats_delta_p20240501")
    assert "permission denied for table jobstats_delta_p20240501" in proc.stderr


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


@pytest.mark.parametrize("time_bounded", [False, True])
def test_a_users_per_job_query_uses_the_job_index(
    pg_dsn: str, db: str, time_bounded: bool
) -> None:
    job = ALICE_JOBS[1]
    where = f"job = {job}"
    if time_bounded:  # `jobio show` knows the job's start and end
        where += " AND ts_end > '2024-04-02 12:00+00' AND ts_end <= '2024-04-02 20:00+00'"
    query = f"SELECT ts_end, read_bytes FROM jobstats_delta WHERE {where}"
    out = query_as("alice", pg_dsn, db, f"EXPLAIN (FORMAT JSON) {query}")
    nodes = list(_plan_nodes(json.loads(out)[0]["Plan"]))
    scans = [n for n in nodes if n.get("Relation Name", "").startswith("jobstats_delta_p")]
    assert scans, out
    if time_bounded:
        assert len(scans) == 1, out  # partition pruning still works under the policy
    for scan in scans:
        assert scan["Node Type"] in ("Index Scan", "Bitmap Heap Scan"), out
    index_scans = [n for n in nodes if n["Node Type"] in ("Index Scan", "Bitmap Index Scan")
                   and n.get("Index Name", "").startswith("jobstats_delta_p")]
    assert len(index_scans) == len(scans), out
    for scan in index_scans:
        assert scan["Index Name"].endswith("_job_ts_end_idx"), out
        assert f"(job = {job})" in scan["Index Cond"], out
    # The policy costs one uid lookup and one hashed list of the user's jobs, not a per-row
    # subquery.
    subplans = [n for n in nodes if n.get("Subplan Name")]
    assert all("InitPlan" in n["Subplan Name"] or "SubPlan" in n["Subplan Name"]
               for n in subplans)
    assert "hashed SubPlan" in json.dumps(scans), out
    assert query_as("alice", pg_dsn, db, f"SELECT count(*) FROM ({query}) q") == (
        str(ROWS_PER_JOB) if not time_bounded else "48"
    )
