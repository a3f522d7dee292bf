"""docs/deploy.md as a site follows it: the "Install per role" blocks run as written (the
fixtures run them), every role it documents installs, and its other commands use what
Debian has (`runuser`, no `sudo`) and keep the postgres account's own pg_hba line."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import needs
from tests.install.roles import DEPLOY_DOC, SERVER_ONLY, doc_blocks, importable

ROLES = ("collector", "hook", "client", "server")


def test_the_document_has_a_build_block_and_one_block_per_role() -> None:
    build, blocks = doc_blocks(DEPLOY_DOC.read_text())
    assert "pip\" wheel" in build and "$WHEELS" in build
    assert set(blocks) == set(ROLES)
    for role, block in blocks.items():
        assert f"'slurm-io[{role}]'" in block and "--no-index" in block
        assert "systemctl" not in block, role  # the tested blocks change no system state


@needs.root("the client's block runs `jobio` as nobody with runuser")
@pytest.mark.parametrize("role", ROLES)
def test_each_role_installs_as_written(role: str, role_bin: Callable[[str], Path]) -> None:
    bin_dir = role_bin(role)
    proc = subprocess.run([str(bin_dir / "jobio"), "--version"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0 and "version" in proc.stdout, proc.stderr
    server_modules = importable(bin_dir / "python", SERVER_ONLY)
    assert server_modules == (set(SERVER_ONLY) if role == "server" else set())


def _fenced(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block, in order."""
    blocks: list[tuple[str, str]] = []
    info: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if info is None and line.startswith("```"):
            info, body = line[3:].strip(), []
        elif info is not None and line.strip() == "```":
            blocks.append((info, "\n".join(body)))
            info = None
        elif info is not None:
            body.append(line)
    return blocks


def test_commands_run_as_other_accounts_with_runuser_and_pg_hba_keeps_postgres() -> None:
    blocks = _fenced(DEPLOY_DOC.read_text())
    commands = [line for info, body in blocks if info == "sh"
                for line in body.splitlines() if not line.lstrip().startswith("#")]
    assert not [c for c in commands if re.search(r"\bsudo\b", c)]
    assert any("runuser -u postgres -- psql" in c for c in commands)
    (hba,) = [body for info, body in blocks if "# TYPE" in body]
    rules = [line.split() for line in hba.splitlines() if line and not line.startswith("#")]
    assert rules[0][:4] == ["local", "all", "postgres", "peer"]  # first match wins
    assert not [c for c in commands if re.search(r"pip install slurm-io\b", c)]  # not on PyPI
