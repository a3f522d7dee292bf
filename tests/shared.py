"""`../shared` (real captures and Slurm outputs beside the checkout): where it is, and the one
skip scripts/test.sh allows.

CI has the folder beside the checkout; a newcomer's fresh clone does not. Tests that read it
skip, with SHARED_ABSENT as their reason, when (and only when) it is absent; tests/conftest.py
lets exactly those skips through under SLURM_IO_FORBID_SKIPS. When the folder is there, a
file missing from it is a failure, not a skip. $SLURM_IO_SHARED names another location (a
worktree whose ../shared is elsewhere, or a path that does not exist, to check the skips).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

SHARED_ENV = "SLURM_IO_SHARED"
SHARED = Path(os.environ.get(SHARED_ENV) or Path(__file__).resolve().parents[2] / "shared")
SHARED_ABSENT = "../shared is absent"  # the prefix tests/conftest.py lets through
PRESENT = SHARED.is_dir()
REASON = f"{SHARED_ABSENT} ({SHARED}; ${SHARED_ENV} names another place)"

requires_shared = pytest.mark.skipif(not PRESENT, reason=REASON)


def shared_file(*parts: str) -> Path:
    """A path in ../shared that must exist when ../shared does (skips when it does not)."""
    if not PRESENT:
        pytest.skip(REASON)
    path = SHARED.joinpath(*parts)
    assert path.exists(), f"{path} is missing from {SHARED}"
    return path


def shared_params(paths: list[Path]) -> list[Any]:
    """Parameters for a test over files of ../shared: one skipped placeholder when it is
    absent (an empty parameter set would skip with pytest's own reason)."""
    if not PRESENT:
        return [pytest.param(None, marks=requires_shared, id="shared-absent")]
    assert paths, f"no files found for this test in {SHARED}"
    return paths
