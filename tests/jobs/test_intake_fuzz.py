"""Fuzzing the three doors Slurm records come in by: sacct text (parse_sacct_text), the
hook environment (record_from_hook_env) and the hook spool ingest (real PostgreSQL). Inputs
are byte-level mutations of real-format samples (tests/intake_fuzz.py). Properties: no
exception escapes, every record is accepted with storable values or refused and counted.
The long run (>= 20,000 cases per door) is bench/fuzz_intake.py."""

from __future__ import annotations

import os
import random
import shutil
import tempfile

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_io.jobs.hookenv import record_from_hook_env
from slurm_io.jobs.sacct import parse_sacct_text
from slurm_io.notify import hookspool
from tests.intake_fuzz import mutated_env, mutated_sacct, spool_file_bytes, unstorable

HOOK_TIME = 1795451550.25  # fixed: the file's length steers the mutations


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_parse_sacct_accepts_or_refuses_every_record_of_mutated_text(rnd: random.Random):
    text = mutated_sacct(rnd)
    read = parse_sacct_text(text)
    assert read.accepted + len(read.refused) == read.records
    assert all(p.reason and p.record is not None for p in read.refused)
    for job in read.jobs:
        assert unstorable(job) == [], job


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_a_mutated_hook_environment_is_a_storable_record_or_a_value_error(rnd: random.Random):
    env = mutated_env(rnd)
    try:
        rec = record_from_hook_env(env)
    except ValueError as e:  # RecordError or NodeListError, with a reason
        assert str(e)
        return
    assert unstorable(rec) == [], rec


@pytest.mark.pg
def test_spool_ingest_of_mutated_files_stores_or_quarantines_each_one(db_dsn):
    with psycopg.connect(db_dsn) as conn:

        @settings(max_examples=40, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(st.randoms(use_true_random=False), st.integers(1, 6))
        def check(rnd: random.Random, n_files: int) -> None:
            spool = tempfile.mkdtemp(prefix="fuzz-spool-")
            try:
                for i in range(n_files):
                    with open(os.path.join(spool, f"{i + 1}.json"), "wb") as f:
                        f.write(spool_file_bytes(rnd, HOOK_TIME))
                before = _problems(conn)
                result = hookspool.ingest(conn, spool)
                assert len(result.ingested) + len(result.bad) == n_files
                assert hookspool.pending(spool) == []
                assert _problems(conn) - before == len(result.bad)
                for job in result.ingested:
                    assert conn.execute("SELECT 1 FROM job j JOIN report_queue q USING (job)"
                                        " WHERE j.job_raw = %s", (job,)).fetchone() == (1,)
                conn.commit()
            finally:
                for name in os.listdir(spool):  # the round's files and what it kept
                    path = os.path.join(spool, name)
                    if os.path.isdir(path):
                        shutil.rmtree(path)
                    else:
                        os.unlink(path)
                os.rmdir(spool)

        check()


def _problems(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM problem WHERE source = 'hook-spool'").fetchone()
    assert row is not None
    return int(row[0])
