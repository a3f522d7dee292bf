"""The embedded PostgreSQL: init, start, stop, restart, isolation, concurrent start-up."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from slurm_io import paths
from slurm_io.store.embedded import (
    EmbeddedPostgres,
    EmbeddedPostgresError,
    PostgresNotInstalled,
    find_bindir,
)
from tests import needs

pytestmark = pytest.mark.pg

RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


@pytest.fixture
def server(pg_tmp_path: Path):
    pg = EmbeddedPostgres(pg_tmp_path / "state")
    yield pg
    pg.stop()


def test_ensure_initialises_and_starts_a_server_that_answers(server: EmbeddedPostgres) -> None:
    conninfo = server.ensure()
    with psycopg.connect(conninfo) as conn:
        user, db = conn.execute("SELECT current_user, current_database()").fetchone()
    assert (user, db) == ("slurmio", "slurmio")
    status = server.status()
    assert status["initialized"] is True
    assert status["running"] is True
    assert status["data_dir"] == str(server.state_dir / "pg" / "data")


def test_ensure_on_a_running_server_keeps_the_same_postmaster(server: EmbeddedPostgres) -> None:
    first = server.ensure()
    pid = server.status()["pid"]
    assert server.ensure() == first
    assert server.status()["pid"] == pid


def test_data_survives_stop_and_restart(server: EmbeddedPostgres) -> None:
    conninfo = server.ensure()
    with psycopg.connect(conninfo) as conn:
        conn.execute("CREATE TABLE kept (v text)")
        conn.execute("INSERT INTO kept VALUES ('still here')")
    server.stop()
    assert server.status()["running"] is False
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(conninfo, connect_timeout=2)
    server.stop()  # stopping a stopped server is a no-op
    server.start()
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT v FROM kept").fetchall() == [("still here",)]


def test_start_refuses_an_uninitialised_directory(server: EmbeddedPostgres) -> None:
    with pytest.raises(EmbeddedPostgresError, match="ensure"):
        server.start()


def test_server_has_no_tcp_listener_and_peer_auth_on_an_open_socket_dir(
    server: EmbeddedPostgres,
) -> None:
    with psycopg.connect(server.ensure()) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        assert conn.execute("SELECT inet_server_addr()").fetchone() == (None,)
        (socket_dirs,) = conn.execute("SHOW unix_socket_directories").fetchone()
        rules = conn.execute(
            "SELECT type, database, user_name, auth_method, options, error "
            "FROM pg_hba_file_rules ORDER BY line_number"
        ).fetchall()
        maps = conn.execute(
            "SELECT map_name, sys_name, pg_username FROM pg_ident_file_mappings "
            "ORDER BY line_number"
        ).fetchall()
    assert socket_dirs == str(server.socket_dir)
    # Open to every local user: safe because authentication is peer, never trust.
    assert stat.S_IMODE(server.socket_dir.stat().st_mode) == 0o755
    assert stat.S_IMODE(server.pg_dir.stat().st_mode) == 0o711
    assert stat.S_IMODE((server.socket_dir / ".s.PGSQL.5432").stat().st_mode) == 0o777
    for private in (server.data_dir, server.log_dir):
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert server.socket_dir.stat().st_uid == server.data_dir.stat().st_uid
    assert rules == [
        ("local", ["all"], ["slurmio"], "peer", ["map=slurmio_superuser"], None),
        ("local", ["replication"], ["slurmio"], "peer", ["map=slurmio_superuser"], None),
        ("local", ["all"], ["all"], "peer", ["map=slurmio_users"], None),
    ]
    owner = pwd.getpwuid(server.data_dir.stat().st_uid).pw_name
    superusers = {sys_name for name, sys_name, _ in maps if name == "slurmio_superuser"}
    assert superusers == {owner, "root"}
    assert ("slurmio_users", "/^(.*)$", "\\1") in maps


def _psql_as(os_user: str, conninfo: str, query: str = "SELECT current_user") -> (
    subprocess.CompletedProcess[str]
):
    """Run psql as another OS account (root only), as a real client would."""
    psql = find_bindir() / "psql"
    return subprocess.run(
        [RUNUSER, "-u", os_user, "--", str(psql), "-X", "-A", "-t", "-d", conninfo,
         "-c", query],
        capture_output=True, text=True, cwd="/", timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": "/"},
    )


@needs.root("needs root to act as another OS user")
def test_other_os_users_cannot_log_in_as_the_superuser(server: EmbeddedPostgres) -> None:
    conninfo = server.ensure()
    owner = pwd.getpwuid(server.data_dir.stat().st_uid).pw_name
    ok = _psql_as(owner, conninfo)
    assert (ok.returncode, ok.stdout.strip()) == (0, "slurmio"), ok.stderr
    denied = _psql_as("nobody", conninfo)
    assert denied.returncode != 0
    assert 'Peer authentication failed for user "slurmio"' in denied.stderr
    # The socket is reachable and peer auth passes for their own name; the role is missing.
    own = _psql_as("nobody", make_conninfo(conninfo, user="nobody"))
    assert own.returncode != 0
    assert 'role "nobody" does not exist' in own.stderr


def test_a_running_cluster_with_trust_is_switched_to_peer(server: EmbeddedPostgres) -> None:
    """A cluster made by an older slurm-io (trust auth) gets peer auth without a restart."""
    conninfo = server.ensure()
    hba = server.data_dir / "pg_hba.conf"
    ours = hba.read_text()
    hba.write_text("local all all trust\n")  # as the old initdb --auth-local=trust did
    with psycopg.connect(conninfo) as conn:
        conn.execute("SELECT pg_reload_conf()")
        assert conn.execute("SELECT auth_method FROM pg_hba_file_rules").fetchall() == [
            ("trust",)
        ]
    if os.geteuid() == 0:
        time.sleep(0.5)  # the reload signal is asynchronous
        assert _psql_as("nobody", conninfo).returncode == 0  # trust: anyone is slurmio
    pid = server.status()["pid"]
    assert server.ensure() == conninfo
    assert hba.read_text() == ours
    assert server.status()["pid"] == pid  # reloaded, not restarted
    if os.geteuid() == 0:
        deadline = time.monotonic() + 30
        while (result := _psql_as("nobody", conninfo)).returncode == 0:
            assert time.monotonic() < deadline, "the server still trusts everyone"
            time.sleep(0.2)
        assert "Peer authentication failed" in result.stderr


def test_ensure_by_a_user_who_does_not_own_the_server_only_names_their_role(
    server: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a user (`jobio show` with the system's state dir) inits, starts and locks
    nothing: they get a conninfo of their own role, the only one peer auth lets them use."""
    conninfo = server.ensure()
    nobody = pwd.getpwnam("nobody")
    monkeypatch.setattr(os, "geteuid", lambda: nobody.pw_uid)
    lock_mtime = (server.pg_dir / ".lock").stat().st_mtime_ns
    foreign = server.ensure()
    assert foreign == make_conninfo(conninfo, user="nobody")
    assert (server.pg_dir / ".lock").stat().st_mtime_ns == lock_mtime


def test_durability_settings_are_not_weakened(server: EmbeddedPostgres) -> None:
    with psycopg.connect(server.ensure()) as conn:
        settings = dict(
            conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN "
                "('fsync', 'synchronous_commit', 'full_page_writes')"
            ).fetchall()
        )
    assert settings == {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}


@needs.root("the account switch happens only as root")
def test_as_root_the_server_runs_as_an_unprivileged_account(server: EmbeddedPostgres) -> None:
    server.ensure()
    owner = server.data_dir.stat().st_uid
    assert owner != 0
    status_line = Path(f"/proc/{server.status()['pid']}/status").read_text()
    uid_line = next(line for line in status_line.splitlines() if line.startswith("Uid:"))
    assert int(uid_line.split()[1]) == owner


@needs.root("root-only: the server account is not root")
def test_state_dir_the_server_account_cannot_enter_is_reported(pg_tmp_path: Path) -> None:
    private = pg_tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    pg = EmbeddedPostgres(private / "state")
    with pytest.raises(EmbeddedPostgresError, match=re.escape(str(private))):
        pg.ensure()
    assert not (private / "state" / "pg" / "data").exists()


def test_missing_binaries_point_to_the_setup_script(
    server: EmbeddedPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_IO_PG_BINDIR", str(tmp_path))
    with pytest.raises(PostgresNotInstalled, match=r"scripts/setup\.sh"):
        server.ensure()


def test_two_processes_starting_at_once_share_one_server(server: EmbeddedPostgres) -> None:
    barrier = server.state_dir.parent
    script = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        from slurm_io.store.embedded import EmbeddedPostgres
        Path({str(barrier)!r}, "ready-" + sys.argv[1]).touch()
        while not os.path.exists({str(barrier / "go")!r}):
            time.sleep(0.001)
        print(EmbeddedPostgres(Path({str(server.state_dir)!r})).ensure())
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(n)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for n in range(2)
    ]
    while not all((barrier / f"ready-{n}").exists() for n in range(2)):
        assert all(p.poll() is None for p in procs), "a child died before the start line"
        time.sleep(0.01)
    (barrier / "go").touch()  # both children now race into ensure()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    conninfos = {out.strip() for out, _ in outputs}
    assert conninfos == {server.conninfo}
    with psycopg.connect(server.conninfo) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    postmasters = {
        int(proc.name)
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and _cmdline(proc).endswith(f"-D\0{server.data_dir}\0")
    }
    assert postmasters == {server.status()["pid"]}


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_text()
    except OSError:
        return ""


def test_default_state_dir_prefers_env_then_root_then_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SLURM_IO_STATE_DIR", str(tmp_path / "x"))
    assert paths.default_state_dir() == tmp_path / "x"
    monkeypatch.delenv("SLURM_IO_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    if os.geteuid() == 0:
        assert paths.default_state_dir() == Path("/var/lib/slurm-io")
    else:
        assert paths.default_state_dir() == tmp_path / "xdg" / "slurm-io"
