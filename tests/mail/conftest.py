"""A small simulated cluster run through the real pipeline (simulate, collector replay, sacct
import, attribution), shared by the mail tests that need a database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import psycopg
import pytest

from slurm_io.attribute.batch import attribute_jobs
from slurm_io.attribute.stored import pending_jobs
from slurm_io.collect import daemon
from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.store import upsert_jobs
from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
from slurm_io.simulate import simulate
from slurm_io.store.spool import Spool
from tests.conftest import _fresh_database

START = 1_795_000_000.0
NOW = START + 30 * 86400  # long after every simulated job


class SimJobs(NamedTuple):
    dsn: str
    small_writes: int  # a job with many small writes (write_kb_ops > 16)
    metadata: int  # a job with a metadata storm
    healthy: int  # a job with large requests, little metadata, and a timeline
    tiny: int  # the job with the fewest bytes


@pytest.fixture(scope="session")
def sim_jobs(pg_dsn: str, _migrated_template: str, tmp_path_factory) -> Iterator[SimJobs]:
    base = tmp_path_factory.mktemp("mailsim")
    sim = base / "cluster"
    simulate(sim, seed=5, start=START, hours=2, n_nodes=16, n_oss=2, jobs_per_hour=20,
             outage=False)
    for dsn in _fresh_database(pg_dsn, _migrated_template):
        link = daemon.DatabaseLink(lambda dsn=dsn: psycopg.connect(dsn))
        daemon.replay(sim, state_dir=base / "state", spool=Spool(base / "spool"), link=link,
                      classify=ClassifyCache(JobIdGrammar()), period=120.0)
        link.reset()
        records, problems = parse_sacct((sim / "sacct.txt").read_text())
        assert not problems
        with psycopg.connect(dsn) as conn:
            upsert_jobs(conn, records)
            conn.commit()
            attribute_jobs(conn, pending_jobs(conn, 0), now=NOW)
            rows = conn.execute(
                """SELECT job, coalesce((totals->>'read_bytes')::bigint, 0)
                              + coalesce((totals->>'write_bytes')::bigint, 0),
                          coalesce((totals->>'write_bytes_samples')::bigint, 0),
                          (quality->>'write_kb_ops')::float8,
                          (quality->>'metadata_ops')::float8,
                          jsonb_array_length(timeline)
                   FROM job_io ORDER BY job""").fetchall()
        small = [r[0] for r in rows if r[2] >= 10_000 and (r[3] or 0) > 16]
        meta = [r[0] for r in rows if (r[4] or 0) > 500_000]
        healthy = [r for r in rows if r[2] >= 10_000 and r[3] is not None and r[3] < 1
                   and (r[4] or 0) < 50_000 and r[5] >= 10]
        assert small and meta and healthy, rows
        yield SimJobs(dsn, small[0], meta[0], max(healthy, key=lambda r: r[1])[0],
                      min(rows, key=lambda r: r[1])[0])
