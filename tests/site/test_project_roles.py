"""Issue 18, finding 5: slurm-io's own roles never become a user's role.

`jobio db users slurmio` used to grant jobio_user to the owner role and hand it to
jobio_service, so that whoever held the OS account `slurmio` read every job through the read
service; the same for `slurm_hook` and any other role of the project. Here real OS accounts
named like those roles (created with useradd, removed after) meet the installed `jobio`: the
admin's `db users` refuses them in one line, and through `jobio serve` they read nothing of
another user. A site-named hook role (`hookacct`, a jobio_collector member) that an older
`db users` already granted to the service is refused by the service too, by what the role
holds rather than by its name.
"""

from __future__ import annotations

import pwd
import subprocess
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from slurm_io.store import accounts
from tests.privacy.privacy_db import _run_admin_tool
from tests.site.conftest import Site, run_as
from tests.site.test_service import Service, started_service

pytestmark = [pytest.mark.pg]
PROJECT_NAMES = ("slurmio", "slurm_hook")
SITE_HOOK = "hookacct"  # a hook role of a site's own naming
ACCOUNTS = (*PROJECT_NAMES, SITE_HOOK)


@pytest.fixture(scope="module")
def service(site: Site) -> Iterator[Service]:
    """`jobio serve` as in tests/site/test_service.py, in a directory of its own."""
    with started_service(site, "service-roles") as started:
        yield started


@pytest.fixture(scope="module")
def hostile(site: Site) -> Iterator[dict[str, int]]:
    """OS accounts named like the project's roles (and a site's hook role), and the hook
    roles as docs/deploy.md creates them (`... LOGIN IN ROLE jobio_collector`)."""
    made: list[str] = []
    for name in ACCOUNTS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            _run_admin_tool(["useradd", "-M", "-s", "/bin/bash", name], ok_codes=(0,))
            made.append(name)
    roles: list[str] = []
    with psycopg.connect(site.superuser_dsn, autocommit=True) as conn:
        for role in ("slurm_hook", SITE_HOOK):
            if conn.execute("SELECT FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                continue
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE jobio_collector").format(
                sql.Identifier(role)))
            roles.append(role)
    try:
        yield {name: pwd.getpwnam(name).pw_uid for name in ACCOUNTS}
    finally:
        with psycopg.connect(site.superuser_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM jobio_account WHERE rolname = ANY(%s)", (list(ACCOUNTS),))
            for role in roles:
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        for name in made:
            _run_admin_tool(["userdel", name])


def _db_users(site: Site, name: str) -> subprocess.CompletedProcess[str]:
    cfg = site.config("roles-admin", '[privacy]\nadmin_group = "slurmio-admin"\n')
    return run_as(None, site.jobio, ["--dsn", site.superuser_dsn, "db", "users", name],
                  config=cfg)


def _user_role_state(site: Site, name: str) -> tuple[bool, bool, bool]:
    """(mapped in jobio_account, member of jobio_user, the service may become it)."""
    with psycopg.connect(site.superuser_dsn) as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT FROM jobio_account WHERE rolname = %s), "
            "coalesce(pg_has_role(to_regrole(%s), 'jobio_user', 'MEMBER'), false), "
            "coalesce(pg_has_role('jobio_service', to_regrole(%s), 'MEMBER'), false)",
            (name, name, name)).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize("name", [*PROJECT_NAMES, SITE_HOOK])
def test_db_users_refuses_the_projects_own_roles_in_one_line(site: Site, hostile, name):
    proc = _db_users(site, name)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"skipped {name}: ") and "never a user role" in lines[0]
    mapped, user, served = _user_role_state(site, name)
    assert not mapped and not served
    assert not user or name == "slurmio"  # the session server's superuser is in every role


@pytest.mark.parametrize("name", PROJECT_NAMES)
def test_through_the_service_an_account_named_like_a_project_role_reads_nothing(
        service: Service, hostile, name):
    proc = service.run(name, "8301")
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "is a role of slurm-io itself" in lines[0] and "(HTTP 403)" in lines[0], lines[0]


def test_the_service_refuses_a_hook_role_an_older_db_users_granted(
        service: Service, hostile):
    """What `jobio db users hookacct` did before issue 18, done by hand: the service must not
    act as that role even so (a site upgrading keeps such grants until it revokes them)."""
    site = service.site
    with psycopg.connect(site.superuser_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT jobio_user TO {}").format(sql.Identifier(SITE_HOOK)))
        conn.execute(sql.SQL("GRANT {} TO jobio_service").format(sql.Identifier(SITE_HOOK)))
        conn.execute("INSERT INTO jobio_account (rolname, uid) VALUES (%s, %s) "
                     "ON CONFLICT (rolname) DO UPDATE SET uid = EXCLUDED.uid",
                     (SITE_HOOK, hostile[SITE_HOOK]))
    try:
        proc = service.run(SITE_HOOK, "8301")
        assert proc.returncode == 1, proc.stdout
        assert proc.stdout == "" and "Traceback" not in proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert "holds more than a user's rights" in lines[0] and "(HTTP 403)" in lines[0]
        mine = service.run(SITE_HOOK, "show", "-u", "bob", "-S", "2024-04-03T00:00", "-E",
                           "2024-04-04T00:00", "--json")
        assert mine.returncode == 1 and "8301" not in mine.stdout
    finally:
        with psycopg.connect(site.superuser_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("REVOKE {} FROM jobio_service").format(
                sql.Identifier(SITE_HOOK)))
            conn.execute(sql.SQL("REVOKE jobio_user FROM {}").format(
                sql.Identifier(SITE_HOOK)))
            conn.execute("DELETE FROM jobio_account WHERE rolname = %s", (SITE_HOOK,))


def test_alice_still_reads_her_own_job_through_the_service(service: Service,
                                                            hostile) -> None:
    proc = service.run("alice", "8101")
    assert proc.returncode == 0, proc.stderr
    assert "8101" in proc.stdout


def test_roles_that_hold_more_than_a_users_rights_are_refused_by_sync(db_dsn: str) -> None:
    """By what the role holds, whatever its name: creating roles, collecting, serving."""
    made = {"privtest_creator": "LOGIN CREATEROLE", "privtest_coll": "LOGIN",
            "privtest_svc": "LOGIN"}
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for role, attrs in made.items():
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("CREATE ROLE {} " + attrs).format(sql.Identifier(role)))
        conn.execute("GRANT jobio_collector TO privtest_coll")
        conn.execute("GRANT jobio_service TO privtest_svc")
    try:
        with psycopg.connect(db_dsn) as conn:
            result = accounts.sync_accounts(
                conn, [(r, 4100 + i) for i, r in enumerate(made)] + [("privtest_fine", 4199)],
                [])
            assert dict(result.skipped) == {r: accounts.PRIVILEGED_ROLE_REASON for r in made}
            assert result.created == ["privtest_fine"]
            assert conn.execute("SELECT array_agg(rolname::text ORDER BY 1) FROM jobio_account"
                                ).fetchone() == (["privtest_fine"],)
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            for role in [*made, "privtest_fine"]:
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_is_project_role_names_the_projects_roles_only() -> None:
    for name in ("slurmio", "SlurmIO", "slurm_hook", "postgres", "jobio_service", "jobio-svc",
                 "pg_monitor", "public"):
        assert accounts.is_project_role(name), name
    for name in ("alice", "slurm", "slurmio2", "hook", "jobiouser"):
        assert not accounts.is_project_role(name), name
    assert accounts.refusal("slurm_hook") == accounts.PROJECT_ROLE_REASON
