"""The embedded server's set-up pieces: where the binaries are, its OS account, its files.

Apart from slurm_io.store.embedded (the server's lifecycle: init, start, stop, status) so
that what is written into the data directory (slurm_io.conf, pg_hba.conf, pg_ident.conf;
see the security model there) reads as plain functions of their inputs; embedded
re-exports the public names.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from slurm_io import procs

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
USERADD_TIMEOUT = 60.0  # seconds; useradd had none before procs (a hung NSS would hang us)
# pg_ident.conf map names (see the security model above).
SUPERUSER_MAP = "slurmio_superuser"  # the server account and root -> slurmio
USERS_MAP = "slurmio_users"  # any other OS account -> the role of the same name
# An OS account name we are willing to write into pg_ident.conf (quoted there).
_ACCOUNT_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]*\$?")
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
class Account:
    """The OS account the server runs as when we are root (None elsewhere: the current user)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @classmethod
    def from_pwd(cls, entry: pwd.struct_passwd) -> Account:
        groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


def current_user_name() -> str:
    """The OS account name of this process (peer authentication sees the same)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        raise EmbeddedPostgresError(
            f"uid {uid} has no passwd entry; peer authentication needs an account name"
        ) from None


def create_system_account(name: str) -> pwd.struct_passwd:
    """Create a no-login system account (only when `postgres` does not exist)."""
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    argv = [useradd, "--system", "--user-group", "--no-create-home", "--home-dir",
            "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment",
            "slurm-io embedded PostgreSQL", name]
    error: Exception | None = None
    try:
        proc = procs.run(argv, text=True, timeout=USERADD_TIMEOUT)
        detail = (proc.stderr or f"{useradd} exited {proc.returncode}") if proc.returncode else ""
    except (OSError, procs.Timeout) as exc:
        error, detail = exc, str(exc)
    if detail:
        # A concurrent process may have created it first.
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        raise EmbeddedPostgresError(f"cannot create system account {name!r}: {detail}"
                                    ) from error
    return pwd.getpwnam(name)


def server_conf(socket_dir: Path, log_dir: Path) -> str:
    """slurm_io.conf: absolute paths, so they follow the state dir if it was moved."""
    def quote(value: str) -> str:
        return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"

    settings = {
        "listen_addresses": "''",
        "unix_socket_directories": quote(str(socket_dir)),
        # Every local user may reach the socket; peer authentication decides who they
        # are (pg_hba.conf / pg_ident.conf below).
        "unix_socket_permissions": "0777",
        "port": str(PORT),
        "shared_buffers": "'128MB'",
        "max_wal_size": "'1GB'",
        # One 10k-row batch writes ~4 MB of WAL; with the default (4 MB at these
        # shared_buffers) the inserting backend ends up writing WAL itself mid-COPY.
        "wal_buffers": "'16MB'",
        "timezone": "'UTC'",
        "log_timezone": "'UTC'",
        "logging_collector": "on",
        "log_directory": quote(str(log_dir)),
        "log_filename": "'postgresql-%a.log'",
        "log_truncate_on_rotation": "on",
        "log_rotation_age": "'1d'",
        "log_rotation_size": "0",
    }
    text = "".join(f"{k} = {v}\n" for k, v in settings.items())
    return text


def auth_files(owner: str) -> dict[str, str]:
    """The pg_hba.conf and pg_ident.conf for a server run by the OS account `owner`."""
    names = [owner] if owner == "root" else [owner, "root"]
    for name in names:
        if not _ACCOUNT_NAME_RE.fullmatch(name):
            raise EmbeddedPostgresError(
                f"cannot write an ident map for the OS account {name!r}: unusual name"
            )
    header = (
        "# Written by slurm-io (slurm_io/store/embedded.py) at every start: edits are\n"
        "# overwritten. Peer authentication only; see docs/privacy.md.\n"
    )
    hba = header + "".join(
        f"{line}\n"
        for line in (
            "# TYPE  DATABASE     USER     METHOD",
            # The superuser: only the accounts of the superuser map.
            f"local   all          {SUPERUSER}  peer map={SUPERUSER_MAP}",
            f"local   replication  {SUPERUSER}  peer map={SUPERUSER_MAP}",
            # Everyone else: only the role named like their OS account.
            f"local   all          all      peer map={USERS_MAP}",
        )
    )
    ident = header + "# MAPNAME  SYSTEM-USERNAME  PG-USERNAME\n"
    ident += "".join(f'{SUPERUSER_MAP}  "{name}"  {SUPERUSER}\n' for name in names)
    ident += f"{USERS_MAP}  /^(.*)$  \\1\n"
    return {"pg_hba.conf": hba, "pg_ident.conf": ident}


def write_owned(path: Path, text: str, account: Account | None) -> bool:
    """Replace a server config file atomically (mode 0600, owned by the server's account);
    False when it already holds `text`, so that callers reload the server only on change."""
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == text:
            return False
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    if account is not None:
        os.chown(tmp, account.uid, account.gid)
    os.replace(tmp, path)
    return True
