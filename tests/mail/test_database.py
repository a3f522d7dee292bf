"""The mail on a real PostgreSQL: MailBuilder.build on simulated jobs, `jobio mail off|on`
with row-level security, `jobio report`."""

from __future__ import annotations

import email
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from email import policy

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.cli import main
from slurm_io.config import Config
from slurm_io.mail import preferences
from slurm_io.mail.builder import MailBuilder, html_part, text_part
from slurm_io.mail.recipients import SlurmMail
from slurm_io.notify.interfaces import MailBuilder as MailBuilderProtocol
from slurm_io.store.embedded import find_bindir
from tests import needs
from tests.mail.conftest import NOW

pytestmark = pytest.mark.pg


def _builder(lookup=lambda job: None, **cfg) -> MailBuilder:
    return MailBuilder(Config(**cfg), lookup=lookup, clock=lambda: NOW)


def _raw(conn, key: int) -> int:
    """The raw id (what users and Slurm call the job) of row `key` (sql/0020)."""
    return conn.execute("SELECT job_raw FROM job WHERE job = %s", (key,)).fetchone()[0]


def _user(conn, job: int) -> tuple[str, int]:
    return conn.execute("SELECT user_name, uid FROM job WHERE job = %s", (job,)).fetchone()


@pytest.fixture(autouse=True)
def _no_site_config(monkeypatch, tmp_path):
    monkeypatch.delenv("SLURM_IO_DSN", raising=False)
    monkeypatch.setenv("SLURM_IO_CONFIG", str(tmp_path / "absent.toml"))
    (tmp_path / "absent.toml").write_text("")


# -- MailBuilder.build -------------------------------------------------------------------------
def test_build_is_the_reporters_protocol_and_mails_a_real_job(sim_jobs):
    b = _builder(mail_policy="all", mail_domain="example.org")
    assert isinstance(b, MailBuilderProtocol)
    with psycopg.connect(sim_jobs.dsn) as conn:
        user, _ = _user(conn, sim_jobs.small_writes)
        raw = _raw(conn, sim_jobs.small_writes)
        msg = b.build(conn, sim_jobs.small_writes)
    assert msg is not None and msg.get_content_type() == "multipart/alternative"
    assert msg["To"] == f"{user}@example.org"
    assert msg["Subject"].startswith(f"[slurm-io] job {raw} (")
    assert "Many small writes" in text_part(msg) and "Many small writes" in html_part(msg)
    assert "because the site reports the I/O of every job" in text_part(msg)


def test_real_jobs_get_the_advice_they_earn(sim_jobs):
    b = _builder(mail_policy="all")
    with psycopg.connect(sim_jobs.dsn) as conn:
        meta = b.build(conn, sim_jobs.metadata)
        healthy = b.build(conn, sim_jobs.healthy)
    assert "Heavy metadata load" in text_part(meta)
    assert "Healthy I/O pattern" in html_part(healthy)
    assert "ADVICE" not in text_part(healthy)


def test_build_follows_the_site_policy(sim_jobs):
    with psycopg.connect(sim_jobs.dsn) as conn:
        job, tiny = sim_jobs.healthy, sim_jobs.tiny
        assert _builder(mail_policy="off").build(conn, job) is None
        assert _builder(mail_policy="above_size").build(conn, job) is not None
        assert _builder(mail_policy="above_size").build(conn, tiny) is None
        assert _builder(mail_policy="above_size", mail_min_bytes=1 << 60).build(conn, job) is None
        assert _builder(mail_policy="all").build(conn, tiny) is not None
        assert _builder(mail_policy="mail_type_end").build(conn, job) is None  # Slurm: unknown
        asked = SlurmMail("someone@uni.example", frozenset({"END", "FAIL"}), "scontrol")
        msg = _builder(lambda j: asked, mail_policy="mail_type_end").build(conn, job)
        assert msg is not None and msg["To"] == "someone@uni.example"
        fail_only = SlurmMail(None, frozenset({"FAIL"}), "scontrol")
        assert _builder(lambda j: fail_only, mail_policy="mail_type_end").build(conn, job) is None
        assert _builder(mail_policy="all").build(conn, 999_999_999) is None  # no such job


def test_an_opted_out_user_gets_no_mail(sim_jobs):
    b = _builder(mail_policy="all")
    with psycopg.connect(sim_jobs.dsn) as conn:
        _, uid = _user(conn, sim_jobs.healthy)
        try:
            preferences.set_enabled(conn, uid, False)
            assert b.build(conn, sim_jobs.healthy) is None
            preferences.set_enabled(conn, uid, True)
            assert b.build(conn, sim_jobs.healthy) is not None
        finally:
            conn.rollback()
            conn.execute("DELETE FROM mail_preference WHERE uid = %s", (uid,))
            conn.commit()


# -- mail_preference: row-level security ---------------------------------------------------------
@pytest.fixture
def roles(db_dsn: str) -> Iterator[dict[str, str]]:
    """Login-less roles of two users (uids 7001, 7002), an admin and a collector."""
    tag = f"mailt{os.getpid()}"
    made = {"alice": f"{tag}_alice", "bob": f"{tag}_bob", "admin": f"{tag}_admin",
            "collector": f"{tag}_coll"}
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for key, role in made.items():
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
            group = {"admin": "jobio_admin", "collector": "jobio_collector"}.get(key,
                                                                                "jobio_user")
            conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group),
                                                          sql.Identifier(role)))
        conn.execute("INSERT INTO jobio_account (rolname, uid) VALUES (%s, 7001), (%s, 7002)",
                     (made["alice"], made["bob"]))
    try:
        yield made
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            for role in made.values():
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _as(conn: psycopg.Connection, role: str) -> None:
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))


def test_a_user_changes_only_their_own_preference(db_dsn, roles):
    with psycopg.connect(db_dsn) as conn:
        preferences.set_enabled(conn, 7002, True)  # bob's row, by the owner
        _as(conn, roles["alice"])
        uid = preferences.resolve_uid(conn)
        assert uid == 7001
        p = preferences.set_enabled(conn, uid, False)
        assert (p.uid, p.enabled) == (7001, False) and p.changed_at is not None
        assert preferences.set_enabled(conn, uid, True).enabled is True
        # bob's row is invisible and cannot be written, neither by insert nor by update
        assert conn.execute("SELECT uid FROM mail_preference").fetchall() == [(7001,)]
        assert preferences.get(conn, 7002).enabled is None
        with pytest.raises(errors.InsufficientPrivilege):
            preferences.set_enabled(conn, 7002, False)
        conn.rollback()
        _as(conn, roles["alice"])
        for statement in ("UPDATE mail_preference SET uid = 7002",
                          "DELETE FROM mail_preference",
                          "INSERT INTO mail_preference VALUES (7003, false)"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
            _as(conn, roles["alice"])
        # the timestamp is the server's, whatever the user sends
        conn.execute("UPDATE mail_preference SET changed_at = '2000-01-01', enabled = true")
        (year,) = conn.execute("SELECT extract(year FROM changed_at) FROM mail_preference"
                               ).fetchone()
        assert year > 2000
        conn.commit()
    with psycopg.connect(db_dsn) as conn:
        _as(conn, roles["admin"])
        assert conn.execute("SELECT uid, enabled FROM mail_preference ORDER BY uid"
                            ).fetchall() == [(7001, True), (7002, True)]
        with pytest.raises(errors.InsufficientPrivilege):
            preferences.set_enabled(conn, 7001, False)
        conn.rollback()
        _as(conn, roles["collector"])  # the reporter reads everyone's choice
        assert preferences.enabled(conn, 7002) is True


def test_a_role_without_a_uid_cannot_write_a_preference(db_dsn, roles):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM jobio_account WHERE rolname = %s", (roles["bob"],))
    with psycopg.connect(db_dsn) as conn:
        _as(conn, roles["bob"])
        assert preferences.role_uid(conn) is None
        with pytest.raises(errors.InsufficientPrivilege):
            preferences.set_enabled(conn, preferences.resolve_uid(conn), False)


RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


@needs.root("runs psql as an OS user: root")
def test_an_os_user_with_peer_authentication_opts_out(pg_dsn, db_dsn):
    """As in tests/privacy: a real OS account, its login role made by `jobio db users`,
    peer authentication over the embedded server's socket."""
    from slurm_io.store import accounts

    name = "mailtest"
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=False,
                       capture_output=True)
    uid = pwd.getpwnam(name).pw_uid
    with psycopg.connect(db_dsn) as conn:
        accounts.sync_accounts(conn, [(name, uid)], [])
    params = {"host": conninfo_to_dict(pg_dsn)["host"], "port": "5432",
              "dbname": conninfo_to_dict(db_dsn)["dbname"]}

    def psql(query: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [RUNUSER, "-u", name, "--", str(find_bindir() / "psql"), "-X", "-A", "-t", "-q",
             "-v", "ON_ERROR_STOP=1", "-d", make_conninfo("", **params), "-c", query],
            capture_output=True, text=True, cwd="/", timeout=60, check=False,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})

    # what `jobio mail off` runs, with the uid the database maps the login to
    upsert = ("INSERT INTO mail_preference (uid, enabled) VALUES ({uid}, false) "
              "ON CONFLICT (uid) DO UPDATE SET enabled = EXCLUDED.enabled RETURNING uid")
    proc = psql(upsert.format(uid="jobio_current_uid()"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(uid)
    proc = psql(upsert.format(uid=uid + 1))
    assert proc.returncode != 0 and "row-level security" in proc.stderr
    with psycopg.connect(db_dsn) as conn:
        assert preferences.enabled(conn, uid) is False
        assert preferences.enabled(conn, uid + 1) is None


# -- the command line ---------------------------------------------------------------------------
def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_jobio_mail_off_on_status(db_dsn):
    r = run("--dsn", db_dsn, "mail", "status", "--user", "4242")
    assert r.exit_code == 0, r.output
    assert "not set: the site policy applies" in r.output
    assert "above_size" in r.output and "1.0 GiB" in r.output
    r = run("--dsn", db_dsn, "mail", "off", "--user", "4242")
    assert r.exit_code == 0 and "I/O mails off for uid 4242" in r.output
    assert "mails:   off (since" in run("--dsn", db_dsn, "mail", "status", "--user",
                                        "4242").output
    assert "I/O mails on" in run("--dsn", db_dsn, "mail", "on", "--user", "4242").output
    with psycopg.connect(db_dsn) as conn:
        assert preferences.enabled(conn, 4242) is True
    # the superuser without --user: the uid running the command
    assert f"for uid {os.getuid()}" in run("--dsn", db_dsn, "mail", "off").output


def test_jobio_report_prints_or_writes_the_mail(sim_jobs, tmp_path):
    with psycopg.connect(sim_jobs.dsn) as conn:
        job = str(_raw(conn, sim_jobs.small_writes))
    r = run("--dsn", sim_jobs.dsn, "report", job)
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Subject: [slurm-io] job {job} (")
    assert f"Lustre I/O of job {job}" in r.output and "TIMELINE" in r.output
    eml, html = tmp_path / "job.eml", tmp_path / "job.html"
    r = run("--dsn", sim_jobs.dsn, "report", job, "--eml", str(eml), "--html", str(html))
    assert r.exit_code == 0 and f"wrote {eml}" in r.output and f"wrote {html}" in r.output
    msg = email.message_from_bytes(eml.read_bytes(), policy=policy.default)
    assert msg.get_content_type() == "multipart/alternative"
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert html.read_text() == html_part(msg)
    r = CliRunner().invoke(main, ["--dsn", sim_jobs.dsn, "report", "999999999"])
    assert r.exit_code == 1 and "no such job" in r.output
