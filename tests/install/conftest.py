"""Fixtures of the per-role install tests: docs/deploy.md's "Install per role" followed once
per session (the wheels, then each role's venv on first use) in a 0755 directory under /tmp,
so that an unprivileged user can run the client as on a login node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.install.roles import build_as_documented, install_as_documented
from tests.public_dirs import public_tmp_dir


@pytest.fixture(scope="session")
def install_dir() -> Iterator[Path]:
    with public_tmp_dir("slurm-io-install-") as path:
        yield path


@pytest.fixture(scope="session")
def wheels(install_dir: Path) -> Path:
    """$WHEELS as the document's build block leaves it."""
    return build_as_documented(install_dir)


@pytest.fixture(scope="session")
def role_bin(install_dir: Path, wheels: Path) -> Callable[[str], Path]:
    """role -> the bin/ of its venv, installed by the document's block for it (once)."""
    done: dict[str, Path] = {}

    def get(role: str) -> Path:
        if role not in done:
            done[role] = install_as_documented(wheels, role, install_dir / role)
        return done[role]

    return get
