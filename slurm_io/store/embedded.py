"""A private PostgreSQL server that slurm-io runs itself when no DSN is configured.

Why: a site should get per-job I/O accounting working with nothing but the Debian
`postgresql-15` package installed, without creating roles, databases or pg_hba entries in a
shared server. A site with a real server passes `--dsn` / `SLURM_IO_DSN` instead.

Layout under the state directory:

    pg/          owned by the server account, mode 0700
      data/      the cluster (initdb'ed into data.initdb/ and renamed, so a crash during
                 initdb never leaves a half-initialised cluster behind)
      run/       unix socket directory, mode 0700
      log/       server logs (weekly rotation by the logging collector; startup.log holds
                 what the server prints before its collector runs)
      .lock      flock(2) serialising init/start/stop between concurrent `jobio` processes

Security model: the server listens on no TCP address at all (listen_addresses = ''), only on
a unix socket in `run/`, and authenticates local connections with `trust`. What protects the
data is the socket directory's mode 0700: only its owner (the server account) and root can
reach the socket. As a normal user that owner is the user themself. As root the owner is the
`postgres` OS account (or a `slurmio` system account created when `postgres` does not exist),
so any process running as that account can connect too -- on a machine whose `postgres`
account is shared with another PostgreSQL service, point SLURM_IO_DSN at that service instead.

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
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from psycopg.conninfo import make_conninfo

BINDIR_ENV = "SLURM_IO_PG_BINDIR"
SUPERUSER = "slurmio"
DATABASE = "slurmio"
# With no TCP listener the port only names the socket file (.s.PGSQL.5432) inside our private
# socket directory, so it cannot clash with another server. It is still put in the conninfo
# so that a PGPORT in the environment cannot redirect the connection.
PORT = 5432
SERVICE_ACCOUNT = "postgres"  # preferred account when running as root (Debian creates it)
FALLBACK_ACCOUNT = "slurmio"  # created as a system account when `postgres` does not exist
REQUIRED_BINARIES = ("initdb", "pg_ctl", "postgres")
SETUP_HINT = (
    "Run the project's set-up script `scripts/setup.sh` (installs postgresql-15 via apt), "
    f"set ${BINDIR_ENV} to a PostgreSQL bin directory, or use an existing server with "
    "--dsn / SLURM_IO_DSN."
)


class EmbeddedPostgresError(RuntimeError):
    """The private server could not be initialised, started or stopped."""


class PostgresNotInstalled(EmbeddedPostgresError):
    """No PostgreSQL server binaries were found."""


def find_bindir() -> Path:
    """The server binaries: $SLURM_IO_PG_BINDIR, else the newest /usr/lib/postgresql/*/bin.

    The newest version is right for a new cluster. An existing cluster can only be started by
    its own major version (recorded in PG_VERSION); `ensure()` checks that before starting.
    """
    override = os.environ.get(BINDIR_ENV)
    if override:
        path = Path(override)
        missing = [b for b in REQUIRED_BINARIES if not os.access(path / b, os.X_OK)]
        if missing:
            raise PostgresNotInstalled(
                f"${BINDIR_ENV}={override} lacks {', '.join(missing)}. {SETUP_HINT}"
            )
        return path
    found: list[tuple[tuple[int, ...], Path]] = []
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        for child in root.iterdir():
            bindir = child / "bin"
            if re.fullmatch(r"\d+(\.\d+)*", child.name) and all(
                os.access(bindir / b, os.X_OK) for b in REQUIRED_BINARIES
            ):
                found.append((tuple(int(p) for p in child.name.split(".")), bindir))
    if not found:
        raise PostgresNotInstalled(
            f"PostgreSQL server binaries not found in {root}/*/bin. {SETUP_HINT}"
        )
    return max(found)[1]


@dataclass(frozen=True)
class _Account:
    """The OS account the server runs as when we are root (None elsewhere: the current user)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @classmethod
    def from_pwd(cls, entry: pwd.struct_passwd) -> _Account:
        groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


def _create_system_account(name: str) -> pwd.struct_passwd:
    """Create a no-login system account (only when `postgres` does not exist)."""
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    try:
        subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--home-dir",
             "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment",
             "slurm-io embedded PostgreSQL", name],
            check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        # A concurrent process may have created it first.
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        raise EmbeddedPostgresError(f"cannot create system account {name!r}: {detail}") from exc
    return pwd.getpwnam(name)


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
        the server already runs (a pid check, no subprocess). Returns the conninfo.
        """
        with self._locked():
            account = self._prepare_dirs()
            if not self._initialized():
                self._initdb(account)
            if self._running_pid() is None:
                self._start(account)
            if not self._db_marker.exists():
                self._create_database()
        return self.conninfo

    def start(self) -> None:
        """Start an initialised cluster (no-op when running). Use `ensure()` to also init."""
        with self._locked():
            account = self._prepare_dirs()
            if not self._initialized():
                raise EmbeddedPostgresError(
                    f"no cluster in {self.data_dir}; initialise it with ensure()"
                )
            if self._running_pid() is None:
                self._start(account)

    def stop(self) -> None:
        """Stop the server (fast shutdown: sessions are disconnected, data is kept)."""
        if not self.pg_dir.is_dir():
            return
        with self._locked():
            if self._running_pid() is None:
                return
            account = self._account()
            self._run(
                [self._bin("pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w",
                 "-t", "120", "-s"],
                account, what="stop the embedded PostgreSQL",
            )

    def status(self) -> dict[str, object]:
        """What `jobio db status` shows: state, pid, locations, version, account."""
        initialized = self._initialized()
        pid = self._running_pid() if initialized else None
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
        self._make_state_dir()
        self.pg_dir.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _make_state_dir(self) -> None:
        """Create the state directory; as root make what we create enterable (0755)."""
        missing: list[Path] = []
        path = self.state_dir
        while not path.exists():
            missing.append(path)
            path = path.parent
        mode = 0o755 if os.geteuid() == 0 else 0o700
        for path in reversed(missing):
            with contextlib.suppress(FileExistsError):
                path.mkdir()
                os.chmod(path, mode)

    def _prepare_dirs(self) -> _Account | None:
        """Create pg/, run/, log/ with mode 0700, owned by the server account."""
        account = self._account()
        for path in (self.pg_dir, self.socket_dir, self.log_dir):
            path.mkdir(mode=0o700, exist_ok=True)
            os.chmod(path, 0o700)
            if account is not None:
                st = path.stat()
                if (st.st_uid, st.st_gid) != (account.uid, account.gid):
                    os.chown(path, account.uid, account.gid)
        if account is not None:
            self._check_traversable(account)
        return account

    def _account(self) -> _Account | None:
        """The account to run the server as; None means the current (non-root) user.

        An existing cluster keeps running as the owner of its data directory; a new one uses
        `postgres`, or a `slurmio` system account when `postgres` does not exist.
        """
        if os.geteuid() != 0:
            return None
        if self.data_dir.exists():
            uid = self.data_dir.stat().st_uid
            if uid == 0:
                raise EmbeddedPostgresError(
                    f"{self.data_dir} is owned by root; PostgreSQL cannot run as root"
                )
            return _Account.from_pwd(pwd.getpwuid(uid))
        try:
            entry = pwd.getpwnam(SERVICE_ACCOUNT)
        except KeyError:
            try:
                entry = pwd.getpwnam(FALLBACK_ACCOUNT)
            except KeyError:
                entry = _create_system_account(FALLBACK_ACCOUNT)
        return _Account.from_pwd(entry)

    def _check_traversable(self, account: _Account) -> None:
        """Fail clearly when the server account cannot reach pg/ (we never chmod parents)."""
        for parent in self.pg_dir.parents:
            st = parent.stat()
            if st.st_uid == account.uid:
                ok = st.st_mode & stat.S_IXUSR
            elif st.st_gid in account.groups:
                ok = st.st_mode & stat.S_IXGRP
            else:
                ok = st.st_mode & stat.S_IXOTH
            if not ok:
                raise EmbeddedPostgresError(
                    f"the embedded PostgreSQL runs as {account.name!r}, which cannot enter "
                    f"{parent} (mode {stat.filemode(st.st_mode)}); choose a state directory "
                    f"below enterable directories (SLURM_IO_STATE_DIR, default for root: "
                    f"/var/lib/slurm-io) or grant it search permission (chmod o+x {parent})"
                )

    # -- server operations ----------------------------------------------------------------------

    def _initialized(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def _bin_dir(self) -> Path:
        if self._bindir is None:
            self._bindir = find_bindir()
        return self._bindir

    def _bin(self, name: str) -> str:
        return str(self._bin_dir() / name)

    def _initdb(self, account: _Account | None) -> None:
        """initdb into a scratch directory and rename it: the data dir is never half-made."""
        scratch = self.pg_dir / "data.initdb"
        if scratch.exists():
            shutil.rmtree(scratch)  # left by an initdb that died; we hold the lock
        self._run(
            [self._bin("initdb"), "-D", str(scratch), "-U", SUPERUSER, "-E", "UTF8",
             "--locale=C", "--auth-local=trust", "--auth-host=reject"],
            account, what="initialise the embedded PostgreSQL (initdb)",
        )
        with open(scratch / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# slurm-io settings, rewritten at every start\n")
            conf.write("include 'slurm_io.conf'\n")
        os.rename(scratch, self.data_dir)

    def _write_conf(self, account: _Account | None) -> None:
        """(Re)write slurm_io.conf: absolute paths follow the state dir if it was moved."""

        def quote(value: str) -> str:
            return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"

        settings = {
            "listen_addresses": "''",
            "unix_socket_directories": quote(str(self.socket_dir)),
            "unix_socket_permissions": "0700",
            "port": str(PORT),
            "shared_buffers": "'128MB'",
            "max_wal_size": "'1GB'",
            # One 10k-row batch writes ~4 MB of WAL; with the default (4 MB at these
            # shared_buffers) the inserting backend ends up writing WAL itself mid-COPY.
            "wal_buffers": "'16MB'",
            "timezone": "'UTC'",
            "log_timezone": "'UTC'",
            "logging_collector": "on",
            "log_directory": quote(str(self.log_dir)),
            "log_filename": "'postgresql-%a.log'",
            "log_truncate_on_rotation": "on",
            "log_rotation_age": "'1d'",
            "log_rotation_size": "0",
        }
        text = "".join(f"{k} = {v}\n" for k, v in settings.items())
        path = self.data_dir / "slurm_io.conf"
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return
        tmp = path.with_suffix(".conf.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if account is not None:
            os.chown(tmp, account.uid, account.gid)
        os.replace(tmp, path)

    def _check_version(self) -> None:
        data_version = (self.data_dir / "PG_VERSION").read_text().strip()
        bin_version = self._bin_dir().parent.name
        if re.fullmatch(r"\d+(\.\d+)*", bin_version) and bin_version != data_version:
            raise EmbeddedPostgresError(
                f"the cluster in {self.data_dir} was made by PostgreSQL {data_version} but the "
                f"binaries in {self._bin_dir()} are version {bin_version}; set {BINDIR_ENV} "
                f"to /usr/lib/postgresql/{data_version}/bin (or dump and re-initialise)"
            )

    def _start(self, account: _Account | None) -> None:
        self._check_version()
        self._write_conf(account)
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

    def _running_pid(self) -> int | None:
        """Pid of the live postmaster of this data dir, read from postmaster.pid.

        Cheaper than `pg_ctl status` (no subprocess), which matters because every `jobio`
        invocation using the embedded default passes through here. A pid file left by a
        crash or reboot is recognised by its pid being gone or not being a postgres process.
        """
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, owned by another account
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return pid  # no /proc: trust the signal probe
        return pid if b"postgres" in cmdline else None

    def _run(self, cmd: list[str], account: _Account | None, *, what: str) -> None:
        """Run a PostgreSQL tool, as `account` when we are root, with a clean environment."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "LANG": "C",
        }
        kwargs: dict[str, object] = {}
        if account is not None:
            home = account.home if os.path.isdir(account.home) else str(self.pg_dir)
            env.update(HOME=home, USER=account.name, LOGNAME=account.name)
            kwargs = {"user": account.uid, "group": account.gid,
                      "extra_groups": list(account.groups)}
        else:
            env["HOME"] = os.environ.get("HOME", str(self.pg_dir))
        try:
            proc = subprocess.run(
                cmd, env=env, cwd=self.pg_dir, stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=600, check=False,
                **kwargs,  # type: ignore[arg-type]
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EmbeddedPostgresError(f"cannot {what}: {exc}") from exc
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip()
            raise EmbeddedPostgresError(
                f"cannot {what} (exit {proc.returncode}): {detail}{self._log_tail()}"
            )

    def _log_tail(self, lines: int = 15) -> str:
        """Last lines of the newest server log, to put the real cause into error messages."""
        try:
            logs = sorted(self.log_dir.glob("*.log"), key=lambda p: p.stat().st_mtime)
        except OSError:
            return ""
        if not logs:
            return ""
        try:
            tail = logs[-1].read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return f"\n--- {logs[-1]} ---\n" + "\n".join(tail)

