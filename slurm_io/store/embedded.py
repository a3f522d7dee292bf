"""A private PostgreSQL server that slurm-io runs itself when no DSN is configured.

Why: a site should get per-job I/O accounting working with nothing but the Debian
`postgresql-15` package installed, without creating roles, databases or pg_hba entries in a
shared server. A site with a real server passes `--dsn` / `SLURM_IO_DSN` instead.

Layout under the state directory:

    pg/          owned by the server account, mode 0711 (others may pass through, not list)
      data/      the cluster (initdb'ed into data.initdb/ and renamed, so a crash during
                 initdb never leaves a half-initialised cluster behind); mode 0700
      run/       unix socket directory, mode 0755 (see the security model)
      log/       server logs (weekly rotation by the logging collector; startup.log holds
                 what the server prints before its collector runs), mode 0700
      .lock      flock(2) serialising init/start/stop between concurrent `jobio` processes

Security model: the server listens on no TCP address at all (listen_addresses = ''), only on
a unix socket in `run/`, and authenticates every connection with `peer`: the kernel tells the
server the uid of the connecting process, and the ident map (pg_ident.conf) decides which
database role that OS account may log in as:

  - the server's own account (`postgres`, the `slurmio` system account, or the user running
    a private server) and root may log in as the superuser `slurmio`, and as nothing else;
  - every other OS account may log in only as the role of its own name (which exists only
    when an admin created it with `jobio db users`; it sees its own jobs, see
    docs/privacy.md and sql/0004_privacy.sql).

The socket directory (0755) and the socket (0777) are therefore reachable by every local
user. That is safe only because authentication is `peer` with this map; it replaced an
earlier design of `trust` behind a 0700 socket directory. pg_hba.conf and pg_ident.conf are
rewritten at every start and, when they differ from what this module writes (a cluster made
by an older slurm-io, a hand edit), also by `ensure()` on a running server followed by a
reload, so an upgraded installation never keeps `trust`.

A process that is neither root nor the server's account (a user running `jobio show` with
the system's state directory) does not init, start or lock anything: `ensure()` returns a
conninfo naming its own role and the server must already run.

Why an unprivileged account as root: initdb, pg_ctl and postgres refuse to run as root. The
account must be able to enter every parent directory of the data directory; root's default
state directory is /var/lib/slurm-io for that reason (/root is mode 0700 and is never
chmod'ed here). A state directory the account cannot reach is reported, not "fixed".

Durability is not traded for speed: fsync, full_page_writes and synchronous_commit keep their
defaults. Only small-server sizing is set (shared_buffers, wal_buffers, max_wal_size).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from psycopg.conninfo import make_conninfo

from slurm_io.store.embedded_host import (
    make_state_dir,
    prepare_dirs,
    run_tool,
    running_pid,
    server_account,
)
from slurm_io.store.embedded_setup import (
    BINDIR_ENV,
    DATABASE,
    FALLBACK_ACCOUNT,
    PORT,
    REQUIRED_BINARIES,
    SERVICE_ACCOUNT,
    SETUP_HINT,
    SUPERUSER,
    SUPERUSER_MAP,
    USERS_MAP,
    Account,
    EmbeddedPostgresError,
    PostgresNotInstalled,
    auth_files,
    current_user_name,
    find_bindir,
    server_conf,
    write_owned,
)

__all__ = ["BINDIR_ENV", "DATABASE", "FALLBACK_ACCOUNT", "PORT", "REQUIRED_BINARIES",
           "SERVICE_ACCOUNT", "SETUP_HINT", "SUPERUSER", "SUPERUSER_MAP", "USERS_MAP",
           "EmbeddedPostgres", "EmbeddedPostgresError", "PostgresNotInstalled", "find_bindir"]



class EmbeddedPostgres:
    """A PostgreSQL cluster private to one state directory, managed with initdb/pg_ctl."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir).absolute()
        self.pg_dir = self.state_dir / "pg"
        self.data_dir = self.pg_dir / "data"
        self.socket_dir = self.pg_dir / "run"
        self.log_dir = self.pg_dir / "log"
        self._lock_path = self.pg_dir / ".lock"
        self._db_marker = self.pg_dir / ".database-created"
        self._bindir: Path | None = None

    # -- public API ---------------------------------------------------------------------------

    @property
    def conninfo(self) -> str:
        """libpq conninfo of the `slurmio` database over the private unix socket."""
        return make_conninfo(
            "", host=str(self.socket_dir), port=str(PORT), user=SUPERUSER, dbname=DATABASE
        )

    def ensure(self) -> str:
        """Initialise the cluster if needed and start it if it is not running.

        Safe to call from several processes at once (serialised by an flock) and cheap when
        the server already runs (a pid check and reading pg_hba/pg_ident, no subprocess).
        Returns the conninfo.

        Called by an OS user who is neither root nor the server's account, on a server that
        account made (a user running `jobio show` with the system's state directory), it
        touches nothing and returns the conninfo of the caller's own role: peer
        authentication lets them log in as nothing else.
        """
        if self._foreign():
            return make_conninfo(self.conninfo, user=current_user_name())
        with self._locked():
            account = prepare_dirs(self.pg_dir, self.socket_dir, self.log_dir, self.data_dir)
            if not self._initialized():
                self._initdb(account)
            self._start_or_sync(account)
            if not self._db_marker.exists():
                self._create_database()
        return self.conninfo

    def start(self) -> None:
        """Start an initialised cluster (no-op when running). Use `ensure()` to also init."""
        with self._locked():
            account = prepare_dirs(self.pg_dir, self.socket_dir, self.log_dir, self.data_dir)
            if not self._initialized():
                raise EmbeddedPostgresError(
                    f"no cluster in {self.data_dir}; initialise it with ensure()"
                )
            self._start_or_sync(account)

    def stop(self) -> None:
        """Stop the server (fast shutdown: sessions are disconnected, data is kept)."""
        if not self.pg_dir.is_dir():
            return
        with self._locked():
            if running_pid(self.data_dir) is None:
                return
            account = server_account(self.data_dir)
            self._run(
                [self._bin("pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w",
                 "-t", "120", "-s"],
                account, what="stop the embedded PostgreSQL",
            )

    def status(self) -> dict[str, object]:
        """What `jobio db status` shows: state, pid, locations, version, account."""
        initialized = self._initialized()
        pid = running_pid(self.data_dir) if initialized else None
        version = None
        if initialized:
            version = (self.data_dir / "PG_VERSION").read_text().strip()
        owner = None
        if self.data_dir.exists():
            uid = self.data_dir.stat().st_uid
            try:
                owner = pwd.getpwuid(uid).pw_name
            except KeyError:
                owner = str(uid)
        try:
            bindir: str | None = str(self._bin_dir())
        except PostgresNotInstalled:
            bindir = None
        return {
            "initialized": initialized,
            "running": pid is not None,
            "pid": pid,
            "version": version,
            "os_user": owner,
            "state_dir": str(self.state_dir),
            "data_dir": str(self.data_dir),
            "socket_dir": str(self.socket_dir),
            "log_dir": str(self.log_dir),
            "bindir": bindir,
            "conninfo": self.conninfo,
        }

    # -- locking and directories ----------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold an exclusive flock on pg/.lock (released by the kernel if we die)."""
        make_state_dir(self.state_dir)
        self.pg_dir.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _foreign(self) -> bool:
        """True when we are neither root nor the owner of an existing pg/ directory."""
        if os.geteuid() == 0:
            return False
        try:
            return self.pg_dir.stat().st_uid != os.geteuid()
        except OSError:
            return False  # nothing there yet (or unreachable: the normal path reports it)

    # -- server operations ----------------------------------------------------------------------

    def _initialized(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def _bin_dir(self) -> Path:
        if self._bindir is None:
            self._bindir = find_bindir()
        return self._bindir

    def _bin(self, name: str) -> str:
        return str(self._bin_dir() / name)

    def _initdb(self, account: Account | None) -> None:
        """initdb into a scratch directory and rename it: the data dir is never half-made."""
        scratch = self.pg_dir / "data.initdb"
        if scratch.exists():
            shutil.rmtree(scratch)  # left by an initdb that died; we hold the lock
        self._run(
            [self._bin("initdb"), "-D", str(scratch), "-U", SUPERUSER, "-E", "UTF8",
             "--locale=C", "--auth-local=peer", "--auth-host=reject"],
            account, what="initialise the embedded PostgreSQL (initdb)",
        )
        with open(scratch / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# slurm-io settings, rewritten at every start\n")
            conf.write("include 'slurm_io.conf'\n")
        os.rename(scratch, self.data_dir)

    def _write_conf(self, account: Account | None) -> None:
        """(Re)write slurm_io.conf: absolute paths follow the state dir if it was moved."""

        text = server_conf(self.socket_dir, self.log_dir)
        write_owned(self.data_dir / "slurm_io.conf", text, account)

    def _auth_files(self, account: Account | None) -> dict[str, str]:
        """The pg_hba.conf and pg_ident.conf this module keeps in the data directory."""
        return auth_files(account.name if account is not None else current_user_name())

    def _write_auth(self, account: Account | None) -> bool:
        """(Re)write pg_hba.conf and pg_ident.conf; True when either changed."""
        changed = False
        for name, text in self._auth_files(account).items():
            path = self.data_dir / name
            changed |= write_owned(path, text, account)
        return changed

    def _start_or_sync(self, account: Account | None) -> None:
        """Start the server, or make a running one use our authentication files."""
        if running_pid(self.data_dir) is None:
            self._start(account)
        elif self._write_auth(account):
            # A cluster made by an older slurm-io (trust) or a hand edit: apply ours now.
            self._run(
                [self._bin("pg_ctl"), "reload", "-D", str(self.data_dir), "-s"],
                account, what="reload the embedded PostgreSQL's authentication files",
            )

    def _check_version(self) -> None:
        data_version = (self.data_dir / "PG_VERSION").read_text().strip()
        bin_version = self._bin_dir().parent.name
        if re.fullmatch(r"\d+(\.\d+)*", bin_version) and bin_version != data_version:
            raise EmbeddedPostgresError(
                f"the cluster in {self.data_dir} was made by PostgreSQL {data_version} but the "
                f"binaries in {self._bin_dir()} are version {bin_version}; set {BINDIR_ENV} "
                f"to /usr/lib/postgresql/{data_version}/bin (or dump and re-initialise)"
            )

    def _start(self, account: Account | None) -> None:
        self._check_version()
        self._write_conf(account)
        self._write_auth(account)
        self._run(
            [self._bin("pg_ctl"), "start", "-D", str(self.data_dir), "-l",
             str(self.log_dir / "startup.log"), "-w", "-t", "120", "-s"],
            account, what="start the embedded PostgreSQL",
        )

    def _create_database(self) -> None:
        """Create the `slurmio` database once (initdb only makes `postgres`/templates)."""
        import psycopg  # local: keeps `jobio --help` free of the driver import

        with psycopg.connect(
            make_conninfo(self.conninfo, dbname="postgres"), autocommit=True
        ) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
        self._db_marker.touch(mode=0o600)

    def _run(self, cmd: list[str], account: Account | None, *, what: str) -> None:
        """Run a PostgreSQL tool in pg/ (embedded_host.run_tool)."""
        run_tool(cmd, account, cwd=self.pg_dir, log_dir=self.log_dir, what=what)
