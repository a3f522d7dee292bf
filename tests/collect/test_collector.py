"""The collector end to end on a real PostgreSQL: replay, outages, crashes, damaged input."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from slurm_io.collect import daemon
from slurm_io.model import METADATA_OPS
from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
from slurm_io.report.usage import usage
from slurm_io.simulate import simulate
from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from slurm_io.store.spool import Spool

START = 1_795_000_000.0
REPO = Path(__file__).resolve().parents[2]

ROWS_SQL = """
    SELECT d.ts_start, d.ts_end, d.last_update, t.name, d.id_class, d.job, d.uid, h.name,
           d.flags, d.raw_id, d.read_bytes, d.read_bytes_samples, d.read_bytes_sumsq,
           d.read_bytes_min, d.read_bytes_max, d.read_bytes_hist::text, d.write_bytes,
           d.write_bytes_samples, d.write_bytes_sumsq, d.write_bytes_min, d.write_bytes_max,
           d.write_bytes_hist::text, d.op_open, d.op_close, d.op_getattr, d.op_mkdir,
           d.op_unlink, d.op_read, d.op_write, d.op_statfs, d.extra::text
    FROM jobstats_delta d JOIN fs_target t USING (target_id) LEFT JOIN host h USING (host_id)
    ORDER BY 1, 2, 4, 10
"""


def stored_rows(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(ROWS_SQL).fetchall()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "cluster"
    simulate(out, seed=5, start=START, hours=1.5, n_nodes=16, n_oss=2, jobs_per_hour=12)
    return out


def replay(sim: Path, dsn: str, state: Path, on_read=None) -> dict[str, int]:
    link = daemon.DatabaseLink(lambda: psycopg.connect(dsn, connect_timeout=2))
    try:
        return daemon.replay(sim, state_dir=state, spool=Spool(state / "spool"), link=link,
                             classify=ClassifyCache(JobIdGrammar()), period=120.0,
                             on_read=on_read)
    finally:
        link.reset()


def test_replay_stores_exactly_the_visible_io_of_the_simulated_cluster(cluster, db_dsn,
                                                                      tmp_path):
    totals = replay(cluster, db_dsn, tmp_path / "state")
    truth = json.loads((cluster / "truth.json").read_text())["totals"]["visible"]
    n_files = sum(1 for _ in cluster.glob("*/*.txt"))
    assert totals["reads"] == n_files and totals["spool_depth"] == 0
    with psycopg.connect(db_dsn) as conn:
        u = usage(conn, START - 3600, START + 86400)
        (n_batches,) = conn.execute("SELECT count(*) FROM ingest_batch").fetchone()
    assert n_batches == n_files
    assert u.totals["read_bytes"] == truth["read_bytes"]
    assert u.totals["write_bytes"] == truth["write_bytes"]
    # every class adds up to the total: nothing is lost between classes
    for counter in ("read_bytes", "write_bytes", "open"):
        assert sum(c.get(counter, 0) for c in u.by_class.values()) == u.totals[counter]
    assert {"exact", "job_missing", "exe", "system"} <= set(u.by_class)
    assert sum(v for k, v in u.totals.items() if k in METADATA_OPS) > 0


def test_replaying_the_same_folder_again_adds_nothing(cluster, db_dsn, tmp_path):
    replay(cluster, db_dsn, tmp_path / "state")
    before = stored_rows(db_dsn)
    again = replay(cluster, db_dsn, tmp_path / "state")
    assert again["reads"] == 0 and again["skipped"] > 0
    assert stored_rows(db_dsn) == before


def test_database_stopped_during_replay_ends_with_the_rows_of_an_uninterrupted_run(
        cluster, db_dsn, tmp_path, pg_tmp_path):
    replay(cluster, db_dsn, tmp_path / "clean")
    expected = stored_rows(db_dsn)

    server = EmbeddedPostgres(pg_tmp_path / "outage")
    dsn = server.ensure()
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
    seen = []

    def on_read(server_name: str, t: float) -> None:
        seen.append(t)
        if len(seen) == 5:
            server.stop()
        if len(seen) == 25:
            server.start()

    state = tmp_path / "interrupted"
    totals = replay(cluster, dsn, state, on_read=on_read)
    try:
        assert totals["spool_depth"] == 0
        assert stored_rows(dsn) == expected
    finally:
        server.stop()


def _run_cli(args: list[str], **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "slurm_io.cli", *args], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kw)


def test_sigkill_and_restart_neither_loses_nor_doubles_an_interval(cluster, db_dsn, tmp_path,
                                                                    pg_dsn):
    replay(cluster, db_dsn, tmp_path / "clean")
    expected = stored_rows(db_dsn)

    from psycopg.conninfo import make_conninfo
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS sigkill_target")
        conn.execute("CREATE DATABASE sigkill_target")
    dsn = make_conninfo(pg_dsn, dbname="sigkill_target")
    state = tmp_path / "killed"
    args = ["--dsn", dsn, "--state-dir", str(state), "collect", "--from", str(cluster)]
    kills = 0
    for kill_after in (3, 7, 1, 11, 2):
        p = _run_cli(args)
        cycles = 0
        assert p.stderr is not None
        for line in p.stderr:
            if " cycle " in line:
                cycles += 1
                if cycles == kill_after:
                    p.send_signal(signal.SIGKILL)
                    kills += 1
                    break
        p.wait()
    final = _run_cli(args)
    _, err = final.communicate(timeout=300)
    assert final.returncode == 0, err[-2000:]
    assert kills >= 3
    assert stored_rows(dsn) == expected


def test_garbage_truncated_and_interleaved_reads_are_counted_and_lose_nothing(
        cluster, db_dsn, tmp_path, pg_dsn):
    damaged = tmp_path / "damaged"
    shutil.copytree(cluster, damaged)
    files = sorted((damaged / "oss01").glob("*.txt"), key=lambda p: float(p.stem))
    # garbage between two reads, a truncated read, and two reads interleaved line by line
    t_mid = (float(files[10].stem) + float(files[11].stem)) / 2
    (damaged / "oss01" / f"{t_mid:.3f}.txt").write_bytes(os.urandom(3000).replace(b"\0", b"x"))
    text = files[20].read_text()
    files[20].write_text(text[: len(text) * 2 // 3])
    a = files[30].read_text().splitlines(keepends=True)
    b = files[29].read_text().splitlines(keepends=True)
    files[30].write_text("".join(x for pair in zip(a, b, strict=False) for x in pair)
                         + "".join(a[len(b):]))

    totals = replay(damaged, db_dsn, tmp_path / "state")
    assert totals["problems"] > 0
    with psycopg.connect(db_dsn) as conn:
        (problems,) = conn.execute("SELECT sum(n_problems) FROM ingest_batch").fetchone()
        u = usage(conn, START - 3600, START + 86400)
    assert problems == totals["problems"]
    truth = json.loads((cluster / "truth.json").read_text())["totals"]["visible"]
    # damage delays counting to the next good read; it must not drop or double bytes
    assert u.totals["read_bytes"] == truth["read_bytes"]
    assert u.totals["write_bytes"] == truth["write_bytes"]
