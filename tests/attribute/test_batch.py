"""The batch path (`jobio attribute`: inputs of many jobs fetched by set-based queries, results
stored in bulk) gives every job exactly the figures it gets attributed alone.

A dense simulated cluster, and its leaky form (task farms: several jobs of a user per node,
so ambiguous `:uid:host` deltas split by evidence), collected through the real replay path
into a real PostgreSQL.
"""

from __future__ import annotations

import psycopg
import pytest

from slurm_io.attribute import batch
from slurm_io.attribute import evidence as rules
from slurm_io.attribute.batch import attribute_job
from slurm_io.attribute.leaks import leaks_first
from slurm_io.attribute.stored import pending_jobs, stored_job_io
from tests.attribute.simulated import DENSE_START, load, small_dense_cluster

START = DENSE_START
NOW = START + 86400
FIELDS = ("totals", "recovered", "ambiguous", "split", "by_target", "by_node", "timeline",
          "quality", "n_direct", "n_recovered", "by_evidence", "by_time")


@pytest.fixture(scope="module", params=["dense", "leaky"])
def cluster(request, tmp_path_factory):
    # leaky: the leaks' fit (attribute.leaks) reads the node's blind deltas around a delta,
    # which each job's own fetch must hold as the batch's does
    return small_dense_cluster(tmp_path_factory.mktemp("batch") / "cluster", request.param)


@pytest.fixture
def loaded(cluster, db_dsn, tmp_path):
    return load(cluster, db_dsn, tmp_path)


def test_batch_stores_what_each_job_gets_alone(loaded, monkeypatch):
    monkeypatch.setattr(batch, "CHUNK", 7)  # many chunks: jobs and competitors across them
    with psycopg.connect(loaded) as conn:
        jobs = pending_jobs(conn, 0)
        assert len(jobs) > 3 * batch.CHUNK
        n, _ = batch.attribute_jobs(conn, jobs, now=NOW)
        assert n == len(jobs)
        splits: dict = {}  # one cache for the batch, as the batch keeps it
        evidence = 0
        for info in jobs:
            alone = attribute_job(conn, info.window, now=NOW, splits=splits)
            stored = stored_job_io(conn, info.job)
            assert stored is not None
            assert {f: getattr(stored.io, f) for f in FIELDS} == \
                {f: getattr(alone, f) for f in FIELDS}, info.job
            evidence += bool(alone.by_evidence)
        (hours,) = conn.execute("SELECT count(DISTINCT job) FROM job_io_hour").fetchone()
        (with_io,) = conn.execute("SELECT count(*) FROM job_io WHERE totals <> '{}'").fetchone()
    # the scenario exercises the evidence rules, and every job with I/O has its hours
    assert evidence >= 3
    assert hours == with_io > 0


def test_a_second_batch_revises_only_what_changed(loaded):
    with psycopg.connect(loaded) as conn:
        jobs = pending_jobs(conn, 0)
        batch.attribute_jobs(conn, jobs, now=NOW)
        conn.execute("UPDATE job_io SET totals = '{\"write_bytes\": 1}' WHERE job = %s",
                     (jobs[0].job,))
        conn.commit()
        batch.attribute_jobs(conn, jobs + jobs[:1], now=NOW)  # a job given twice: stored once
        revs = dict(conn.execute("SELECT job, revision FROM job_io").fetchall())
    assert revs.pop(jobs[0].job) == 2
    assert set(revs.values()) == {1}


def test_a_job_attributed_alone_without_the_batch_cache_gets_the_same_splits(
        loaded, request, monkeypatch):
    # `jobio show` of one job weighs every ambiguous delta itself, from its own fetch: the
    # evidence its rules read (the candidates' rows, the blind stretches around a delta:
    # attribute.phases rebuilds each candidate's phase from them; the blind deltas the
    # leaks' fit reads) must give the same split
    fired = []

    def counted(*args):
        out = leaks_first(*args)
        fired.append(out is not None)
        return out

    monkeypatch.setattr(rules, "leaks_first", counted)
    with psycopg.connect(loaded) as conn:
        jobs = pending_jobs(conn, 0)
        batch.attribute_jobs(conn, jobs, now=NOW)
        by_evidence = 0
        for info in jobs:
            alone = attribute_job(conn, info.window, now=NOW)
            stored = stored_job_io(conn, info.job)
            assert stored is not None
            assert {f: getattr(stored.io, f) for f in FIELDS} == \
                {f: getattr(alone, f) for f in FIELDS}, info.job
            by_evidence += bool(alone.by_evidence)
    assert by_evidence >= 3
    # the leaky cluster's jobs whose processes print no id: the rule finds some
    if request.node.callspec.params["cluster"] == "leaky":
        assert any(fired)
