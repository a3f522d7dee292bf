"""The job list behind `GET /v1/jobs` against a real PostgreSQL: its order (running first,
then the newest), its bounds (at most `max_jobs` listed, at most `max_live` computed now,
the rest pending), and stored figures and LASSi risks read for all jobs at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from slurm_io.report.joblist import job_list

pytestmark = pytest.mark.pg
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _load(conn: psycopg.Connection) -> None:
    from slurm_io.store import partitions

    partitions.ensure_partitions(conn, (NOW - timedelta(days=8)).timestamp(),
                                 NOW.timestamp(), ahead_days=0)
    for k in range(12):  # finished, stored; k = 10, 11 have no stored figures
        start = NOW - timedelta(hours=10 + k)
        conn.execute(
            "INSERT INTO job (job, jobid, uid, user_name, nodes, start_time, end_time, state, "
            "source) VALUES (%s, %s, 1001, 'alice', '{n1}', %s, %s, 'COMPLETED', 'test')",
            (100 + k, str(100 + k), start, start + timedelta(hours=1)))
        if k < 10:
            conn.execute(
                "INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                "by_target, by_node, timeline, quality) VALUES (%s, 1001, true, %s, '{}', "
                "'{}', '{}', '{}', '[]', %s)",
                (100 + k, json.dumps({"read_bytes": 1000 * k, "read_bytes_samples": k}),
                 json.dumps({"metadata_ops": k})))
    conn.execute("INSERT INTO lassi_job_hour (hour, fs, job, uid, risk_oss, risk_mds, risks) "
                 "VALUES (%s, 'fs', 103, 1001, 1.5, -0.5, '{}'), "
                 "(%s, 'fs', 103, 1001, 0.5, 2.5, '{}')", (NOW - timedelta(hours=13),
                                                          NOW - timedelta(hours=12)))
    conn.execute("INSERT INTO job (job, jobid, uid, user_name, nodes, start_time, state, "
                 "source) VALUES (200, '200', 1001, 'alice', '{n1}', %s, 'RUNNING', 'test'), "
                 "(300, '300', 1002, 'bob', '{n1}', %s, 'COMPLETED', 'test')",
                 (NOW - timedelta(days=3), NOW - timedelta(hours=5)))


def test_running_first_stored_figures_and_the_bounds(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        _load(conn)
        now = NOW.timestamp()
        rows, total = job_list(conn, "alice", now - 7 * 86400, now, now=now, resolution=120,
                               max_jobs=100, max_live=2)
        assert total == 13
        docs = [r.as_json() for r in rows]
        assert [d["jobid"] for d in docs] == ["200", *(str(100 + k) for k in range(12))]
        assert docs[0]["running"] and docs[0]["figures"]  # computed now (live 1 of 2)
        by_id = {d["jobid"]: d for d in docs}
        assert by_id["105"]["read_bytes"] == 5000 and by_id["105"]["metadata_ops"] == 5
        assert by_id["105"]["mean_request"] == 1000
        assert (by_id["103"]["risk_oss"], by_id["103"]["risk_mds"]) == (1.5, 2.5)
        assert by_id["110"]["figures"] and not by_id["111"]["figures"]  # live 2 of 2, then
        assert all(d["user"] == "alice" for d in docs)  # pending
        # stored ranges (sql/0022) are listed when they belong to the row's revision
        conn.execute("UPDATE job_io SET ranges = %s, ranges_revision = revision + (job - 105) "
                     "WHERE job IN (105, 106)",
                     (json.dumps({"read_bytes": {"least": 4000, "most": 6000}}),))
        rows, _ = job_list(conn, "alice", now - 7 * 86400, now, now=now, resolution=120,
                           max_jobs=100, max_live=0)
        by_id = {r.info.jobid: r.as_json() for r in rows}
        assert (by_id["105"]["read_bytes_least"], by_id["105"]["read_bytes_most"]) == (4000,
                                                                                   6000)
        assert "read_bytes_least" not in by_id["106"]  # another revision's range
        rows, total = job_list(conn, "alice", now - 7 * 86400, now, now=now, resolution=120,
                               max_jobs=3, max_live=0)
        assert total == 13 and [r.info.jobid for r in rows] == ["200", "100", "101"]
        assert rows[0].totals is None  # running, over max_live: pending
