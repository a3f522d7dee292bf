"""A simulated cluster loaded the way a site loads its data: its captured reads replayed
through the collector into PostgreSQL, its sacct text stored as job records."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import psycopg

from slurm_io.collect import daemon
from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.store import upsert_jobs
from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
from slurm_io.store.spool import Spool


def load(cluster: Path, dsn: str, work: Path) -> str:
    """Replay `cluster` (simulate's output) into the database `dsn`; returns `dsn`."""
    link = daemon.DatabaseLink(lambda: psycopg.connect(dsn))
    daemon.replay(cluster, state_dir=work, spool=Spool(work / "spool"), link=link,
                  classify=ClassifyCache(JobIdGrammar()), period=120.0)
    link.reset()
    records, problems = parse_sacct((cluster / "sacct.txt").read_text(), tz=UTC)
    assert not problems
    with psycopg.connect(dsn) as conn:
        upsert_jobs(conn, records)
        conn.commit()
    return dsn


DENSE_START = 1_795_100_000.0


def small_dense_cluster(out: Path, scenario: str = "dense") -> Path:
    """Two hours of a small dense cluster (6 nodes, 30 jobs an hour): enough shared
    `:uid:host` deltas for several chunks of `jobio attribute` in seconds. `scenario`:
    "leaky" for the dense cluster whose jobs' processes print no id (simulate.scenario)."""
    from slurm_io.simulate import simulate

    simulate(out, seed=5, start=DENSE_START, hours=2, n_nodes=6, n_oss=2, jobs_per_hour=30,
             scenario=scenario)
    return out
