"""slurm-io installed per role exactly as docs/deploy.md's "Install per role" says.

The section's fenced `sh` blocks are run as written: the build block (every wheel, from
pip's cache after the first time, into $WHEELS) in a copy of this checkout, then each
`# role: NAME` block with PREFIX set to a directory of the caller's. Every role's venv
installs from $WHEELS with `--no-index`, as a site's servers do: no download per venv.
Shared by tests/install and bench/bench_install.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what only the database host needs: none of it on a collector, the hook or a client
SERVER_ONLY = ("matplotlib", "jinja2", "urwid", "h11", "prometheus_client")
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
SECTION = "## Install per role"
_BLOCK_RE = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_ROLE_RE = re.compile(r"^# role: (\w+)")


def doc_blocks(text: str) -> tuple[str, dict[str, str]]:
    """The build block and the per-role blocks of docs/deploy.md's "Install per role"."""
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    blocks = _BLOCK_RE.findall(text[start:end if end >= 0 else len(text)])
    build = [b for b in blocks if not _ROLE_RE.match(b)]
    roles = {m.group(1): b for b in blocks if (m := _ROLE_RE.match(b))}
    if len(build) != 1:
        raise ValueError(f"{SECTION}: expected one build block, found {len(build)}")
    return build[0], roles


def run_block(block: str, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One fenced block as a person pastes it: bash, stopping at the first failing command."""
    full = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": os.environ.get("HOME", "/root"), "LC_ALL": "C.UTF-8", **env}
    return subprocess.run(["/bin/bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=full,
                          capture_output=True, text=True, check=False, timeout=900)


def checkout_copy(dest: Path) -> Path:
    """This checkout without its venv, VCS and caches: what a site clones or unpacks."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".venv", ".git", "out", "__pycache__", "*.egg-info", "build", ".pytest_cache",
        ".ruff_cache", ".hypothesis"))
    return dest


def build_as_documented(work: Path) -> Path:
    """The build block, run in a copy of the checkout: returns $WHEELS (work/wheels)."""
    build, _ = doc_blocks(DEPLOY_DOC.read_text())
    src, wheels = checkout_copy(work / "checkout"), work / "wheels"
    try:
        proc = run_block(build, cwd=src, env={"WHEELS": str(wheels)})
    finally:
        shutil.rmtree(src, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the build block failed: {proc.stderr[-3000:]}")
    return wheels


def install_as_documented(wheels: Path, role: str, prefix: Path) -> Path:
    """The block of `role`, run with PREFIX=`prefix`: returns the venv's bin/."""
    _, blocks = doc_blocks(DEPLOY_DOC.read_text())
    proc = run_block(blocks[role], cwd=prefix.parent,
                     env={"WHEELS": str(wheels), "PREFIX": str(prefix)})
    if proc.returncode != 0:
        raise RuntimeError(f"the {role} block failed: {proc.stderr[-3000:]}")
    return prefix / "bin"


def importable(python: Path, modules: tuple[str, ...]) -> set[str]:
    """Which of `modules` the interpreter `python` can import."""
    code = ("import importlib.util, sys\n"
            "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))")
    proc = subprocess.run([str(python), "-c", code, *modules], capture_output=True,
                          text=True, check=True)
    return set(proc.stdout.split())
