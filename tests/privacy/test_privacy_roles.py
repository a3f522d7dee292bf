"""The database roles on real OS users: a collector role writes batches and jobs without
DDL rights, a non-superuser owner migrates, and `jobio db users` / `sync_accounts` make
and follow the roles (PostgreSQL peer authentication, as in test_privacy.py)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from slurm_io.cli import main
from slurm_io.model import Batch, Delta, IdClass, JobId
from slurm_io.store import accounts, migrate, partitions
from slurm_io.store.writer import write_batch
from tests import needs
from tests.privacy.privacy_db import _jobs, query_as

pytestmark = [
    pytest.mark.pg,
    needs.root("creates OS users and runs as them: root"),
]


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
