"""The live loop (`jobio collect`, `--once`) against a fake lctl printing recorded reads."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from slurm_io.report.usage import usage
from slurm_io.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
FAKE = Path(__file__).with_name("fake_lctl.py")


@pytest.fixture(scope="module")
def server_reads(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("live") / "cluster"
    simulate(out, seed=9, start=1_795_000_000.0, hours=0.5, n_nodes=8, n_oss=1,
             jobs_per_hour=16, outage=False)
    return out / "oss01"


def jobio(dsn: str, state: Path, reads: Path, *args: str, env: dict | None = None,
          **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "slurm_io.cli", "--dsn", dsn, "--state-dir", str(state),
           "collect", "--name", "oss01", "--command", f"{sys.executable} {FAKE} {reads}", *args]
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def totals(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return usage(conn, 0, time.time() + 86400).totals


def test_once_cycles_killed_or_failing_reads_still_add_up(server_reads, db_dsn, pg_dsn,
                                                          tmp_path):
    reads = tmp_path / "reads"
    shutil.copytree(server_reads, reads)
    files = sorted(reads.glob("*.txt"), key=lambda p: float(p.stem))
    state = tmp_path / "state"
    n_ok = 0
    for i in range(len(files)):
        if i == 4:  # killed with SIGKILL in the middle of its read
            p = jobio(db_dsn, state, reads, "--once", env={"FAKE_LCTL_SLEEP": "30"})
            time.sleep(2.0)
            p.send_signal(signal.SIGKILL)
            p.wait()
            continue
        if i == 7:  # lctl fails: the cycle is skipped, exit code 1, nothing stored
            p = jobio(db_dsn, state, reads, "--once", env={"FAKE_LCTL_FAIL": "1"})
            _, err = p.communicate(timeout=60)
            assert p.returncode == 1 and "read failed" in err
            continue
        p = jobio(db_dsn, state, reads, "--once")
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        n_ok += 1
    # what the live runs stored equals a replay of exactly the reads they got (the killed
    # and the failed read are covered by the next reads' longer intervals)
    subset = tmp_path / "subset" / "oss01"
    subset.mkdir(parents=True)
    for i, f in enumerate(files):
        if i not in (4, 7):
            shutil.copy(f, subset / f.name)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS live_replay")
        conn.execute("CREATE DATABASE live_replay")
    replay_dsn = make_conninfo(pg_dsn, dbname="live_replay")
    r = subprocess.run([sys.executable, "-m", "slurm_io.cli", "--dsn", replay_dsn, "--state-dir",
                        str(tmp_path / "replay-state"), "collect", "--from", str(subset.parent)],
                       env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got, expected = totals(db_dsn), totals(replay_dsn)
    assert got["read_bytes"] > 0 and got == expected
    with psycopg.connect(db_dsn) as conn:
        (batches,) = conn.execute("SELECT count(*) FROM ingest_batch").fetchone()
    assert batches == n_ok


def test_sigterm_finishes_the_running_cycle_and_exits(server_reads, db_dsn, tmp_path):
    reads = tmp_path / "reads"
    shutil.copytree(server_reads, reads)
    state = tmp_path / "state"
    p = jobio(db_dsn, state, reads, "--interval", "1")
    assert p.stderr is not None
    seen = 0
    for line in p.stderr:
        if " cycle oss01 " in line:
            seen += 1
            if seen == 2:
                break
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-2000:]
    assert "finishing the current cycle" in err
    with psycopg.connect(db_dsn) as conn:
        (batches,) = conn.execute("SELECT count(*) FROM ingest_batch").fetchone()
    assert batches >= 2
    assert not list((state / "spool").glob("*.batch"))
