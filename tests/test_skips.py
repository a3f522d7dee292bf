"""Under scripts/test.sh nothing may skip, except tests that read ../shared when it is absent.

Runs pytest itself (a subprocess, this checkout's conftest) on probe tests and on the real
tests that read ../shared, with $SLURM_IO_SHARED pointing at a path that does not exist (a
fresh clone) or at one that does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = '''
import pytest


def test_reads_shared(shared_dir):
    assert shared_dir.is_dir()


def test_skips_for_another_reason():
    pytest.skip("chromium is not installed")


def test_says_shared_is_absent():
    pytest.skip("../shared is absent")
'''


def pytest_run(*args: str, shared: str, forbid: bool = True, plugin: bool = True
               ) -> tuple[int, dict[str, int]]:
    """pytest on `args`; `plugin`: load tests/conftest.py for files outside tests/."""
    env = {**os.environ, "SLURM_IO_SHARED": shared}
    env.pop("SLURM_IO_FORBID_SKIPS", None)
    if forbid:
        env["SLURM_IO_FORBID_SKIPS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *(["-p", "tests.conftest"] if plugin else []), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    summary = proc.stdout.strip().splitlines()[-1]
    return proc.returncode, {k: int(n) for n, k in re.findall(r"(\d+) (\w+)", summary)}


def test_without_shared_only_the_tests_reading_it_skip(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    code, counts = pytest_run(str(tmp_path / "test_probe.py"), shared=str(tmp_path / "none"))
    # chromium's skip fails; the two that give ../shared's absence as their reason skip
    assert counts == {"failed": 1, "skipped": 2}, counts
    assert code == 1
    code, counts = pytest_run(str(tmp_path / "test_probe.py"), shared=str(tmp_path / "none"),
                              forbid=False)
    assert counts == {"skipped": 3}, counts


def test_with_shared_present_its_tests_run_and_no_skip_passes(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    code, counts = pytest_run(str(tmp_path / "test_probe.py"), shared=str(tmp_path))
    assert counts == {"failed": 2, "passed": 1} and code == 1, counts


def test_the_real_shared_tests_pass_under_test_sh_on_a_fresh_clone() -> None:
    files = ["tests/parse/test_conformance.py", "tests/parse/test_render.py",
             "tests/jobs/test_sacct.py", "tests/jobs/test_store.py"]
    code, counts = pytest_run(*files, "-k", "shared or synth or real_22_05",
                              shared="/nonexistent/shared", plugin=False)
    assert code == 0 and counts.get("skipped", 0) >= 7 and "failed" not in counts, counts
