"""Small POSIX helpers shared by the spools, the state file and the reporter (stdlib only:
the epilog hook imports this too and must stay light)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def fsync_dir(path: str | Path) -> None:
    """Make a rename or unlink in `path` durable (the directory entry itself)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def durable_replace(path: str | Path, mode: int = 0o600) -> Iterator[BinaryIO]:
    """Write a new `path` in place of the old one, durably and atomically.

    Yields a binary file for a hidden temporary file (`.<name>.<pid>.tmp`, which the spools'
    listings skip); when the block ends it is fsync'ed, renamed over `path` and the
    directory fsync'ed, so a crash or power cut leaves the old file or the new one, never a
    mix. If the block raises, the temporary file is removed and nothing is replaced.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
