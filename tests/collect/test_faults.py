"""Fault injection on the collector's own files and inputs, on a real PostgreSQL.

Each fault ends with exactly the rows of an undisturbed run, or with the loss counted and
shown (a `problem` row saying what was lost); nothing is ever stored twice or blocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from slurm_io.collect import daemon
from slurm_io.repair.jobid import ClassifyCache, JobIdGrammar
from slurm_io.simulate import simulate
from slurm_io.store.spool import Spool
from tests.collect.test_collector import stored_rows

START = 1_795_000_000.0
REPO = Path(__file__).resolve().parents[2]
JOBIO = Path(sys.executable).with_name("jobio")
FLAGS = 8  # column of ROWS_SQL holding flags (RESET_ABSENT needs two reads of history)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("faults") / "cluster"
    simulate(out, seed=11, start=START, hours=1.0, n_nodes=8, n_oss=2, jobs_per_hour=14)
    return out


@pytest.fixture(scope="module")
def undisturbed(cluster, pg_dsn, _migrated_template, tmp_path_factory) -> list[tuple]:
    """The rows of an undisturbed replay of `cluster` (computed once)."""
    name = f"faults_clean_{os.getpid()}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(_migrated_template)))
    dsn = make_conninfo(pg_dsn, dbname=name)
    replay(cluster, dsn, tmp_path_factory.mktemp("clean-state"))
    return stored_rows(dsn)


def replay(folder: Path, dsn: str, state: Path, stop_after: int | None = None
           ) -> dict[str, int]:
    link = daemon.DatabaseLink(lambda: psycopg.connect(dsn, connect_timeout=2))
    stop = daemon.StopFlag()
    seen = []

    def on_read(server: str, t: float) -> None:
        seen.append(t)
        if stop_after is not None and len(seen) >= stop_after:
            stop.event.set()

    try:
        return daemon.replay(folder, state_dir=state, spool=Spool(state / "spool"), link=link,
                             classify=ClassifyCache(JobIdGrammar()), period=120.0, stop=stop,
                             on_read=on_read)
    finally:
        link.reset()


def problems(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT source, reason, lost FROM problem ORDER BY id").fetchall()


def batches(dsn: str) -> tuple[int, int]:
    with psycopg.connect(dsn) as conn:
        n, reads = conn.execute(
            "SELECT count(*), count(DISTINCT (collector, read_time)) FROM ingest_batch"
        ).fetchone()
    return n, reads


def assert_exact_or_loss_shown(got: list[tuple], expected: list[tuple], dsn: str) -> None:
    """Nothing stored twice or invented; whatever is missing is one interval per server,
    and the problem table says what was lost."""
    if got == expected:
        return
    strip = [r[:FLAGS] + r[FLAGS + 1:] for r in got]
    want = [r[:FLAGS] + r[FLAGS + 1:] for r in expected]
    assert not Counter(strip) - Counter(want), "rows stored that an undisturbed run has not"
    missing = Counter(want) - Counter(strip)
    lost_intervals = {(r[3].split("-")[0], r[1]) for r in missing}  # (fs, ts_end)
    assert len({end for _, end in lost_intervals}) <= 2  # one read of each server at most
    lost = [p for p in problems(dsn) if p[2]]
    assert lost, "a loss that the problem table does not show"


def cut(state: Path, name: str = "oss01") -> Path:
    return state / "collector" / f"{name}.state"


# -- finding 3: a state of another database -------------------------------------------------

def test_a_replay_into_a_fresh_database_stores_everything(cluster, undisturbed, db_dsn,
                                                        pg_dsn, tmp_path):
    state = tmp_path / "state"
    replay(cluster, db_dsn, state)
    fresh = f"fresh_{os.getpid()}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(fresh)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(fresh)))
    dsn = make_conninfo(pg_dsn, dbname=fresh)
    r = subprocess.run([str(JOBIO), "--dsn", dsn, "--state-dir", str(state), "collect",
                        "--from", str(cluster)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "skipped=0" in r.stdout
    assert stored_rows(dsn) == undisturbed
    assert "set aside" in r.stderr
    assert list((state / "collector").glob("oss01.state.set-aside-*"))  # renamed, kept


# -- finding 4: lost or damaged collector files ----------------------------------------------

def _fault_run(cluster: Path, dsn: str, state: Path, fault: Callable[[Path, str], None],
               resume_all: bool = False) -> None:
    """Collect the first two thirds of the reads, apply `fault`, collect the rest.

    The second run sees only the reads after the fault, as a live collector would (a
    replay of the whole folder again would recompute the lost state from the old reads).
    `resume_all`: resume with the whole folder, as `--from` is run again after a crash.
    """
    files = sorted(cluster.glob("*/*.txt"), key=lambda p: float(p.stem))
    split = float(files[len(files) * 2 // 3].stem)
    parts = (state.parent / "before", state.parent / "after")
    for f in files:
        dst = parts[float(f.stem) >= split] / f.parent.name
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst / f.name)
    replay(parts[0], dsn, state)
    fault(state, dsn)
    totals = replay(cluster if resume_all else parts[1], dsn, state)
    assert totals["spool_depth"] == 0


def _remove_state(state: Path, dsn: str) -> None:
    for p in (state / "collector").glob("oss01.state*"):
        p.unlink()


def _damage_journal_middle(state: Path, dsn: str) -> None:
    journal = cut(state).with_name("oss01.state.journal")
    data = bytearray(journal.read_bytes())
    assert len(data) > 1000
    data[20] ^= 0xFF  # the first record's payload
    journal.write_bytes(bytes(data))


def _remove_snapshot(state: Path, dsn: str) -> None:
    assert cut(state).with_name("oss01.state.journal").exists()
    cut(state).unlink()


def _damage_snapshot(state: Path, dsn: str) -> None:
    data = bytearray(cut(state).read_bytes())
    data[len(data) // 3:len(data) // 3 + 200] = os.urandom(200)
    cut(state).write_bytes(bytes(data))


def _tear_last_journal_record(state: Path, dsn: str) -> None:
    # what kill -9 in the middle of a state save leaves: the last record cut short, and
    # its batch spooled but never sent (the flush comes after the save)
    journal = cut(state).with_name("oss01.state.journal")
    data = journal.read_bytes()
    journal.write_bytes(data[:-37])
    with psycopg.connect(dsn) as conn:
        seq, t, targets = conn.execute(
            "SELECT seq, read_time, targets FROM ingest_batch WHERE collector = 'oss01'"
            " ORDER BY seq DESC LIMIT 1").fetchone()
        conn.execute("DELETE FROM jobstats_delta d USING fs_target t WHERE"
                     " t.target_id = d.target_id AND d.ts_end = %s AND t.name = ANY(%s)",
                     (t, targets))
        conn.execute("DELETE FROM ingest_batch WHERE collector = 'oss01' AND seq = %s",
                     (seq,))


@pytest.mark.parametrize("fault", [_remove_state, _damage_journal_middle, _remove_snapshot,
                                   _damage_snapshot])
def test_a_lost_or_damaged_state_loses_at_most_one_interval_and_says_so(
        fault, cluster, undisturbed, db_dsn, tmp_path):
    _fault_run(cluster, db_dsn, tmp_path / "state", fault)
    assert_exact_or_loss_shown(stored_rows(db_dsn), undisturbed, db_dsn)
    n, distinct_reads = batches(db_dsn)
    n_files = sum(1 for _ in cluster.glob("*/*.txt"))
    # no batch was taken for "already stored" under a reused number: one per read
    assert n == distinct_reads == n_files


def test_a_torn_journal_record_ends_with_exactly_the_undisturbed_rows(
        cluster, undisturbed, db_dsn, tmp_path):
    _fault_run(cluster, db_dsn, tmp_path / "state", _tear_last_journal_record,
               resume_all=True)
    assert stored_rows(db_dsn) == undisturbed


# -- finding 5: an old capture filed under a newer name ---------------------------------------

def test_a_stale_read_filed_late_is_skipped_not_taken_for_a_reset(cluster, undisturbed,
                                                                 db_dsn, tmp_path):
    folder = tmp_path / "late"
    shutil.copytree(cluster, folder)
    files = sorted((folder / "oss01").glob("*.txt"), key=lambda p: float(p.stem))
    late = (float(files[12].stem) + float(files[13].stem)) / 2
    shutil.copy(files[5], folder / "oss01" / f"{late:.3f}.txt")  # an old capture, filed late
    totals = replay(folder, db_dsn, tmp_path / "state")
    assert totals["stale"] == 1
    assert stored_rows(db_dsn) == undisturbed  # not +76 % on open
    stale = [p for p in problems(db_dsn) if "stale" in p[1]]
    assert stale and all(p[0] == "jobstats" for p in stale)


# -- full disk under the spool ------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A 3 MiB tmpfs of our own (root only), unmounted at the end."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(mnt)],
                   check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_a_full_disk_under_the_spool_stops_the_replay_cleanly_and_it_resumes(
        cluster, undisturbed, db_dsn, small_disk, tmp_path):
    state = small_disk / "state"
    st = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"x" * (st.f_bavail * st.f_frsize - 60_000))
    down = "host=/nonexistent-socket-dir dbname=x connect_timeout=1"
    cmd = [str(JOBIO), "--state-dir", str(state), "collect", "--from", str(cluster)]
    # the database is down: batches pile up in the spool until the disk is full
    r = subprocess.run([cmd[0], "--dsn", down, *cmd[1:]], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 4, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("jobio collect: no space left")
    assert list((state / "spool").glob("*.batch"))
    spooled = len(list((state / "spool").glob("*.batch")))
    # the database is back, the disk still nearly full: the spool is sent first, which
    # frees its space, and the replay goes on as far as the state still fits
    r = subprocess.run([cmd[0], "--dsn", db_dsn, *cmd[1:]], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode in (0, 4) and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert batches(db_dsn)[0] > spooled
    # space again: the replay ends with exactly the rows of an undisturbed run
    (small_disk / "filler").unlink()
    r = subprocess.run([cmd[0], "--dsn", db_dsn, *cmd[1:]], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert stored_rows(db_dsn) == undisturbed


def test_usage_shows_the_problems_and_losses_of_the_period(cluster, db_dsn, tmp_path):
    _fault_run(cluster, db_dsn, tmp_path / "state", _remove_state)
    args = [str(JOBIO), "--dsn", db_dsn, "usage", "-S", "2026-11-18", "-E", "now+1days"]
    r = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["problems"]
    with psycopg.connect(db_dsn) as conn:
        n, n_lost = conn.execute("SELECT count(*), count(lost) FROM problem").fetchone()
    assert got["total"] == n and got["losses"] == n_lost >= 1
    assert got["by_source"]["state"] >= 1
    table = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    assert f"problems recorded: {n}" in table and f"losses: {n_lost}" in table


def _legacy_snapshots(state: Path, dsn: str) -> None:
    """Rewrite each snapshot as the version before identities wrote it (format 5)."""
    import marshal

    for path in (state / "collector").glob("*.state"):
        records = []
        with open(path, "rb") as f:
            while True:
                try:
                    records.append(marshal.load(f))
                except EOFError:
                    break
        magic, _, n = records[0]
        records[0], records[1] = (magic, 5, n), records[1][:2]
        path.write_bytes(b"".join(marshal.dumps(r, 2) for r in records))


def test_an_upgraded_collector_keeps_its_state_of_the_database_that_has_its_batches(
        cluster, undisturbed, db_dsn, tmp_path):
    _fault_run(cluster, db_dsn, tmp_path / "state", _legacy_snapshots)
    assert stored_rows(db_dsn) == undisturbed
    assert problems(db_dsn) == []


def test_a_damaged_state_keeps_the_batches_still_spooled_and_numbers_after_them(tmp_path):
    from slurm_io.collect.collector import Collector
    from slurm_io.model import Batch

    spool = Spool(tmp_path / "spool")
    for seq in (5, 6, 7):  # spooled during an outage, then the state file was damaged
        spool.put(Batch("oss01", seq, START + 120 * seq, (), [], 0, 0, 0, 0))
    path = cut(tmp_path)
    path.parent.mkdir()
    path.write_bytes(b"not a state")
    c = Collector("oss01", tmp_path, spool, ClassifyCache(JobIdGrammar()), 120.0)
    assert c.seq == 7 and spool.depth() == 3
    assert c.last_read_time == START + 120 * 7 and c.lost_since == START + 120 * 7
    assert [p.source for p in c.problems] == ["state"] and c.problems[0].lost is None
