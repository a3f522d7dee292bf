"""Durable collector state: the last read of every target plus the last batch sequence number.

Saved atomically (temp file, fsync, rename, fsync of the directory) after the batch of a cycle
is spooled, so that a `kill -9` at any point leaves either the old state (the spooled batch is
then discarded at start-up and the interval is covered again by the next read) or the new one.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import NamedTuple

from slurm_io.delta.engine import State

FORMAT_VERSION = 1


class CollectorState(NamedTuple):
    seq: int  # sequence number of the last batch handed to the spool (0: none yet)
    targets: State


def load(path: Path) -> CollectorState:
    """The saved state, or an empty one when there is none yet."""
    try:
        with open(path, "rb") as f:
            version, seq, targets = pickle.load(f)
    except FileNotFoundError:
        return CollectorState(0, {})
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: state format {version}, expected {FORMAT_VERSION}")
    return CollectorState(seq, targets)


def save(path: Path, state: CollectorState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump((FORMAT_VERSION, state.seq, state.targets), f, protocol=5)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
