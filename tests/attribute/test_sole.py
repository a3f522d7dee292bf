"""Sole deltas (attribute.core.sole_deltas): a `:uid:host` delta no other job of the uid can
have made is its one job's, and its rate there counts among the job's peaks (rule 3's cap).

Node n1, uid 1000 (test_evidence.py). In the split tests job 1 runs 0-10000 s and prints no
id at all (its processes lost it: ranks started outside srun); job 2 runs 5000-10000 s and
writes 100 bytes per read by its own id around the shared delta. Alone before 5000, job 1
wrote 720 bytes in a read: 6 bytes/s (its cap, 1440 of the shared 12000, is more than the
tenth attribute.sole_owner takes for a crumb).
"""

from __future__ import annotations

import psycopg
import pytest

from slurm_io.attribute.batch import attribute_job, attribute_jobs
from slurm_io.attribute.core import DeltaRow, JobWindow, attribute, sole_deltas
from slurm_io.attribute.evidence import Evidence
from slurm_io.attribute.stored import pending_jobs, stored_job_io
from slurm_io.jobs.store import upsert_jobs
from slurm_io.store.writer import write_batch
from tests.attribute.test_evidence import WRITE, row
from tests.attribute.test_stored import MISSING, T0, _batch, _delta, _exact, _job, _key

A = JobWindow(1, 1000, ("n1",), 0.0, 10000.0)
B = JobWindow(2, 1000, ("n1",), 5000.0, 10000.0)
C = JobWindow(3, 1000, ("n1",), 0.0, 5000.0)  # ends as job 2 begins
EVER = (-1e9, 1e9)


def _sole(d: DeltaRow, jobs: list[JobWindow], within=EVER):
    return [(job, node, when) for job, node, when, _ in
            sole_deltas([d], {"n1": jobs}, now=20000.0, within=within)]


@pytest.mark.parametrize("d, jobs, within, expected", [
    # job 1 alone on the node: its own, over the read
    (row(3000, 3120, wb=120), [A, B], EVER, [(1, "n1", (3000, 3120))]),
    # both ran then: neither's alone
    (row(6000, 6120, wb=120), [A, B], EVER, []),
    # last updated before job 2 began: job 1's, up to that update
    (row(4940, 5060, wb=120, last=4990.0), [A, B], EVER, [(1, "n1", (4940, 4990))]),
    # created after job 3 ended: job 2's, from the creation
    (row(4940, 5060, wb=120)._replace(entry_start=5010.0), [C, B], EVER,
     [(2, "n1", (5010, 5060))]),
    # without the creation time job 3 may have made it too
    (row(4940, 5060, wb=120), [C, B], EVER, []),
    # the only job began inside the read: over the part it ran
    (row(4940, 5060, wb=120), [B], EVER, [(2, "n1", (5000, 5060))]),
    # outside the time in which the caller knows every job of the uid there: not judged
    (row(3000, 3120, wb=120), [A, B], (3100, 9000), []),
    # no node, or no job at all then
    (row(3000, 3120, wb=120, node=None), [A, B], EVER, []),
    (row(3000, 3120, wb=120), [B], EVER, []),
], ids=["alone", "both", "updated-before", "created-after", "no-creation-time",
        "began-inside", "outside-within", "no-node", "no-job"])
def test_a_delta_is_one_jobs_only_where_no_other_job_of_the_uid_ran(d, jobs, within, expected):
    assert _sole(d, jobs, within) == expected


def test_a_sole_delta_shows_its_jobs_rate_where_its_id_shows_none():
    d = row(3000, 3120, wb=120)
    e = Evidence((), sole_deltas([d], {"n1": [A, B]}, now=20000.0, within=EVER))
    assert e.peak("n1", 1, "OST", WRITE, 0, 9000) == pytest.approx(1.0)
    assert e.peak("n1", 1, "OST", WRITE, 0, 9000, sole=False) is None
    assert e.peak("n1", 1, "OST", WRITE, 4000, 9000) is None  # it ended before the window
    # a sliver of a read is no rate (as for rows by id: evidence.MIN_OBSERVED / 4)
    short = row(3000, 3120, wb=120, last=3030.0)
    e = Evidence((), sole_deltas([short], {"n1": [A, B]}, now=20000.0, within=EVER))
    assert e.peak("n1", 1, "OST", WRITE, 0, 9000) is None


def _own(job: int) -> list[DeltaRow]:
    """100 bytes a read around the shared delta by its id; a burst of 12000 later on, out of
    the ten minutes its rate is read from but within the hour of its peaks: it can write
    that fast, so rule 3 does not hold it."""
    return [row(t, t + 120, job=job, wb=100) for t in range(5400, 6720, 120)
            if not 6000 <= t < 6120] + [row(7000, 7120, job=job, wb=12000)]


SHARED = row(6000, 6120, wb=12000)


def test_a_job_is_held_to_twice_the_rate_its_sole_deltas_show():
    # 12000 bytes while job 2 writes 100 a read by its id: rule 2 gives the rest beyond
    # twice that to job 1, idle by its id; its sole delta says it writes 6 bytes/s
    alone = row(3000, 3120, wb=720)
    one = attribute(A, [], [alone, SHARED], [A, B], now=20000, evidence=_own(2))
    two = attribute(B, _own(2), [alone, SHARED], [A, B], now=20000)
    assert one.totals["write_bytes"] == pytest.approx(720 + 2 * 720, abs=2)
    own = sum(r.counters["write_bytes"] for r in _own(2))
    assert two.totals["write_bytes"] == pytest.approx(own + 12000 - 1440, abs=2)


def test_a_delta_another_job_may_have_made_holds_no_one():
    # the same read with job 3 running beside job 1 then: it is not job 1's alone
    third = JobWindow(3, 1000, ("n1",), 2000.0, 4000.0)
    alone = row(3000, 3120, wb=120)
    one = attribute(A, [], [alone, SHARED], [A, B, third], now=20000, evidence=_own(2))
    assert one.totals["write_bytes"] > 0.9 * 12000


def _write(conn: psycopg.Connection, deltas: list[tuple[float, str, int, object]]) -> None:
    for seq, (t, raw, wb, jid) in enumerate(sorted(deltas, key=lambda x: x[0]), start=1):
        write_batch(conn, _batch(seq, t + 120, [(_delta(t, t + 120, raw, wb=wb), jid)]))


@pytest.mark.parametrize("third_runs", [False, True])
def test_the_batch_and_a_job_alone_know_who_was_alone(db_dsn, third_runs):
    # jobs 31 (T0 .. T0 + 3600, no id ever) and 32 (from T0 + 1800, 100 bytes a read by its
    # id); job 33, when it runs, ends before job 32 begins: each one's fetch must know it
    # to tell that job 31 was not alone at T0 + 600 (attribute.batch: the competitors
    # within an hour of the run)
    uid = 4242
    with psycopg.connect(db_dsn) as conn:
        jobs = [_job(31, T0, T0 + 3600), _job(32, T0 + 1800, T0 + 3600)]
        if third_runs:
            jobs.append(_job(33, T0 + 300, T0 + 900))
        upsert_jobs(conn, jobs)
        rows = [(T0 + 600, f":{uid}:n1", 720, MISSING),
                (T0 + 2400, f":{uid}:n1", 12000, MISSING)]
        # job 32: 100 bytes a read by its id, and once a burst as large (its peak, out of
        # the ten minutes its rate around the shared delta is read from)
        rows += [(t, f"32:{uid}:n1", 12000 if t == int(T0) + 3240 else 100, _exact(32))
                 for t in range(int(T0) + 1800, int(T0) + 3600, 120) if t != int(T0) + 2400]
        _write(conn, rows)
        write_batch(conn, _batch(len(rows) + 1, T0 + 3720, []))  # read past the end
        conn.commit()
        pending = pending_jobs(conn, 0)
        attribute_jobs(conn, pending, now=T0 + 86400)
        got = {}
        for info in pending:
            stored = stored_job_io(conn, info.job)
            assert stored is not None
            alone = attribute_job(conn, info.window, now=T0 + 86400)
            assert stored.io.totals == alone.totals
            got[info.job] = stored.io.totals.get("write_bytes", 0)
        first = got[_key(conn, 31)]
    if third_runs:  # job 31 shows no rate: the burst beyond job 32's is its (rule 2)
        assert first > 0.9 * 12000
    else:  # held to twice the 6 bytes a second its sole delta shows
        assert first == pytest.approx(720 + 1440, abs=2)
