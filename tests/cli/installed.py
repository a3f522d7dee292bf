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


def command_for(user: str, runuser: str) -> tuple[list[str], dict[str, str]]:
    """How OS account `user` runs this installed `jobio`: (argv prefix, extra environment).

    The venv's script itself when `user` can run it (a venv made from /usr/bin/python3, as
    scripts/setup.sh does on Debian); else, when the venv's interpreter is out of the user's
    reach (a Python under /root, as on CI), the same script with the system Python of the
    same release and the venv's packages. No skip: one of the two works wherever the suite
    runs.
    """
    import sysconfig

    repo = Path(__file__).resolve().parents[2]
    tries: list[tuple[list[str], dict[str, str]]] = [([JOBIO], {})]
    system = f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"
    if os.access(system, os.X_OK):
        tries.append(([system, JOBIO],
                      {"PYTHONPATH": f"{repo}:{sysconfig.get_paths()['purelib']}"}))
    for argv, env in tries:
        probe = subprocess.run([runuser, "-u", user, "--", "env", *(f"{k}={v}" for k, v in
                                                                    env.items()),
                                *argv, "--version"], capture_output=True, text=True,
                               check=False, cwd="/")
        if probe.returncode == 0:
            return argv, env
    raise AssertionError(f"{user} can run neither {JOBIO} nor it with {system}")
