"""slurm_io.procs, the one door for child processes: real programs, real timeouts.

No timing is asserted: a timeout is checked by its outcome (the child is killed and Timeout
raised), never by how long anything took.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from slurm_io import procs
from slurm_io.collect.source import LctlError, read_lctl

PY = sys.executable


def test_run_captures_output_and_exit_status_without_checking() -> None:
    done = procs.run([PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); "
                           "sys.exit(3)"], timeout=60, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_run_gives_the_child_no_stdin_unless_asked() -> None:
    code = "import sys; print(repr(sys.stdin.read()))"
    assert procs.run([PY, "-c", code], timeout=60, text=True).stdout == "''\n"
    assert procs.run([PY, "-c", code], input=b"payload", timeout=60).stdout == b"'payload'\n"


def test_run_passes_exactly_the_environment_given() -> None:
    done = procs.run([PY, "-c", "import os; print(sorted(k for k in os.environ "
                                "if k.startswith('SEAM')))"],
                     env={"SEAM_A": "1", "PATH": os.environ.get("PATH", "")}, timeout=60,
                     text=True)
    assert done.stdout == "['SEAM_A']\n"


def test_run_keeps_undecodable_bytes_when_told() -> None:
    done = procs.run([PY, "-c", "import sys; sys.stdout.buffer.write(b'a\\xffb')"],
                     timeout=60, text=True, errors="surrogateescape")
    assert done.stdout == "a\udcffb"


def test_a_program_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    with pytest.raises(procs.Timeout):
        procs.run([PY, "-c", code], timeout=3)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped: subprocess.run killed and waited for it


def test_a_missing_program_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        procs.run([str(tmp_path / "nothing-here")], timeout=60)
    with pytest.raises(FileNotFoundError):
        list(procs.stream([str(tmp_path / "nothing-here")], timeout=60))


def test_stream_yields_all_output_in_bounded_pieces() -> None:
    data = procs.stream([PY, "-c", "import sys; sys.stdout.write('x' * 100000)"], timeout=60,
                        piece=4096)
    pieces = list(data)
    assert b"".join(pieces) == b"x" * 100000
    assert max(map(len, pieces)) <= 4096


def test_stream_reports_a_failed_program_with_its_stderr() -> None:
    with pytest.raises(procs.Failed) as e:
        list(procs.stream([PY, "-c", "import sys; print('partial'); "
                               "sys.exit('lctl: no such parameter')"], timeout=60))
    assert e.value.returncode == 1 and "lctl: no such parameter" in e.value.stderr


def test_stream_kills_a_program_that_outlives_its_deadline(tmp_path: Path) -> None:
    """Also one that prints something and then hangs silently (a blocked read)."""
    pid_file = tmp_path / "pid"
    code = (f"import os, sys, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
            "print('x', flush=True); time.sleep(600)")
    with pytest.raises(procs.Timeout):
        list(procs.stream([PY, "-c", code], timeout=3))
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_the_collector_words_lctl_failures_as_before(tmp_path: Path) -> None:
    """collect.source keeps its LctlError lines through procs.stream."""
    with pytest.raises(LctlError, match=r"^cannot run '/nonexistent/lctl': "):
        read_lctl("/nonexistent/lctl get_param *.*.job_stats", 60)
    script = tmp_path / "lctl"
    script.write_text(f"#!{PY}\nimport sys\nsys.exit('error: get_param: no match')\n")
    script.chmod(0o755)
    with pytest.raises(LctlError, match=r"lctl exited 1: error: get_param: no match$"):
        read_lctl(f"{script} get_param obdfilter.*.job_stats", 60)
    hang = tmp_path / "hang"
    hang.write_text(f"#!{PY}\nimport time\ntime.sleep(600)\n")
    hang.chmod(0o755)
    with pytest.raises(LctlError, match=r"did not finish within 1 s"):
        read_lctl(str(hang), 1)
