"""Every child process slurm-io starts goes through here: one door, always with a timeout.

Why one helper: sacct/scontrol (the Slurm seam), munge/unmunge (the exec fallback of
slurm_io.munge), the embedded PostgreSQL's tools and useradd, and the collector's `lctl`
each started their processes their own way; one forgot stdin, one had no timeout. Here a
child always gets stdin from /dev/null (unless input is given), its output captured, and a
deadline after which it is killed (subprocess.run's own kill-and-wait). Each caller keeps its
own words for what went wrong: this module only raises what subprocess raises --
`OSError` when the program cannot be started, `Timeout` when it did not end in time -- and
`Failed` from `stream` for a non-zero exit.

A leaf (standard library only, imports nothing of slurm_io): the job-end hook reaches it
through slurm.hookcall and must stay fast (docs/architecture.md). Not here: the hook's
detaching fork and the service's worker forks, which start no program.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

Timeout = subprocess.TimeoutExpired
Completed = subprocess.CompletedProcess


class Failed(Exception):
    """A streamed program ended with a non-zero exit status (`stream`)."""

    def __init__(self, returncode: int, stderr: str) -> None:
        super().__init__(f"exit {returncode}: {stderr}")
        self.returncode = returncode
        self.stderr = stderr


def run(argv: Sequence[str], *, timeout: float, input: bytes | str | None = None,
        env: Mapping[str, str] | None = None, text: bool = False,
        errors: str | None = None, **popen: Any) -> Completed[Any]:
    """Run `argv` to its end and return it with stdout and stderr captured; never checks
    the exit status (the caller words the failure). `text`: decoded as UTF-8 with `errors`
    (default strict). `popen`: further Popen arguments (cwd, user, group, extra_groups).
    Raises OSError (cannot start) or Timeout (killed after `timeout` seconds)."""
    return subprocess.run(
        list(argv), input=input, capture_output=True, timeout=timeout, check=False,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL if input is None else None,
        **({"encoding": "utf-8", "errors": errors or "strict"} if text else {}),
        **popen,
    )


def stream(argv: Sequence[str], *, timeout: float, piece: int = 1 << 20,
           started: float | None = None) -> Iterator[bytes]:
    """The stdout of `argv` in pieces of at most `piece` bytes while it runs (bounded
    memory: lctl's job_stats may be hundreds of MB). The whole run, output and exit, must
    end by `started + timeout` (`started`: time.time() when the caller sampled, default
    now): a watchdog kills the child then, even one that hangs without printing a byte, and
    Timeout is raised. A non-zero exit raises Failed with its stderr. OSError when it cannot
    start (raised at the first `next`)."""
    deadline = (time.time() if started is None else started) + timeout
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    expired = threading.Event()

    def kill() -> None:
        expired.set()
        proc.kill()

    watchdog = threading.Timer(max(0.0, deadline - time.time()), kill)
    watchdog.daemon = True
    watchdog.start()
    try:
        while True:
            chunk = proc.stdout.read(piece)
            if not chunk or expired.is_set():
                break
            yield chunk
        err = proc.stderr.read().decode(errors="replace")
        rc = proc.wait()
    finally:
        watchdog.cancel()
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if expired.is_set():
        raise Timeout(list(argv), timeout)
    if rc != 0:
        raise Failed(rc, err)
