"""The systemd units of docs/systemd pass `systemd-analyze verify` (with ExecStart pointed at
this checkout's installed `jobio`, since /opt/slurm-io does not exist here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNITS = sorted((Path(__file__).resolve().parents[2] / "docs/systemd").glob("*.service"))


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_unit_file_verifies(unit: Path, tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze missing (Debian package systemd)"
    jobio = Path(sys.executable).parent / "jobio"
    assert jobio.exists()
    copy = tmp_path / unit.name
    copy.write_text(unit.read_text().replace("/opt/slurm-io/.venv/bin/jobio", str(jobio)))
    proc = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_every_daemon_has_a_unit() -> None:
    assert {u.name for u in UNITS} >= {"jobio-collect.service", "jobio-serve.service",
                                       "jobio-report.service"}
