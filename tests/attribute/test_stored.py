"""Attribution computed once and stored: what the readers get, and revision after late data.

A real PostgreSQL (db_dsn); deltas written through the real ingest path (store.writer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from slurm_io.attribute.batch import attribute_jobs
from slurm_io.attribute.stored import pending_jobs, stored_hours, stored_job_io
from slurm_io.jobs.info import JobInfo
from slurm_io.jobs.store import find_jobs, upsert_jobs
from slurm_io.model import Batch, ByteStats, Delta, DeltaFlag, IdClass, JobId, JobRecord
from slurm_io.report.figures import figures
from slurm_io.store.writer import write_batch

T0 = 1_795_000_200.0  # on the hour boundary + 200 s
UID = 4242


def job_report(conn: psycopg.Connection, info: JobInfo, **kw: Any) -> dict[str, Any]:
    """A job's report in its JSON form (`jobio show --json`), as the assertions read it."""
    return figures(conn, info, **kw).as_json()


def _job(job: int, start: float, end: float) -> JobRecord:
    return JobRecord(job, str(job), None, None, UID, "ann", "acc", "p", f"j{job}", ("n1",),
                     start - 60, start, end, "COMPLETED", "0:0", "/w", "sbatch x", "sacct")


def _delta(t0: float, t1: float, raw: str, *, wb: int, target: str = "fs-OST0000") -> Delta:
    """`wb` bytes written in one request."""
    return Delta(target, raw, raw, t0, t1, None, {"write_bytes": 1},
                 {"write_bytes": ByteStats(1, wb, wb, wb, wb * wb, None)}, DeltaFlag.NONE)


def _exact(job: int) -> JobId:
    return JobId(IdClass.EXACT, job, UID, "n1", None, False)


MISSING = JobId(IdClass.JOB_MISSING, None, UID, "n1", None, False)


def _batch(seq: int, read: float, deltas: list[tuple[Delta, JobId]]) -> Batch:
    return Batch("oss1", seq, read, ("fs-OST0000",), deltas, len(deltas), 0, 0, 0)


@pytest.fixture
def two_jobs(db_dsn):
    """Jobs 11 and 12 of one user on n1 for an hour; job 11 writes 300 bytes per read by its
    own id, job 12 100; one `:uid:host` read of 400 bytes in the middle."""
    seq = 0
    with psycopg.connect(db_dsn) as conn:
        upsert_jobs(conn, [_job(11, T0, T0 + 3600), _job(12, T0, T0 + 3600)])
        for k in range(30):
            t = T0 + 120 * k
            if k == 15:
                d = [(_delta(t, t + 120, f":{UID}:n1", wb=400), MISSING)]
            else:
                d = [(_delta(t, t + 120, f"11:{UID}:n1", wb=300), _exact(11)),
                     (_delta(t, t + 120, f"12:{UID}:n1", wb=100), _exact(12))]
            seq += 1
            write_batch(conn, _batch(seq, t + 120, d))
        seq += 1
        write_batch(conn, _batch(seq, T0 + 3720, []))  # the collector read past the end
        conn.commit()
    return db_dsn


def _key(conn, raw: int) -> int:
    """The row key of job `raw` (a surrogate since sql/0020)."""
    return conn.execute("SELECT job FROM job WHERE job_raw = %s", (raw,)).fetchone()[0]


def _stored(conn, job):
    s = stored_job_io(conn, _key(conn, job))
    assert s is not None
    return s


def test_batch_attribution_stores_totals_provenance_and_hours(two_jobs):
    with psycopg.connect(two_jobs) as conn:
        n, complete = attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        assert (n, complete) == (2, 2)
        a, b = _stored(conn, 11), _stored(conn, 12)
        # the blind 400 split 3:1 by what each wrote by its own id around it
        assert a.io.totals["write_bytes"] == 29 * 300 + 300
        assert b.io.totals["write_bytes"] == 29 * 100 + 100
        assert a.io.by_evidence["write_bytes"] == 300 and a.io.by_time == {}
        assert a.complete and a.revision == 1
        hours = stored_hours(conn, T0 - 3600, T0 + 7200, [_key(conn, 11)])
        assert sum(h[5]["write_bytes"] for h in hours) == a.io.totals["write_bytes"]
        assert sum(h[6].get("write_bytes", 0) for h in hours) == 300
        assert {h[3] for h in hours} == {"OST"} and {h[2] for h in hours} == {"fs"}


def test_show_of_a_finished_job_reads_the_stored_figures(two_jobs):
    with psycopg.connect(two_jobs) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        # the stored row is what show prints: change it and show follows
        conn.execute("UPDATE job_io SET totals = '{\"write_bytes\": 1}' WHERE job = "
                     "(SELECT job FROM job WHERE job_raw = 11)")
        conn.commit()
        (info,) = find_jobs(conn, "11")
        r = job_report(conn, info, now=T0 + 7200)
    assert r["totals"] == {"write_bytes": 1} and r["revision"] == 1
    assert r["ambiguous_evidence"]["write_bytes"] == 300


def test_late_job_missing_data_revises_the_stored_figures(two_jobs, tmp_path):
    with psycopg.connect(two_jobs) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        assert pending_jobs(conn, 0) == []
        conn.commit()
        # a spooled batch of another server arrives late: `:uid:host` writes of 800 during
        # both jobs' run; neither job wrote to that target by its own id, so what they wrote
        # to the other OST around it splits it: 600 / 200
        late = _delta(T0 + 600, T0 + 720, f":{UID}:n1", wb=800, target="fs-OST0001")
        write_batch(conn, Batch("oss2", 1, T0 + 720, ("fs-OST0001",), [(late, MISSING)],
                                1, 0, 0, 0))
        write_batch(conn, Batch("oss2", 2, T0 + 3720, ("fs-OST0001",), [], 0, 0, 0, 0))
        conn.commit()
        assert sorted(i.raw_id for i in pending_jobs(conn, 0)) == [11, 12]
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        a = _stored(conn, 11)
        assert a.revision == 2
        assert a.io.totals["write_bytes"] == 29 * 300 + 300 + 600
        assert a.io.by_evidence["write_bytes"] == 300 + 600
        assert pending_jobs(conn, 0) == []
    # and `jobio show` says so, as a user runs it
    out = subprocess.run([str(Path(sys.executable).parent / "jobio"), "--dsn", two_jobs,
                          "show", "11"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "revised after late data: revision 2" in out.stdout
    out = subprocess.run([str(Path(sys.executable).parent / "jobio"), "--dsn", two_jobs,
                          "show", "11", "--json"], capture_output=True, text=True, timeout=60)
    (j,) = json.loads(out.stdout)
    assert j["revision"] == 2 and j["ambiguous_evidence"]["write_bytes"] == 900


def test_one_rule_gives_every_reader_stored_figures_when_complete_or_current(two_jobs):
    """attribute.figures: stored when complete or current (no batch since), else computed;
    every reader (show, the mails, the reporter, daily, LASSi) goes through it."""
    from slurm_io.attribute.figures import figures as job_figures

    with psycopg.connect(two_jobs) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        (info,) = find_jobs(conn, "11")
        key = info.job
        # complete and current: the stored row, even where computing would differ
        conn.execute("UPDATE job_io SET totals = '{\"write_bytes\": 1}' WHERE job = %s", (key,))
        f = job_figures(conn, info.window, now=T0 + 7200)
        assert (f.io.totals, f.complete, f.revision) == ({"write_bytes": 1}, True, 1)
        # incomplete but current: nothing came since, the stored row is what computing gives
        conn.execute("UPDATE job_io SET complete = false WHERE job = %s", (key,))
        f = job_figures(conn, info.window, now=T0 + 7200)
        assert (f.io.totals, f.complete, f.revision) == ({"write_bytes": 1}, False, 1)
        # complete, not current (a batch came since): still the stored, final figures --
        # late data is re-attribution's (stale_jobs), so every reader shows one revision
        conn.execute("UPDATE job_io SET complete = true WHERE job = %s", (key,))
        conn.commit()
        write_batch(conn, Batch("oss2", 1, T0 + 7300, ("fs-OST0001",), [], 0, 0, 0, 0))
        f = job_figures(conn, info.window, now=T0 + 7200)
        assert (f.io.totals, f.revision) == ({"write_bytes": 1}, 1)
        # incomplete and not current: computed now, not stored
        conn.execute("UPDATE job_io SET complete = false WHERE job = %s", (key,))
        f = job_figures(conn, info.window, now=T0 + 7200)
        assert f.revision is None and f.io.totals["write_bytes"] == 29 * 300 + 300
        assert f.complete  # every collector read past the job's end
        assert _stored(conn, 11).io.totals == {"write_bytes": 1}
        # a job without stored figures: computed, with its hours (what LASSi takes)
        conn.execute("DELETE FROM job_io WHERE job = %s", (key,))
        f = job_figures(conn, info.window, now=T0 + 7200)
        assert f.revision is None and f.io.totals["write_bytes"] == 29 * 300 + 300
        assert sum(t.get("write_bytes", 0) for t, _ in f.io.hours.values()) == 29 * 300 + 300


def test_the_ranges_are_stored_and_read_back_by_both_store_paths(two_jobs):
    """job_io.ranges (sql/0022): the batch path (store_many) and the single one
    (store_job_io, the reporter's) store what the rules gave; show reads it back."""
    from slurm_io.attribute.batch import attribute_job
    from slurm_io.attribute.stored import store_job_io

    with psycopg.connect(two_jobs) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        a, b = _stored(conn, 11), _stored(conn, 12)
        # each wrote by its own id; the one blind 400 could be either's
        assert a.io.ranges["write_bytes"] == (29 * 300, 29 * 300 + 400)
        assert b.io.ranges["write_bytes"] == (29 * 100, 29 * 100 + 400)
        assert a.io.ranges["read_bytes"] == (0, 0)
        (info,) = find_jobs(conn, "11")
        assert job_report(conn, info, now=T0 + 7200)["ranges"]["write_bytes"] == {
            "least": 29 * 300, "most": 29 * 300 + 400}
        conn.execute("UPDATE job_io SET ranges = NULL, ranges_revision = NULL")
        io = attribute_job(conn, info.window, now=T0 + 7200)
        store_job_io(conn, info.window, io, True)
        assert _stored(conn, 11).io.ranges == io.ranges and io.ranges
        assert _stored(conn, 12).io.ranges == {}  # not stored: unknown, shown plainly


def test_a_revision_by_an_older_writer_leaves_no_range_behind(two_jobs):
    """A release from before sql/0022 upserts job_io without the range columns: its row
    has no range, and when it revises a job's totals, the range stored before is not
    shown next to totals it was not computed for."""
    with psycopg.connect(two_jobs) as conn:
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        assert _stored(conn, 11).io.ranges
        key = _key(conn, 11)
        # the older writer's upsert: the columns it knew, its revision clause
        conn.execute(
            "INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, by_target, "
            "by_node, timeline, quality) VALUES (%s, %s, true, '{\"write_bytes\": 5}', '{}', "
            "'{}', '{}', '{}', '[]', '{}') ON CONFLICT (job) DO UPDATE SET "
            "totals = EXCLUDED.totals, "
            "revision = job_io.revision + (job_io.totals <> EXCLUDED.totals)::int",
            (key, UID))
        s = _stored(conn, 11)
        assert s.revision == 2 and s.io.totals == {"write_bytes": 5} and s.io.ranges == {}
        other = _key(conn, 12)
        conn.execute("DELETE FROM job_io WHERE job = %s", (other,))
        conn.execute("INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                     "by_target, by_node, timeline, quality) VALUES (%s, %s, true, '{}', "
                     "'{}', '{}', '{}', '{}', '[]', '{}')", (other, UID))
        assert _stored(conn, 12).io.ranges == {}
