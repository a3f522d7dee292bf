"""`jobio top`'s live window splits a `:uid:host` delta several jobs could own by the same
rules as attribution (evidence, else time), so its figures for a finished job add up to what
`jobio show` reports from the stored results.

A real PostgreSQL (db_dsn); deltas written through the real ingest path (store.writer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from slurm_io.attribute.batch import attribute_jobs
from slurm_io.attribute.stored import pending_jobs
from slurm_io.jobs.info import JobInfo
from slurm_io.jobs.store import find_jobs, upsert_jobs
from slurm_io.model import Batch, ByteStats, Delta, DeltaFlag, IdClass, JobId, JobRecord
from slurm_io.report import load as load_mod
from slurm_io.report.figures import figures
from slurm_io.store.writer import write_batch

T0 = 1_795_000_200.0
UID = 4343
BLIND = 15  # the read (of 30) in which both jobs' I/O went to `:uid:host`
JOBIO = str(Path(sys.executable).with_name("jobio"))


def job_report(conn: psycopg.Connection, info: JobInfo, **kw: Any) -> dict[str, Any]:
    """A job's report in its JSON form (`jobio show --json`), as the assertions read it."""
    return figures(conn, info, **kw).as_json()


def _job(job: int, start: float, end: float | None) -> JobRecord:
    return JobRecord(job, str(job), None, None, UID, "ann", "acc", "p", f"j{job}", ("n1",),
                     start - 60, start, end, "COMPLETED" if end else "RUNNING", "0:0", "/w",
                     "sbatch x", "sacct")


def _delta(t0: float, raw: str, *, wb: int, ops: int) -> Delta:
    """`wb` bytes written in one request and `ops` opens in the read (t0, t0 + 120]."""
    return Delta("fs-OST0000", raw, raw, t0, t0 + 120, None,
                 {"write_bytes": 1, "open": ops},
                 {"write_bytes": ByteStats(1, wb, wb, wb, wb * wb, None)}, DeltaFlag.NONE)


def _load(dsn: str, running: bool) -> None:
    """Jobs 21 and 22 of one user on n1 for an hour (22 still running when `running`):
    21 writes 300 bytes per read by its own id, 22 100; opens 1 and 3. In read BLIND both
    ids are missing: 400 bytes and 4 opens under `:uid:host`."""
    exact = {j: JobId(IdClass.EXACT, j, UID, "n1", None, False) for j in (21, 22)}
    missing = JobId(IdClass.JOB_MISSING, None, UID, "n1", None, False)
    with psycopg.connect(dsn) as conn:
        upsert_jobs(conn, [_job(21, T0, T0 + 3600), _job(22, T0, None if running else T0 + 3600)])
        for k in range(31):
            t = T0 + 120 * k
            if k == BLIND:
                d = [(_delta(t, f":{UID}:n1", wb=400, ops=4), missing)]
            elif k < 30:
                d = [(_delta(t, f"21:{UID}:n1", wb=300, ops=1), exact[21]),
                     (_delta(t, f"22:{UID}:n1", wb=100, ops=3), exact[22])]
            else:
                d = []  # the collector read past the end
            write_batch(conn, Batch("oss1", k + 1, t + 120, ("fs-OST0000",), d, len(d), 0, 0,
                                    0))
        conn.commit()


@pytest.fixture
def finished(db_dsn):
    _load(db_dsn, running=False)
    return db_dsn


@pytest.fixture
def running(db_dsn):
    _load(db_dsn, running=True)
    return db_dsn


def _top_json(dsn: str, at: float) -> dict[str, dict]:
    at_text = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    r = subprocess.run([JOBIO, "--dsn", dsn, "top", "--once", "--json", "--at", at_text],
                       capture_output=True, text=True, env={**os.environ, "TZ": "UTC"},
                       check=False)
    assert r.returncode == 0, r.stderr
    return {row["key"]: row for row in json.loads(r.stdout)["rows"]}


def test_top_splits_the_blind_interval_by_what_each_job_did_by_its_id(finished):
    rows = _top_json(finished, T0 + 120 * (BLIND + 1) + 30)
    # by time the 400 bytes would go 200 / 200; the jobs' own rates around it say 3 : 1,
    # and for the opens 1 : 3
    assert rows["21"]["write_bytes"] == 300 and rows["22"]["write_bytes"] == 100
    assert rows["21"]["open"] == 1 and rows["22"]["open"] == 3
    assert "(no job)" not in rows  # the jobs cover the interval: nothing left to the user


def _attributed_then_top_over_the_run(conn: psycopg.Connection) -> tuple[Any, dict[Any, Any]]:
    """The jobs attributed and stored, then `top` over one window that spans the whole run
    (what top adds up over the jobs' intervals), by job."""
    attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
    end = T0 + 120 * 31
    ld = load_mod.load(conn, at=end, interval=(end - T0 + 240) / load_mod.WINDOW, now=T0 + 7200)
    return ld, {g.key: g for g in load_mod.group(ld, "job") if g.kind == "job"}


def test_top_of_a_finished_job_adds_up_to_what_show_reports(finished):
    with psycopg.connect(finished) as conn:
        ld, top = _attributed_then_top_over_the_run(conn)
        for job in (21, 22):
            (info,) = find_jobs(conn, str(job))
            shown = job_report(conn, info, now=T0 + 7200)
            assert shown["revision"] == 1  # from the stored results
            assert shown["ambiguous_evidence"]["write_bytes"] > 0
            assert {k: round(top[job].get(k)) for k in shown["totals"]} == shown["totals"]
        # and interval by interval: the blind one gives each job its stored recovered part
        ld = load_mod.load(conn, at=T0 + 120 * (BLIND + 1) + 30, now=T0 + 7200)
        blind = {g.key: g for g in load_mod.group(ld, "job") if g.kind == "job"}
        for job in (21, 22):
            (info,) = find_jobs(conn, str(job))
            rec = job_report(conn, info, now=T0 + 7200)["recovered"]
            assert {k: round(blind[job].get(k)) for k in rec} == rec


def test_top_computes_a_running_jobs_share_by_the_same_rules(running):
    with psycopg.connect(running) as conn:
        ld = load_mod.load(conn, at=T0 + 120 * (BLIND + 1) + 30, now=T0 + 3000)
        top = {g.key: g for g in load_mod.group(ld, "job") if g.kind == "job"}
        (info,) = find_jobs(conn, "22")
        assert info.end is None
        live = job_report(conn, info, now=T0 + 3000)  # show computes a running job
    assert round(top[22].get("write_bytes")) == live["recovered"]["write_bytes"] == 100
    assert round(top[21].get("write_bytes")) == 300


def test_the_live_range_of_a_job_is_its_stored_range_over_its_run(finished):
    """report.load.span: over the interval, a job's figure without its shares of the
    ambiguous deltas, and with all of them; over its whole run that is the range
    attribution stores (attribute.ranges), interval by interval the blind read's
    400 bytes could be either job's."""
    with psycopg.connect(finished) as conn:
        ld, top = _attributed_then_top_over_the_run(conn)
        for job in (21, 22):
            (info,) = find_jobs(conn, str(job))
            stored = job_report(conn, info, now=T0 + 7200)["ranges"]
            least, most = load_mod.span(ld, top[job])
            assert (round(least[1]), round(most[1])) == (stored["write_bytes"]["least"],
                                                         stored["write_bytes"]["most"])
            assert (round(least[2]), round(most[2])) == (stored["metadata_ops"]["least"],
                                                         stored["metadata_ops"]["most"])
        ld = load_mod.load(conn, at=T0 + 120 * (BLIND + 1) + 30, now=T0 + 7200)
        blind = {g.key: g for g in load_mod.group(ld, "job") if g.kind == "job"}
        assert [tuple(round(x) for x in load_mod.span(ld, blind[21])[k]) for k in (0, 1)] == [
            (0, 0, 0), (0, 400, 4)]


def test_an_entry_updated_in_the_second_a_job_started_is_in_both_jobs_ranges(db_dsn):
    """Job 31 runs; job 32 starts at T0 + 1000, the very second the `:uid:host` entry was
    last updated: the split gives the 400 bytes to 31 (32 does not overlap the interval),
    but they may be 32's first I/O. Stored and live alike, 31's least leaves them out and
    32's most holds them."""
    exact = JobId(IdClass.EXACT, 32, UID, "n1", None, False)
    missing = JobId(IdClass.JOB_MISSING, None, UID, "n1", None, False)
    blind = Delta("fs-OST0000", f":{UID}:n1", f":{UID}:n1", T0 + 960, T0 + 1080, T0 + 1000,
                  {"write_bytes": 1}, {"write_bytes": ByteStats(1, 400, 400, 400, 160000,
                                                                None)}, DeltaFlag.NONE)
    with psycopg.connect(db_dsn) as conn:
        upsert_jobs(conn, [_job(31, T0, T0 + 3600), _job(32, T0 + 1000, T0 + 3600)])
        write_batch(conn, Batch("oss1", 1, T0 + 1080, ("fs-OST0000",),
                                [(blind, missing),
                                 (_delta(T0 + 960, f"32:{UID}:n1", wb=100, ops=1), exact)],
                                2, 0, 0, 0))
        write_batch(conn, Batch("oss1", 2, T0 + 3720, ("fs-OST0000",), [], 0, 0, 0, 0))
        conn.commit()
        ld = load_mod.load(conn, at=T0 + 1080 + 30, now=T0 + 7200)
        top = {g.key: g for g in load_mod.group(ld, "job") if g.kind == "job"}
        assert round(top[31].get("write_bytes")) == 400  # the figures as before
        assert round(top[32].get("write_bytes")) == 100
        assert [round(x[1]) for x in load_mod.span(ld, top[31])] == [0, 400]
        assert [round(x[1]) for x in load_mod.span(ld, top[32])] == [100, 500]
        attribute_jobs(conn, pending_jobs(conn, 0), now=T0 + 7200)
        for job, expected in ((31, {"least": 0, "most": 400}),
                              (32, {"least": 100, "most": 500})):
            (info,) = find_jobs(conn, str(job))
            assert job_report(conn, info, now=T0 + 7200)["ranges"]["write_bytes"] == expected
