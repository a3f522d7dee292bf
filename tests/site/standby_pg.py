"""A primary and its hot standby: two real PostgreSQL 15 servers with streaming replication
(`initdb`, `pg_basebackup -R`, `pg_ctl`), on unix sockets in a directory every local account
may enter, peer authentication as on the embedded server (root and the service account are
the superuser `slurmio`, everyone else their own role). Stopped by their own PIDs."""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from slurm_io.store.embedded import SERVICE_ACCOUNT, find_bindir
from tests.privacy.privacy_db import RUNUSER
from tests.site.remote_pg import free_port

SUPERUSER = "slurmio"
DATABASE = "slurmio"


@dataclass(frozen=True)
class Pair:
    sockets: Path
    primary_port: int
    standby_port: int

    def dsn(self, port: int, *, superuser: bool = True) -> str:
        """Peer authentication: as the superuser (root), or as the caller's own role."""
        extra = {"user": SUPERUSER} if superuser else {}
        return make_conninfo("", host=str(self.sockets), port=port, dbname=DATABASE, **extra)

    @property
    def primary(self) -> str:
        return self.dsn(self.primary_port)

    @property
    def standby(self) -> str:
        return self.dsn(self.standby_port)

    def wait_replayed(self, timeout: float = 60.0) -> None:
        """Until the standby replayed everything the primary committed so far."""
        with psycopg.connect(self.primary, autocommit=True) as p:
            lsn = p.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby, autocommit=True) as s:
            while s.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                            (lsn,)).fetchone() != (True,):
                assert time.monotonic() < deadline, "the standby did not catch up"
                time.sleep(0.1)


@contextmanager
def primary_and_standby(base: Path) -> Iterator[Pair]:
    acct = pwd.getpwnam(SERVICE_ACCOUNT)
    d = base / "replication"
    d.mkdir()
    sockets = d / "run"
    sockets.mkdir()
    for p in (d, sockets):
        os.chown(p, acct.pw_uid, acct.pw_gid)
        p.chmod(0o755)
    bindir = find_bindir()

    def as_postgres(*cmd: str) -> None:
        subprocess.run([RUNUSER, "-u", SERVICE_ACCOUNT, "--", *cmd], check=True,
                       capture_output=True, cwd=d, timeout=180)

    primary, standby = d / "primary", d / "standby"
    as_postgres(str(bindir / "initdb"), "-D", str(primary), "-U", SUPERUSER,
                "--auth-local=peer", "--auth-host=reject", "-E", "UTF8", "--locale=C")
    p1, p2 = free_port(), free_port()
    with open(primary / "postgresql.conf", "a") as f:
        f.write(f"listen_addresses = ''\nport = {p1}\nunix_socket_directories = '{sockets}'\n"
                "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nfsync = off\n")
    (primary / "pg_hba.conf").write_text("local all all peer map=site\n"
                                         "local replication all peer map=site\n")
    (primary / "pg_ident.conf").write_text(
        f"site root {SUPERUSER}\nsite {SERVICE_ACCOUNT} {SUPERUSER}\nsite /^(.*)$ \\1\n")
    started: list[Path] = []
    try:
        as_postgres(str(bindir / "pg_ctl"), "-D", str(primary), "-l", str(d / "primary.log"),
                    "-w", "start")
        started.append(primary)
        with psycopg.connect(make_conninfo("", host=str(sockets), port=p1, dbname="postgres",
                                           user=SUPERUSER), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        # the standby: a base backup of the running primary, `-R` writes primary_conninfo
        # and standby.signal
        as_postgres(str(bindir / "pg_basebackup"), "-D", str(standby), "-h", str(sockets),
                    "-p", str(p1), "-U", SUPERUSER, "-R", "-X", "stream")
        with open(standby / "postgresql.conf", "a") as f:
            f.write(f"port = {p2}\n")
        as_postgres(str(bindir / "pg_ctl"), "-D", str(standby), "-l", str(d / "standby.log"),
                    "-w", "start")
        started.append(standby)
        pair = Pair(sockets, p1, p2)
        with psycopg.connect(pair.standby) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        yield pair
    finally:
        for data in reversed(started):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                pid = int((data / "postmaster.pid").read_text().split()[0])
                os.kill(pid, 2)  # fast shutdown of the postmaster we started
        for data in reversed(started):
            for _ in range(100):
                if not (data / "postmaster.pid").exists():
                    break
                time.sleep(0.1)
