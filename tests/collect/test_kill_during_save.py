"""kill -9 in the middle of a state save, made exact with strace's fault injection.

A SIGKILL at a random moment rarely lands inside the few writes of a save, so the moment is
pinned: strace holds one system call of the save (`-P` matches only the state's files, and
`inject=SYSCALL:delay_enter=...:when=N` delays the N-th matching call) and the test kills the
collector while it waits there. Two moments: between the frames of a journal record (the head
written, its entries not: a torn record on disk), and after a new snapshot has replaced the
state but before the journal it supersedes is removed (both on disk, the journal's records
older than the snapshot). The collector is then run
again to the end; the rows must be exactly those of an undisturbed run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from slurm_io.delta.state_store import SNAPSHOT_EVERY, StateStore
from slurm_io.simulate import simulate
from tests.collect.test_collector import stored_rows
from tests.collect.test_faults import JOBIO, START, cut, undisturbed  # noqa: F401 (fixture)

HOLD_US = 60_000_000  # the held call waits a minute: far longer than the test needs


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    """Reads enough for a second snapshot (one every SNAPSHOT_EVERY saves) of each server."""
    out = tmp_path_factory.mktemp("killsave") / "cluster"
    hours = (SNAPSHOT_EVERY + 10) * 120 / 3600
    simulate(out, seed=11, start=START, hours=hours, n_nodes=8, n_oss=2, jobs_per_hour=14)
    return out


def _held_run(args: list[str], path: Path, syscalls: str, when: int) -> subprocess.Popen:
    """`jobio` under strace, the `when`-th of `syscalls` on `path` held for HOLD_US."""
    strace = ["strace", "-f", "-qq", "-o", "/dev/null", "-P", str(path), "-e",
              f"trace={syscalls}", "-e", f"inject={syscalls}:delay_enter={HOLD_US}:when={when}"]
    return subprocess.Popen([*strace, *map(str, args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 120) -> None:
    """SIGKILL the whole run (strace and jobio) once `ready()` says it waits in the save."""
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            assert proc.poll() is None, "the collector ended before reaching the held call"
            assert time.monotonic() < deadline, "the held call was never reached"
            time.sleep(0.05)
        time.sleep(0.5)  # it is inside the held call now (held for a minute)
        assert proc.poll() is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _finish(args: list[str]) -> None:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_kill_9_between_the_frames_of_a_journal_record_loses_and_doubles_nothing(
        cluster, undisturbed, db_dsn, tmp_path):  # noqa: F811
    state = tmp_path / "state"
    args = [JOBIO, "--dsn", db_dsn, "--state-dir", state, "collect", "--from", cluster]
    journal = Path(str(cut(state)) + ".journal")
    # writev #1 of the journal is the first record's head frame, #2 its first entries
    proc = _held_run(args, journal, "writev", when=2)
    _kill_when(proc, lambda: journal.exists() and journal.stat().st_size > 0)

    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy2(cut(state), copy / "oss01.state")
    shutil.copy2(journal, copy / "oss01.state.journal")
    store = StateStore(copy / "oss01.state")
    store.load()
    assert store.torn_records == 1, "the kill did not leave a torn journal record"

    _finish(args)
    assert stored_rows(db_dsn) == undisturbed


def test_kill_9_between_a_new_snapshot_and_the_removal_of_its_journal_loses_and_doubles_nothing(
        cluster, undisturbed, db_dsn, tmp_path):  # noqa: F811
    state = tmp_path / "state"
    args = [JOBIO, "--dsn", db_dsn, "--state-dir", state, "collect", "--from", cluster]
    snapshot = cut(state)
    journal = Path(str(snapshot) + ".journal")
    # a snapshot replaces the state (temp file, fsync, rename), then removes the journal it
    # supersedes: held at that removal, the new snapshot and the old journal are both there
    # (unlink #1 is the first snapshot's, which finds no journal yet)
    proc = _held_run(args, journal, "unlink,unlinkat", when=2)
    seen: dict[str, int] = {}

    def held() -> bool:
        if not (snapshot.exists() and journal.exists()):
            return False
        seen["snapshot_seq"] = _seq(snapshot)
        return seen["snapshot_seq"] > 1  # the first snapshot had no journal before it

    _kill_when(proc, held)
    assert journal.exists(), "the kill did not come before the journal's removal"

    _finish(args)
    assert stored_rows(db_dsn) == undisturbed


def _seq(snapshot: Path) -> int:
    from slurm_io.delta import state_file

    try:
        return state_file.load(snapshot).seq
    except (ValueError, OSError):
        return 0
