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
