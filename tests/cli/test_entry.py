"""Which command lines the console script runs without click (cli/entry.plain_show).

Only `jobio [--server URL] [show] JOBID...` with nothing else: every other word, option or
mistake goes to the click group, which parses, words and exits as it always did
(tests/site/test_plain_show.py compares the two paths' outputs byte for byte).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from slurm_io.cli.entry import plain_show


@pytest.mark.parametrize(("args", "plan"), [
    (["12345"], (None, ["12345"])),
    (["show", "12345"], (None, ["12345"])),
    (["123_4", "1853+1", "77.batch"], (None, ["123_4", "1853+1", "77.batch"])),
    (["--server", "https://h:8453", "12345"], ("https://h:8453", ["12345"])),
    (["--server=https://h:8453", "show", "12345"], ("https://h:8453", ["12345"])),
])
def test_a_plain_show_is_taken(args: list[str], plan: tuple) -> None:
    assert plain_show(args, {}) == plan


@pytest.mark.parametrize("args", [
    [], ["show"], ["--server", "https://h:8453"], ["-v", "12345"], ["12345", "-v"],
    ["12345", "--json"], ["show", "12345", "--targets"], ["--config", "x.toml", "12345"],
    ["--dsn", "dbname=x", "12345"], ["top"], ["12x"], ["1_2_3"], ["show", "-u", "alice"],
    ["--server", "--json", "12345"], ["--server=", "12345"], ["show", "show", "12345"],
    ["12345", "show"], ["--help"], ["--version"], ["١٢٣"],  # not ASCII digits
    ["99999999999999999999999"],  # a job id show_docs would refuse: the group's usage error
])
def test_anything_else_is_the_groups(args: list[str]) -> None:
    assert plain_show(args, {}) is None


def test_shell_completion_is_the_groups() -> None:
    assert plain_show(["12345"], {"_JOBIO_COMPLETE": "bash_complete"}) is None


def _ending(code: str, stdout: object = subprocess.PIPE) -> tuple[int, str | None, str]:
    proc = subprocess.run([sys.executable, "-c", code], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


PRINTS = ("import sys; from slurm_io.cli.entry import exit_now; print('report'); "
          "print('not found', file=sys.stderr); ")
TEARDOWN = "import atexit; atexit.register(lambda: print('teardown')); "


def test_the_plain_path_ends_with_its_output_and_status_without_teardown() -> None:
    """exit_now (issue 25): the buffered output of a pipe is written, the status kept, and
    the interpreter's ending (here an atexit handler) skipped."""
    assert _ending(TEARDOWN + PRINTS + "exit_now(1)") == (1, "report\n", "not found\n")
    assert _ending(TEARDOWN + PRINTS + "exit_now(0)") == (0, "report\n", "not found\n")


def test_output_that_cannot_be_written_ends_as_python_ends() -> None:
    """A stream whose flush fails (a full disk here) takes Python's own ending: the same
    status and the same report on stderr as sys.exit."""
    with open("/dev/full", "w") as full:
        new = _ending(PRINTS + "exit_now(1)", full)
        old = _ending(PRINTS + "sys.exit(1)", full)
    assert new == old and new[0] != 0 and "No space left on device" in new[2], new
