"""PrivateData in the database: real OS users, peer authentication, row-level security.

alice and bob are ordinary users with jobs; carol is in the `slurmio-admin` group. They are
real OS accounts (created here with useradd when missing; a Slurm testbed may have made them
already) and talk to the session's embedded PostgreSQL with psql through its unix socket, so
what is tested is what a user gets: the server learns who they are from the kernel (peer)
and the policies of sql/0004_privacy.sql decide what they see.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.cli import main
from slurm_io.model import Batch, Delta, IdClass, JobId
from slurm_io.store import accounts, migrate, partitions
from slurm_io.store.embedded import find_bindir
from slurm_io.store.writer import write_batch
from tests import needs

pytestmark = [
    pytest.mark.pg,
    needs.root("creates OS users and runs as them: root"),
]

ADMIN_GROUP = "slurmio-admin"
USERS = ("alice", "bob")
ADMIN = "carol"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
T0 = datetime(2024, 4, 2, 12, 0, tzinfo=UTC)  # deltas run from here across midnight
ROWS_PER_JOB = 100  # one every 10 minutes: 16.5 hours
ALICE_JOBS = (5001, 5002, 5003)
BOB_JOBS = (6001, 6002)
OTHER_JOBS = tuple(range(10000, 10200))  # owners with no OS account here
ORPHAN_JOB = 7001  # owner unknown (uid NULL): nobody but admins sees it
UID_ONLY_ROWS = {"alice": 30, "bob": 20}  # `:uid:host` entries not resolved to a job


# -- OS users ------------------------------------------------------------------------------


def _run_admin_tool(cmd: list[str], ok_codes: tuple[int, ...] = (0,)) -> int:
    """Run useradd/groupadd/usermod, retrying while another process holds /etc/passwd."""
    for _ in range(50):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode in ok_codes:
            return proc.returncode
        if "lock" not in proc.stderr.lower():
            raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
        time.sleep(0.2)
    raise RuntimeError(f"{' '.join(cmd)}: /etc/passwd stayed locked")


def _ensure_os_user(name: str, groups: tuple[str, ...] = ()) -> int:
    """Create `name` (useradd -m) unless it exists; add it to `groups`. Idempotent and safe
    against a concurrent creator (useradd exits 9 when the name was taken meanwhile)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        _run_admin_tool(["useradd", "-m", "-s", "/bin/bash", name], ok_codes=(0, 9))
    for group in groups:
        _run_admin_tool(["usermod", "-a", "-G", group, name])
    return pwd.getpwnam(name).pw_uid


@pytest.fixture(scope="module")
def uids() -> dict[str, int]:
    _run_admin_tool(["groupadd", "-f", ADMIN_GROUP])
    found = {name: _ensure_os_user(name) for name in USERS}
    found[ADMIN] = _ensure_os_user(ADMIN, (ADMIN_GROUP,))
    assert ADMIN in (accounts.group_members(ADMIN_GROUP) or [])
    return found


# -- the database --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(pg_dsn: str, _migrated_template: str, uids: dict[str, int]) -> Iterator[str]:
    """A migrated database with roles for alice, bob and carol and jobs of all kinds."""
    name = f"privacy_{os.getpid()}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(_migrated_template)))
    dsn = make_conninfo(pg_dsn, dbname=name)
    with psycopg.connect(dsn) as conn:
        users = [(n, uids[n]) for n in (*USERS, ADMIN)]
        result = accounts.sync_accounts(conn, users, accounts.group_members(ADMIN_GROUP) or [])
        assert ADMIN not in [n for n, _ in result.skipped]
        _load(conn, uids)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE")
    try:
        yield name
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def _jobs(uids: dict[str, int]) -> list[tuple[int, int | None]]:
    return [
        *((j, uids["alice"]) for j in ALICE_JOBS),
        *((j, uids["bob"]) for j in BOB_JOBS),
        *((j, 3000 + j % 20) for j in OTHER_JOBS),
        (ORPHAN_JOB, None),
    ]


def _load(conn: psycopg.Connection, uids: dict[str, int]) -> None:
    """Insert jobs, nodes, deltas and attributed I/O directly, as the superuser."""
    end = T0 + timedelta(minutes=10 * ROWS_PER_JOB)
    partitions.ensure_partitions(conn, T0.timestamp(), end.timestamp(), ahead_days=0)
    jobs = _jobs(uids)
    names = {uid: name for name, uid in uids.items()}
    with conn.transaction():
        # Identity ids 1 and 2, and target 1 (a fresh database).
        conn.execute("INSERT INTO host (name) VALUES ('node01'), ('node02')")
        conn.execute("INSERT INTO fs_target (name, fs, kind, idx) "
                     "VALUES ('scratch-OST0000', 'scratch', 'OST', 0)")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO job (job, jobid, uid, user_name, nodes, start_time, source) "
                "VALUES (%s, %s, %s, %s, %s, %s, 'test')",
                [(j, str(j), uid, names.get(uid), ["node01"], T0) for j, uid in jobs],
            )
            cur.executemany(
                "INSERT INTO job_node (host_id, job, uid, start_time) VALUES (%s, %s, %s, %s)",
                [(h, j, uid, T0) for j, uid in jobs for h in ((1, 2) if j == 5001 else (1,))],
            )
            cur.executemany(
                "INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                "by_target, by_node, timeline, quality) "
                "VALUES (%s, %s, true, %s, '{}', '{}', '{}', '{}', '[]', '{}')",
                [(j, uid, json.dumps({"read_bytes": j})) for j, uid in jobs],
            )
        insert = """
            INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, uid,
                                        host_id, raw_id, read_bytes)
            SELECT t - interval '10 min', t, 1, %(cls)s, j.job, j.uid, 1,
                   concat_ws(':', j.job, j.uid, 'node01'), 4096 * (g + 1)
            FROM unnest(%(jobs)s::bigint[], %(uids)s::int[]) AS j(job, uid),
                 generate_series(0, %(n)s - 1) AS g,
                 LATERAL (SELECT %(t0)s::timestamptz + g * interval '10 min' AS t) AS x
        """
        conn.execute(insert, {"cls": int(IdClass.EXACT), "jobs": [j for j, _ in jobs],
                              "uids": [u for _, u in jobs], "n": ROWS_PER_JOB, "t0": T0})
        for user, n in UID_ONLY_ROWS.items():
            conn.execute(insert, {"cls": int(IdClass.EXACT), "jobs": [None],
                                  "uids": [uids[user]], "n": n, "t0": T0})
        conn.execute(insert, {"cls": int(IdClass.EXACT), "jobs": [None], "uids": [0],
                              "n": 10, "t0": T0})
        conn.execute(
            "INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, "
            "n_problems, n_repaired, n_unattributable, targets) "
            "VALUES ('oss1', 1, %s, 0, 0, 0, 0, 0, '{}')", (T0,))


# -- acting as an OS user ------------------------------------------------------------------


def _socket_dir(pg_dsn: str) -> str:
    return conninfo_to_dict(pg_dsn)["host"]


def psql(os_user: str, pg_dsn: str, database: str, query: str,
         role: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `query` with psql as OS user `os_user`: peer auth over the embedded socket.

    Without `role` libpq logs in as the role named like the OS account, as `jobio` would.
    """
    params: dict[str, Any] = {"host": _socket_dir(pg_dsn), "port": "5432", "dbname": database}
    if role is not None:
        params["user"] = role
    home = pwd.getpwnam(os_user).pw_dir
    return subprocess.run(
        [RUNUSER, "-u", os_user, "--", str(find_bindir() / "psql"), "-X", "-A", "-t", "-q",
         "-v", "ON_ERROR_STOP=1", "-d", make_conninfo("", **params), "-c", query],
        capture_output=True, text=True, cwd="/", timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": home, "PGCONNECT_TIMEOUT": "10"},
    )


def query_as(os_user: str, pg_dsn: str, database: str, query: str) -> str:
    proc = psql(os_user, pg_dsn, database, query)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


COUNTS = (
    "SELECT (SELECT count(*) FROM job {w}), (SELECT count(*) FROM job_node {w}), "
    "(SELECT count(*) FROM job_io {w}), (SELECT count(*) FROM jobstats_delta {w})"
)


def _counts_as(os_user: str, pg_dsn: str, database: str, where: str = "") -> tuple[int, ...]:
    out = query_as(os_user, pg_dsn, database, COUNTS.format(w=where))
    return tuple(int(v) for v in out.split("|"))


def _expected(pg_dsn: str, database: str, uid: int) -> tuple[int, ...]:
    """What `uid` may see, computed as the superuser without the policies' help."""
    with psycopg.connect(make_conninfo(pg_dsn, dbname=database)) as conn:
        row = conn.execute(
            """
            WITH mine AS (SELECT job FROM job WHERE uid = %(u)s)
            SELECT (SELECT count(*) FROM mine),
                   (SELECT count(*) FROM job_node WHERE job IN (SELECT job FROM mine)),
                   (SELECT count(*) FROM job_io WHERE job IN (SELECT job FROM mine)),
                   (SELECT count(*) FROM jobstats_delta
                    WHERE uid = %(u)s OR job IN (SELECT job FROM mine))
            """,
            {"u": uid},
        ).fetchone()
    assert row is not None
    return tuple(row)


def _totals(pg_dsn: str, database: str) -> tuple[int, ...]:
    with psycopg.connect(make_conninfo(pg_dsn, dbname=database)) as conn:
        row = conn.execute(COUNTS.format(w="")).fetchone()
    assert row is not None
    return tuple(row)


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


# -- the collector role ------------------------------------------------------------------------


def _as_role(dsn: str, role: str) -> psycopg.Connection:
    """A connection acting as `role` (SET ROLE from the superuser: no OS account needed)."""
    conn = psycopg.connect(dsn)
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    conn.commit()
    return conn


def _ensure_role(dsn: str, role: str, *attrs: str, member_of: str | None = None) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} {}").format(
                sql.Identifier(role), sql.SQL(" ".join(attrs))))
        if member_of:
            conn.execute(sql.SQL("GRANT {} TO {}").format(
                sql.Identifier(member_of), sql.Identifier(role)))


def test_a_collector_role_writes_batches_and_jobs_without_ddl_rights(
    pg_dsn: str, db: str
) -> None:
    dsn = make_conninfo(pg_dsn, dbname=db)
    # BYPASSRLS: PostgreSQL refuses COPY into a table with RLS to roles subject to it.
    _ensure_role(pg_dsn, "privtest_collector", "LOGIN", "BYPASSRLS",
                 member_of="jobio_collector")
    _ensure_role(pg_dsn, "privtest_collector_rls", "LOGIN", member_of="jobio_collector")
    t1 = datetime(2024, 6, 1, 10, 0, tzinfo=UTC).timestamp()
    delta = Delta("scratch-OST0001", "8001:4000:node03", "8001:4000:node03", t1 - 120, t1,
                  None, {"write": 3}, {}, 0)
    batch = Batch("oss9", 1, t1, ("scratch-OST0001",),
                  [(delta, JobId(IdClass.EXACT, 8001, 4000, "node03", None, False))], 1, 0, 0, 0)
    with _as_role(dsn, "privtest_collector") as conn:
        # No CREATE on the schema: partitions come from the owner's SECURITY DEFINER function,
        # which the writer's partition code calls by itself when it does not own the table.
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE sneaky (x int)")
        conn.rollback()
        assert partitions.ensure_days(conn, [datetime(2024, 6, 1, tzinfo=UTC).date()]) == [
            "jobstats_delta_p20240601"]
        conn.commit()
        partitions.forget(conn)
        assert conn.execute(
            "SELECT jobio_ensure_partitions('2024-06-01', '2024-06-03')").fetchone() == (2,)
        conn.commit()
        assert write_batch(conn, batch) is True
        assert write_batch(conn, batch) is False  # exactly once, as for the owner
        with conn.transaction():
            conn.execute(
                "INSERT INTO job (job, jobid, uid, source) VALUES (8001, '8001', 4000, 'hook') "
                "ON CONFLICT (job) DO UPDATE SET state = 'COMPLETED'")
            conn.execute(
                "INSERT INTO job (job, jobid, uid, source) VALUES (8001, '8001', 4000, 'sync') "
                "ON CONFLICT (job) DO UPDATE SET state = 'COMPLETED'")
        # Collectors see every row (attribution needs them) ...
        assert conn.execute("SELECT count(*) FROM job").fetchone() == (
            len(_jobs({"alice": 0, "bob": 0})) + 1,)
        # ... but cannot change the schema, the policies or the uid mapping.
        for statement in ("DROP TABLE jobstats_delta_p20240601",
                          "ALTER TABLE job DISABLE ROW LEVEL SECURITY",
                          "SELECT * FROM jobio_account",
                          "DELETE FROM jobstats_delta"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
    assert query_as("alice", pg_dsn, db, "SELECT count(*) FROM job WHERE job_raw = 8001") == "0"
    with _as_role(dsn, "privtest_collector_rls") as conn:
        with pytest.raises(errors.FeatureNotSupported, match="row-level security"):
            write_batch(conn, batch._replace(seq=2))
        conn.rollback()
        # Its INSERT-based writes work through the collector policy.
        conn.execute("INSERT INTO job (job, jobid, uid, source) VALUES (8002, '8002', 4000, 'x')")
        conn.commit()


def test_a_non_superuser_owner_can_migrate_and_keeps_seeing_all_rows_despite_force(
    pg_dsn: str, uids: dict[str, int]
) -> None:
    """FORCE ROW LEVEL SECURITY must not lock out a schema owner that is no superuser (a
    site server's `slurmio` role with CREATEROLE): the migration makes it a collector."""
    owner, name = "privtest_owner", f"privacy_owned_{os.getpid()}"
    _ensure_role(pg_dsn, owner, "LOGIN", "CREATEROLE")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(owner)))
    try:
        dsn = make_conninfo(pg_dsn, dbname=name)
        with _as_role(dsn, owner) as conn:
            assert "0004_privacy" in migrate.upgrade(conn)
            result = accounts.sync_accounts(conn, [("alice", uids["alice"])], [])
            assert result.mapped == ["alice"]
            with conn.transaction():
                conn.execute("INSERT INTO job (job, jobid, uid, source) VALUES "
                             "(1, '1', %s, 't'), (2, '2', %s, 't')",
                             (uids["alice"], uids["bob"]))
            assert conn.execute("SELECT count(*) FROM job").fetchone() == (2,)
            conn.commit()
            # The owner can still run a collector: partition DDL, COPY, ingest_batch.
            t1 = datetime(2024, 7, 1, 10, 0, tzinfo=UTC).timestamp()
            delta = Delta("fs-OST0000", "1:1:n1", "1:1:n1", t1 - 60, t1, None,
                          {"write": 1}, {}, 0)
            jid = JobId(IdClass.EXACT, 1, uids["alice"], "n1", None, False)
            assert write_batch(conn, Batch("oss1", 1, t1, ("fs-OST0000",), [(delta, jid)],
                                           1, 0, 0, 0))
            assert conn.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (1,)
            assert conn.execute("SELECT relforcerowsecurity FROM pg_class "
                                "WHERE relname = 'job'").fetchone() == (True,)
        assert query_as("alice", pg_dsn, name, "SELECT job_raw FROM job") == "1"
        assert query_as("alice", pg_dsn, name, "SELECT job FROM jobstats_delta") == "1"
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


# -- managing the roles --------------------------------------------------------------------------


def test_sync_accounts_is_idempotent_follows_uid_and_group_changes_and_refuses_names(
    db_dsn: str
) -> None:
    with psycopg.connect(db_dsn) as conn:
        first = accounts.sync_accounts(conn, [("privtest_dave", 4001)], ["privtest_dave"])
        assert first.mapped == ["privtest_dave"]
        assert first.admins_granted == ["privtest_dave"]
        again = accounts.sync_accounts(conn, [("privtest_dave", 4001)], ["privtest_dave"])
        assert (again.created, again.added, again.mapped, again.admins_granted) == (
            [], [], [], [])
        moved = accounts.sync_accounts(conn, [("privtest_dave", 4002)], [])
        assert moved.mapped == ["privtest_dave"]
        assert moved.admins_revoked == ["privtest_dave"]
        assert conn.execute("SELECT jobio_current_uid('privtest_dave'), "
                            "pg_has_role('privtest_dave', 'jobio_admin', 'MEMBER'), "
                            "pg_has_role('privtest_dave', 'jobio_user', 'MEMBER')").fetchone() == (
            4002, False, True)
        refused = accounts.sync_accounts(
            conn,
            [("slurmio", 4003), ("jobio_admin", 4004), ("pg_x", 4005), ("a b", 4006),
             ("privtest_erin", -1)],
            ["privtest_nobody"],
        )
        reasons = dict(refused.skipped)
        # slurm-io's own superuser/owner: refused by its name first (issue 18)
        assert reasons["slurmio"] == accounts.PROJECT_ROLE_REASON
        assert reasons["jobio_admin"] == reasons["pg_x"] == "reserved role name"
        assert reasons["a b"] == "not a valid account name"
        assert reasons["privtest_erin"].startswith("bad uid")
        assert reasons["privtest_nobody"].startswith("admin without a role")
        assert conn.execute("SELECT count(*) FROM jobio_account").fetchone() == (1,)


def test_jobio_db_users_creates_roles_and_makes_the_admin_group_admins(
    db_dsn: str, uids: dict[str, int], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[privacy]\nadmin_group = "slurmio-admin"\n')
    runner = CliRunner()
    base = ["--config", str(config), "--dsn", db_dsn, "db", "users"]
    result = runner.invoke(main, [*base, "alice", "no-such-user-xyz"])
    assert result.exit_code == 1
    assert "no OS account 'no-such-user-xyz'" in result.output
    result = runner.invoke(main, [*base, "alice", "bob"])
    assert result.exit_code == 0, result.output
    # carol is not named but comes along as a member of the admin group. (Role membership
    # is global to the cluster, so another database's sync may have granted it already.)
    with psycopg.connect(db_dsn) as conn:
        rows = conn.execute(
            "SELECT rolname::text, uid, pg_has_role(rolname, 'jobio_admin', 'MEMBER') "
            "FROM jobio_account ORDER BY 1").fetchall()
    assert rows == [("alice", uids["alice"], False), ("bob", uids["bob"], False),
                    ("carol", uids["carol"], True)]
    result = runner.invoke(main, [*base, "--all-passwd"])
    assert result.exit_code == 0, result.output
    with psycopg.connect(db_dsn) as conn:
        mapped = {r[0] for r in conn.execute("SELECT rolname::text FROM jobio_account")}
    assert {"alice", "bob", "carol"} <= mapped
    assert "nobody" not in mapped and "root" not in mapped
    result = runner.invoke(main, [*base, "--all-passwd", "alice"])
    assert result.exit_code == 2
