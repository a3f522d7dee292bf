"""Running the installed `jobio` (the venv's console script) as a person would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

JOBIO = str(Path(sys.executable).parent / "jobio")


def jobio(*args: str, env: dict[str, str] | None = None, drop: tuple[str, ...] = (),
          timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`jobio ARGS` in a subprocess; `env` adds variables, `drop` removes them."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run([JOBIO, *args], env={**full, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout, check=False)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """A person's mistake: a non-zero exit, one line on stderr naming it, no traceback."""
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
