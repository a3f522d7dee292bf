"""A directory every OS account can enter: tests run commands as other users (the
embedded server's `postgres`, alice, the service account), who cannot enter pytest's own
temp root (/tmp/pytest-of-root is mode 0700)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def public_tmp_dir(prefix: str) -> Iterator[Path]:
    """A fresh 0755 directory directly under /tmp, removed with its contents afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
