"""Two clusters on one filesystem, and requeued runs (sql/0020), on a real PostgreSQL.

Jobs are keyed by (cluster, raw id, run); the deltas naming a raw id go to the cluster whose
nodes they were read on, and to the run whose time they fall in. `jobio show` asks for
-M/--clusters when an id names jobs of two clusters, like a person would use sacct -M.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from slurm_io.attribute.batch import attribute_jobs
from slurm_io.attribute.stored import pending_jobs
from slurm_io.jobs.store import find_jobs, job_key, resume_end, upsert_job_counts, upsert_jobs
from slurm_io.jobs.sync import source_cluster
from slurm_io.model import Batch, ByteStats, Delta, DeltaFlag, IdClass, JobId, JobRecord
from slurm_io.store.writer import write_batch
from tests.cli.installed import assert_one_line_error, jobio

T0 = 1_795_000_200.0
UID = 4242


def _job(raw: int, cluster: str | None, node: str, start: float, end: float | None, *,
         state: str = "COMPLETED", sluid: str | None = None) -> JobRecord:
    return JobRecord(raw, str(raw), None, None, UID, "ann", "acc", "p", f"j{raw}", (node,),
                     start - 60, start, end, state, "0:0", "/w", "sbatch x", "sacct", sluid,
                     cluster)


def _delta(t0: float, t1: float, raw: str, wb: int) -> Delta:
    return Delta("fs-OST0000", raw, raw, t0, t1, None, {"write_bytes": 1},
                 {"write_bytes": ByteStats(1, wb, wb, wb, wb * wb, None)}, DeltaFlag.NONE)


def _exact(raw: int, node: str) -> JobId:
    return JobId(IdClass.EXACT, raw, UID, node, None, False)


def _write(conn, deltas: list[tuple[float, int, str, int]], last: float) -> None:
    """(ts_start, raw id, node, bytes) deltas of 120 s, then a read past `last`."""
    for seq, (t, raw, node, wb) in enumerate(deltas, 1):
        d = _delta(t, t + 120, f"{raw}:{UID}:{node}", wb)
        write_batch(conn, Batch("oss1", seq, t + 120, ("fs-OST0000",),
                                [(d, _exact(raw, node))], 1, 0, 0, 0))
    write_batch(conn, Batch("oss1", len(deltas) + 1, last, ("fs-OST0000",), [], 0, 0, 0, 0))
    conn.commit()


def _totals(conn, cluster: str, raw: int) -> list[int]:
    return [r[0] for r in conn.execute(
        "SELECT (io.totals->>'write_bytes')::bigint FROM job j JOIN job_io io USING (job) "
        "WHERE j.cluster = %s AND j.job_raw = %s ORDER BY j.run", (cluster, raw))]


@pytest.fixture
def two_clusters(db_dsn):
    """Job 5 on alpha (node a1) and on beta (node b1) at the same time; alpha's writes 300
    bytes per read, beta's 100."""
    with psycopg.connect(db_dsn) as conn:
        upsert_jobs(conn, [_job(5, "alpha", "a1", T0, T0 + 1200),
                           _job(5, "beta", "b1", T0, T0 + 1200)])
        _write(conn, [(T0 + 120 * k, 5, node, wb) for k in range(10)
                      for node, wb in (("a1", 300), ("b1", 100))], T0 + 1500)
    return db_dsn


def test_one_job_id_on_two_clusters_is_two_rows_with_keys_that_are_no_raw_ids(two_clusters):
    with psycopg.connect(two_clusters) as conn:
        rows = conn.execute("SELECT job, cluster, job_raw, run FROM job ORDER BY cluster"
                            ).fetchall()
    assert [(c, raw, run) for _, c, raw, run in rows] == [("alpha", 5, 0), ("beta", 5, 0)]
    assert all(key >= 2**32 for key, *_ in rows)


def test_each_clusters_job_gets_the_io_read_on_its_own_nodes(two_clusters):
    with psycopg.connect(two_clusters) as conn:
        n, complete = attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        assert (n, complete) == (2, 2)
        assert _totals(conn, "alpha", 5) == [10 * 300]
        assert _totals(conn, "beta", 5) == [10 * 100]


def test_a_second_import_of_another_cluster_leaves_the_first_untouched(two_clusters):
    with psycopg.connect(two_clusters) as conn:
        before = conn.execute("SELECT * FROM job WHERE cluster = 'alpha'").fetchall()
        counts = upsert_job_counts(conn, [_job(5, "beta", "b1", T0, T0 + 1300)])
        assert (counts.inserted, counts.updated) == (0, 1)
        assert conn.execute("SELECT * FROM job WHERE cluster = 'alpha'").fetchall() == before


def test_a_record_without_cluster_goes_to_the_databases_default(db_dsn):
    with psycopg.connect(db_dsn) as conn:
        conn.execute("UPDATE jobio_setting SET value = 'lab' WHERE name = 'cluster'")
        conn.commit()
        rec = _job(8, None, "n1", T0, T0 + 60)
        upsert_jobs(conn, [rec])
        assert conn.execute("SELECT cluster FROM job WHERE job_raw = 8").fetchall() == [("lab",)]
        assert job_key(conn, rec) is not None


def test_a_requeued_job_keeps_each_runs_io_apart(db_dsn):
    with psycopg.connect(db_dsn) as conn:
        # run 0 writes 300 per read until it is requeued; run 1 starts later and writes 100
        upsert_jobs(conn, [_job(9, "alpha", "a1", T0, T0 + 600, state="REQUEUED")])
        upsert_jobs(conn, [_job(9, "alpha", "a1", T0 + 900, T0 + 1500)])
        assert conn.execute("SELECT run, state FROM job WHERE job_raw = 9 ORDER BY run"
                            ).fetchall() == [(0, "REQUEUED"), (1, "COMPLETED")]
        conn.commit()
        _write(conn, [(T0 + 120 * k, 9, "a1", 300) for k in range(5)]
               + [(T0 + 900 + 120 * k, 9, "a1", 100) for k in range(5)], T0 + 1800)
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        assert _totals(conn, "alpha", 9) == [5 * 300, 5 * 100]
        # a later record of run 1 (same start) updates run 1, not run 0
        upsert_jobs(conn, [_job(9, "alpha", "a1", T0 + 900, T0 + 1500, state="FAILED")])
        assert conn.execute("SELECT run, state FROM job WHERE job_raw = 9 ORDER BY run"
                            ).fetchall() == [(0, "REQUEUED"), (1, "FAILED")]
        assert [i.run for i in find_jobs(conn, "9")] == [0, 1]


def test_runs_are_told_apart_by_sluid_where_slurm_gives_one(db_dsn):
    with psycopg.connect(db_dsn) as conn:
        upsert_jobs(conn, [_job(4, "alpha", "a1", T0, T0 + 60, sluid="sA")])
        upsert_jobs(conn, [_job(4, "alpha", "a1", T0, T0 + 60, sluid="sB")])  # same second
        upsert_jobs(conn, [_job(4, "alpha", "a1", T0, T0 + 90, sluid="sA")])
        assert conn.execute("SELECT run, sluid, extract(epoch FROM end_time) - %s FROM job "
                            "WHERE job_raw = 4 ORDER BY run", (T0,)).fetchall() == [
            (0, "sA", 90), (1, "sB", 60)]


def test_show_asks_for_clusters_when_an_id_names_two_and_follows_dash_m(two_clusters):
    with psycopg.connect(two_clusters) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
    env = {"SLURM_IO_DSN": two_clusters}
    assert_one_line_error(jobio("show", "5", env=env), "alpha, beta", "-M")
    one = jobio("show", "-M", "beta", "--json", "5", env=env)
    assert one.returncode == 0, one.stderr
    (doc,) = json.loads(one.stdout)
    assert (doc["cluster"], doc["job"], doc["totals"]["write_bytes"]) == ("beta", 5, 1000)
    both = jobio("show", "--clusters", "all", "--json", "5", env=env)
    assert both.returncode == 0, both.stderr
    assert [(d["cluster"], d["totals"]["write_bytes"]) for d in json.loads(both.stdout)] == [
        ("alpha", 3000), ("beta", 1000)]
    text = jobio("show", "-M", "alpha", "5", env=env)
    assert text.returncode == 0 and "cluster alpha" in text.stdout


def test_report_asks_for_clusters_too_and_mails_the_named_clusters_job(two_clusters):
    with psycopg.connect(two_clusters) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
    env = {"SLURM_IO_DSN": two_clusters}
    assert_one_line_error(jobio("report", "5", env=env), "alpha, beta", "-M")
    one = jobio("report", "-M", "beta", "5", env=env)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("Subject: [slurm-io] job 5 (")


def test_a_sync_resumes_after_its_own_clusters_latest_end(db_dsn):
    # cluster a was synced up to T0 + 7200, cluster b (another controller, slower timer)
    # only to T0: b's next sync must not start after a's jobs, or b's jobs in between are
    # never read
    with psycopg.connect(db_dsn) as conn:
        upsert_jobs(conn, [_job(1, "a", "n1", T0, T0 + 7200), _job(2, "b", "m1", T0 - 60, T0),
                           _job(3, "a", "n1", T0, None, state="RUNNING")])
        conn.commit()
        now = T0 + 7300
        assert resume_end(conn, "a", now=now, stale=7 * 86400) == T0 + 7200
        assert resume_end(conn, "b", now=now, stale=7 * 86400) == T0
        assert resume_end(conn, "c", now=now, stale=7 * 86400) is None  # its first sync
        # the controller could not say which cluster: the oldest latest end, so that no
        # cluster's jobs are skipped; a cluster not synced for longer than `stale` is not
        # waited for
        assert resume_end(conn, None, now=now, stale=7 * 86400) == T0
        assert resume_end(conn, None, now=now, stale=3600) == T0 + 7200


def test_a_source_that_names_its_cluster_is_resumed_by_it():
    class Named:
        def cluster(self):
            return "b"

        def jobs(self, since, until):
            return []

    class Silent:
        def jobs(self, since, until):
            return []

    assert source_cluster(Named()) == "b"
    assert source_cluster(Silent()) is None
