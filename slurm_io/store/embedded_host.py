"""What the embedded PostgreSQL needs from this host: the account it runs as, the directories
it lives in, and the processes of its tools.

Apart from embedded.py (the server's life cycle: init, start, stop, status under a lock)
because this is where the operating system's rules live: who owns what, who may enter
where, how a tool runs as another account with a clean environment. Each function takes the
paths it works on; nothing here knows the order in which the server is set up.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
from pathlib import Path

from slurm_io import procs
from slurm_io.store.embedded_setup import (
    FALLBACK_ACCOUNT,
    SERVICE_ACCOUNT,
    Account,
    EmbeddedPostgresError,
    create_system_account,
)


def make_state_dir(state_dir: Path) -> None:
    """Create the state directory; as root make what we create enterable (0755)."""
    missing: list[Path] = []
    path = state_dir
    while not path.exists():
        missing.append(path)
        path = path.parent
    mode = 0o755 if os.geteuid() == 0 else 0o700
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir()
            os.chmod(path, mode)


def prepare_dirs(pg_dir: Path, socket_dir: Path, log_dir: Path, data_dir: Path
                 ) -> Account | None:
    """Create pg/ (0711), run/ (0755) and log/ (0700), owned by the server account.

    run/ is open to every local user because authentication is `peer` (see embedded.py's
    docstring); pg/ lets them pass through to it without listing it.
    """
    account = server_account(data_dir)
    for path, mode in ((pg_dir, 0o711), (socket_dir, 0o755), (log_dir, 0o700)):
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, mode)
        if account is not None:
            st = path.stat()
            if (st.st_uid, st.st_gid) != (account.uid, account.gid):
                os.chown(path, account.uid, account.gid)
    if account is not None:
        check_traversable(pg_dir, account)
    return account


def server_account(data_dir: Path) -> Account | None:
    """The account to run the server as; None means the current (non-root) user.

    An existing cluster keeps running as the owner of its data directory; a new one uses
    `postgres`, or a `slurmio` system account when `postgres` does not exist.
    """
    if os.geteuid() != 0:
        return None
    if data_dir.exists():
        uid = data_dir.stat().st_uid
        if uid == 0:
            raise EmbeddedPostgresError(
                f"{data_dir} is owned by root; PostgreSQL cannot run as root"
            )
        return Account.from_pwd(pwd.getpwuid(uid))
    try:
        entry = pwd.getpwnam(SERVICE_ACCOUNT)
    except KeyError:
        try:
            entry = pwd.getpwnam(FALLBACK_ACCOUNT)
        except KeyError:
            entry = create_system_account(FALLBACK_ACCOUNT)
    return Account.from_pwd(entry)


def check_traversable(pg_dir: Path, account: Account) -> None:
    """Fail clearly when the server account cannot reach pg/ (we never chmod parents)."""
    for parent in pg_dir.parents:
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


def running_pid(data_dir: Path) -> int | None:
    """Pid of the live postmaster of this data dir, read from postmaster.pid.

    Cheaper than `pg_ctl status` (no subprocess), which matters because every `jobio`
    invocation using the embedded default passes through here. A pid file left by a
    crash or reboot is recognised by its pid being gone or not being a postgres process.
    """
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
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


def run_tool(cmd: list[str], account: Account | None, *, cwd: Path, log_dir: Path,
             what: str) -> None:
    """Run a PostgreSQL tool, as `account` when we are root, with a clean environment;
    a failure says what it could not do, with the tool's words and the server log's tail."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C",
        "LANG": "C",
    }
    kwargs: dict[str, object] = {}
    if account is not None:
        home = account.home if os.path.isdir(account.home) else str(cwd)
        env.update(HOME=home, USER=account.name, LOGNAME=account.name)
        kwargs = {"user": account.uid, "group": account.gid,
                  "extra_groups": list(account.groups)}
    else:
        env["HOME"] = os.environ.get("HOME", str(cwd))
    try:
        proc = procs.run(cmd, env=env, cwd=cwd, text=True, timeout=600,
                         **kwargs)
    except (OSError, procs.Timeout) as exc:
        raise EmbeddedPostgresError(f"cannot {what}: {exc}") from exc
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise EmbeddedPostgresError(
            f"cannot {what} (exit {proc.returncode}): {detail}{log_tail(log_dir)}"
        )


def log_tail(log_dir: Path, lines: int = 15) -> str:
    """Last lines of the newest server log, to put the real cause into error messages."""
    try:
        logs = sorted(log_dir.glob("*.log"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return ""
    if not logs:
        return ""
    try:
        tail = logs[-1].read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return f"\n--- {logs[-1]} ---\n" + "\n".join(tail)
