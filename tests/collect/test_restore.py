"""A database restored from a backup (`pg_dump -Fc` / `pg_restore`) on the real PostgreSQL.

The finding of issue 20: a scenario collected in three parts, the database dumped after the
first and restored after the second, stored 14,053 of an undisturbed run's 20,048 rows and
said "losses: 0": the restored database keeps its identity, so the collectors believed the
lost batches stored. With the replay window the collectors send them again (rows equal an
undisturbed run); beyond the window the loss is counted, logged once and shown.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.collect import daemon
from slurm_io.exporter import sql as exporter_sql
from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
from slurm_io.simulate import simulate
from slurm_io.store.spool import Spool
from tests.collect.test_collector import stored_rows

START = 1_795_000_000.0
PG_BIN = Path("/usr/lib/postgresql/15/bin")
JOBIO = Path(sys.executable).with_name("jobio")
WINDOW = 3 * 86400.0  # the default `[collect] replay_window`


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("restore") / "cluster"
    simulate(out, seed=17, start=START, hours=1.0, n_nodes=8, n_oss=2, jobs_per_hour=14)
    return out


def _database(pg_dsn: str, template: str, name: str) -> str:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)))
    dsn = make_conninfo(pg_dsn, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT jobio_new_identity()")
    return dsn


def replay(folder: Path, dsn: str, state: Path, window: float | None, *,
           stop_after: int | None = None) -> dict[str, int]:
    """`jobio collect --from` as the daemon runs it, stopping after `stop_after` reads."""
    link = daemon.DatabaseLink(lambda: psycopg.connect(dsn, connect_timeout=2))
    stop = daemon.StopFlag()
    seen: list[float] = []

    def on_read(server: str, t: float) -> None:
        seen.append(t)
        if stop_after is not None and len(seen) >= stop_after:
            stop.event.set()

    try:
        return daemon.replay(folder, state_dir=state,
                             spool=Spool(state / "spool", replay_window=window), link=link,
                             classify=ClassifyCache(JobIdGrammar()), period=120.0, stop=stop,
                             on_read=on_read)
    finally:
        link.reset()


@pytest.fixture(scope="module")
def undisturbed(cluster, pg_dsn, _migrated_template, tmp_path_factory) -> list[tuple]:
    dsn = _database(pg_dsn, _migrated_template, f"restore_clean_{os.getpid()}")
    replay(cluster, dsn, tmp_path_factory.mktemp("clean-state"), None)
    return stored_rows(dsn)


def sums(rows: list[tuple]) -> Counter:
    """Bytes and operations per (target, job, interval): what a restore must not change."""
    out: Counter = Counter()
    for r in rows:
        key = (r[3], r[5], r[9], r[0], r[1])  # target, job, raw id, ts_start, ts_end
        out[(*key, "read")] += r[10] or 0
        out[(*key, "write")] += r[16] or 0
        out[(*key, "ops")] += sum(x or 0 for x in r[22:30])
    return out


def dump(dsn: str, path: Path) -> None:
    subprocess.run([str(PG_BIN / "pg_dump"), "-Fc", "-f", str(path), "-d", dsn], check=True,
                   capture_output=True, timeout=300)


def drop_and_restore(pg_dsn: str, dsn: str, path: Path) -> None:
    """The database host died: the database is created anew and restored from the dump."""
    name = conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(
            sql.Identifier(name)))
    subprocess.run([str(PG_BIN / "pg_restore"), "-d", dsn, "--exit-on-error", str(path)],
                   check=True, capture_output=True, timeout=300)


def newest_batches(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("SELECT collector, max(seq) FROM ingest_batch GROUP BY 1"))


def collect_in_three_parts(cluster: Path, pg_dsn: str, dsn: str, state: Path,
                           window: float | None, tmp: Path) -> dict[str, tuple[int, int]]:
    """Part 1, `pg_dump`, part 2, drop and restore, part 3; each collector's newest batch
    at the dump and at the restore."""
    n_reads = len(list(cluster.glob("*/*.txt")))
    first, second = n_reads // 3, n_reads // 3
    assert replay(cluster, dsn, state, window, stop_after=first)["reads"] == first
    at_dump = newest_batches(dsn)
    dump(dsn, tmp / "T1.dump")
    assert replay(cluster, dsn, state, window, stop_after=second)["reads"] == second
    at_restore = newest_batches(dsn)
    drop_and_restore(pg_dsn, dsn, tmp / "T1.dump")
    assert newest_batches(dsn) == at_dump
    if window == WINDOW:  # the rest as a site runs it: the installed `jobio collect --from`
        r = subprocess.run([str(JOBIO), "--dsn", dsn, "--state-dir", str(state), "collect",
                            "--from", str(cluster)], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "spooled again" in r.stderr and "spool_depth=0" in r.stdout
        assert "lost" not in r.stderr
    else:
        assert replay(cluster, dsn, state, window)["spool_depth"] == 0
    return {c: (at_dump.get(c, 0), seq) for c, seq in at_restore.items()}


def test_a_restored_database_gets_back_every_batch_committed_since_the_dump(
        cluster, undisturbed, pg_dsn, db_dsn, tmp_path, caplog):
    state = tmp_path / "state"
    with caplog.at_level(logging.WARNING, logger="slurm_io.collect"):
        collect_in_three_parts(cluster, pg_dsn, db_dsn, state, WINDOW, tmp_path)
    got = stored_rows(db_dsn)
    assert len(got) == len(undisturbed)
    assert sums(got) == sums(undisturbed)
    assert got == undisturbed
    assert not [r for r in caplog.records if "lost" in r.getMessage()]
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM problem WHERE lost IS NOT NULL"
                            ).fetchone()[0] == 0
    # the kept batches are the spool's compressed copies, per database identity
    kept = list((state / "spool" / "kept").glob("*/*.batch.z"))
    assert kept and not list((state / "spool").glob("*.batch"))


def test_a_restore_older_than_the_window_counts_the_loss_logs_it_once_and_shows_it(
        cluster, undisturbed, pg_dsn, db_dsn, tmp_path, caplog):
    state = tmp_path / "state"
    with caplog.at_level(logging.WARNING, logger="slurm_io.collect"):
        seqs = collect_in_three_parts(cluster, pg_dsn, db_dsn, state, 0.0, tmp_path)
    # a window of 0 keeps only each collector's newest batch: the ones before it are lost
    lost_batches = {c: t2 - t1 - 1 for c, (t1, t2) in seqs.items() if t2 - t1 > 1}
    assert lost_batches
    got = stored_rows(db_dsn)
    # nothing invented or stored twice; what is missing is what the window did not keep
    assert not sums(got) - sums(undisturbed)
    assert len(got) < len(undisturbed)
    told = [r for r in caplog.records if "older than the replay window" in r.getMessage()]
    servers = sorted(lost_batches)
    assert all(r.levelno == logging.WARNING for r in told)
    assert sorted(r.getMessage().split(":")[0] for r in told) == servers  # once each
    with psycopg.connect(db_dsn) as conn:
        lost = dict(conn.execute("SELECT origin, lost FROM problem WHERE source = 'restore'"
                                 ).fetchall())
        assert sorted(lost) == servers
        for c, n in lost_batches.items():
            t1 = seqs[c][0]
            assert lost[c].startswith(f"{c}: {n} batch(es) {t1 + 1}..{t1 + n}: I/O after ")
        shown = dict((s, n) for s, n, _ in exporter_sql.problems(conn))
        n, n_lost = conn.execute("SELECT count(*), count(lost) FROM problem").fetchone()
    assert shown["restore"] == len(servers)  # the exporter's jobio_problems{source=restore}
    args = [str(JOBIO), "--dsn", db_dsn, "usage", "-S", "2026-11-18", "-E", "now+1days"]
    r = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    problems = json.loads(r.stdout)["problems"]
    assert problems["losses"] == n_lost >= len(servers)
    assert problems["by_source"]["restore"] == len(servers)
    table = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    assert f"problems recorded: {n}" in table and f"losses: {n_lost}" in table


def test_a_replay_window_that_is_no_duration_is_refused_in_one_line(cluster, db_dsn,
                                                                    tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[collect]\nreplay_window = "three days"\n')
    r = subprocess.run([str(JOBIO), "--config", str(config), "--dsn", db_dsn, "--state-dir",
                        str(tmp_path / "state"), "collect", "--from", str(cluster)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "replay_window" in lines[0] and "three days" in lines[0]
