"""`jobio attribute` commits chunk by chunk (issue 26): a run killed between chunks keeps the
chunks it committed, the next run does the rest, and the figures are those of one
uninterrupted run; its memory does not grow with the backlog.

The same dense simulated cluster as test_batch (task farms: ambiguous `:uid:host` deltas
split by evidence, so the splits cache spans chunks), replayed into a real PostgreSQL; the
killed run is the real command in its own process, killed by SIGKILL in its third chunk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tracemalloc

import psycopg
import pytest

from slurm_io.attribute import batch, stored
from slurm_io.attribute.stored import pending_jobs
from tests.attribute.simulated import DENSE_START, load, small_dense_cluster

START = DENSE_START
SINCE = "2026-01-01"  # before the simulated cluster: every finished job is pending
CHUNK = 5
FIELDS = ("totals", "recovered", "ambiguous", "split", "by_target", "by_node", "timeline",
          "quality", "n_direct", "n_recovered", "by_evidence", "by_time", "complete")

# `jobio attribute` with small chunks, killed (SIGKILL: no clean-up of any kind) while it
# stores its third chunk, after two chunks were committed
_KILLED_RUN = f"""
import os, signal, sys
from slurm_io.attribute import batch, stored
batch.CHUNK = {CHUNK}
calls = []
real = stored.store_many
def store_many(conn, results, newest):
    calls.append(1)
    real(conn, results, newest)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
stored.store_many = store_many
from slurm_io.cli import main
sys.argv = ["jobio", "attribute", "--since", "{SINCE}"]
main()
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    return small_dense_cluster(tmp_path_factory.mktemp("chunks") / "cluster")


@pytest.fixture
def loaded(cluster, db_dsn, tmp_path):
    return load(cluster, db_dsn, tmp_path)


def _figures(conn: psycopg.Connection) -> dict[int, tuple]:
    cols = ", ".join(FIELDS)
    return {r[0]: r[1:] for r in conn.execute(f"SELECT job, {cols} FROM job_io ORDER BY job")}


def _hours(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT job, hour, fs, kind, uid, totals, recovered FROM job_io_hour "
                        "ORDER BY job, hour, fs, kind").fetchall()


def _jobio_attribute(dsn: str, script: str | None = None) -> subprocess.CompletedProcess:
    argv = ([sys.executable, "-c", script] if script else
            [sys.executable, "-m", "slurm_io.cli", "attribute", "--since", SINCE])
    return subprocess.run(argv, env={**os.environ, "SLURM_IO_DSN": dsn}, capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_killed_run_keeps_its_chunks_and_the_next_run_finishes(loaded, monkeypatch):
    with psycopg.connect(loaded) as conn:
        order = [j.job for j in pending_jobs(conn, 0)]
    assert len(order) > 4 * CHUNK
    # the reference: one uninterrupted run (what one transaction held before)
    done = _jobio_attribute(loaded)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(loaded) as conn:
        whole, whole_hours = _figures(conn), _hours(conn)
        conn.execute("DELETE FROM job_io_hour")
        conn.execute("DELETE FROM job_io")
        conn.commit()
    assert set(whole) == set(order)

    killed = _jobio_attribute(loaded, _KILLED_RUN)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with psycopg.connect(loaded) as conn:
        kept = _figures(conn)
    # exactly the first two chunks, as the uninterrupted run computed them
    assert sorted(kept) == sorted(order[:2 * CHUNK])
    assert kept == {j: whole[j] for j in kept}

    again = _jobio_attribute(loaded)
    assert again.returncode == 0, again.stderr
    assert f"attributed {len(order) - 2 * CHUNK} job(s)" in again.stdout
    with psycopg.connect(loaded) as conn:
        assert _figures(conn) == whole
        assert _hours(conn) == whole_hours


def test_chunks_and_pages_give_the_figures_of_one_chunk(loaded, monkeypatch):
    """Many chunks and pages (the splits cache dropping what no later job can ask for) store
    what one chunk holding every job stores."""
    with psycopg.connect(loaded) as conn:
        monkeypatch.setattr(batch, "CHUNK", 10_000)
        n_all, _ = batch.attribute_pending(conn, 0, now=START + 86400)
        one = _figures(conn)
        conn.execute("DELETE FROM job_io_hour")
        conn.execute("DELETE FROM job_io")
        conn.commit()
        monkeypatch.setattr(batch, "CHUNK", 3)
        n, _ = batch.attribute_pending(conn, 0, now=START + 86400)
        assert n == n_all == len(one)
        assert _figures(conn) == one


def test_memory_is_flat_whatever_the_backlog(cluster, db_dsn, tmp_path, monkeypatch):
    """Attributing the jobs of the simulation's last hour (a backlog of an hour) and of both
    hours: the run holds one page of jobs, one chunk's inputs and the splits of the jobs
    around the current end time, never the backlog (before, the whole list of jobs and every
    split of the run were held to the end). At this size Python's peak is mostly one chunk's
    inputs, so what is compared is what the run keeps from chunk to chunk: the cached
    splits, and the jobs of a page."""
    dsn = load(cluster, db_dsn, tmp_path)
    monkeypatch.setattr(batch, "CHUNK", 2)
    kept: list[int] = []
    forget = batch._forget_settled

    def counting(splits, *args):
        forget(splits, *args)
        kept.append(len(splits))

    monkeypatch.setattr(batch, "_forget_settled", counting)
    pages: list[int] = []
    real_pages = stored.pending_pages

    def counted_pages(*args, **kw):
        for page in real_pages(*args, **kw):
            pages.append(len(page))
            yield page

    monkeypatch.setattr(stored, "pending_pages", counted_pages)
    peaks, counts, most = {}, {}, {}
    with psycopg.connect(dsn) as conn:
        for name, since in (("last hour", START + 3600), ("both hours", 0)):
            conn.execute("DELETE FROM job_io_hour")
            conn.execute("DELETE FROM job_io")
            conn.commit()
            kept.clear()
            pages.clear()
            tracemalloc.start()
            counts[name], _ = batch.attribute_pending(conn, since, now=START + 86400)
            peaks[name] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            most[name] = max(kept)
            assert max(pages) <= 4 * batch.CHUNK and len(pages) > 3
            assert kept[-1] < max(kept)  # settled splits were dropped
    assert counts["both hours"] > 1.4 * counts["last hour"] > 0, counts
    assert most["both hours"] < 1.2 * most["last hour"], most
    assert peaks["both hours"] < 1.2 * peaks["last hour"], peaks
