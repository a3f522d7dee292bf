"""The kept copies of committed batches (store.kept): what the window keeps and removes.

Real files in a temporary spool; the disk cost is measured by bench/bench_replay_window.py.
"""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

from slurm_io.store.kept import Gap, Kept, gap

DB, OTHER = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"


def committed(kept: Kept, spool: Path, collector: str, seq: int, db: str = DB,
              age: float = 0.0) -> Path:
    """A spooled batch file the database committed, handed to the kept copies `age` s ago."""
    src = spool / f"{collector}.{seq:012d}.batch"
    src.write_bytes(f"batch {collector} {seq} ".encode() * 100)
    kept.keep(src, collector, seq, db)
    path = kept.path(db, collector, seq)
    t = time.time() - age
    os.utime(path, (t, t))
    return path


def test_a_committed_batch_leaves_the_spool_compressed_and_comes_back_unchanged(tmp_path):
    kept = Kept(tmp_path, 3600.0)
    path = committed(kept, tmp_path, "oss01", 7)
    assert not (tmp_path / "oss01.000000000007.batch").exists()
    assert path.stat().st_size < 2700
    back = tmp_path / "again.batch"
    assert kept.restore("oss01", 7, DB, back)
    assert back.read_bytes() == b"batch oss01 7 " * 100
    assert zlib.decompress(path.read_bytes()) == back.read_bytes()
    assert kept.seqs("oss01", DB) == [7] and kept.newest("oss01", DB) == 7
    assert not kept.restore("oss01", 8, DB, tmp_path / "none.batch")


def test_the_window_removes_old_copies_but_keeps_each_collectors_newest(tmp_path):
    kept = Kept(tmp_path, 3600.0)
    for seq in (1, 2, 3):
        committed(kept, tmp_path, "oss01", seq, age=7200.0)
    committed(kept, tmp_path, "mds01", 1, age=7200.0)
    committed(kept, tmp_path, "oss01.lab", 4, age=10.0)  # a dotted name is its own
    assert kept.prune(force=True) == 2
    assert kept.seqs("oss01", DB) == [3]  # older than the window, but the newest: the mark
    assert kept.seqs("mds01", DB) == [1]
    assert kept.seqs("oss01.lab", DB) == [4]
    # a fresh Kept (a restarted collector) finds the newest on disk
    assert Kept(tmp_path, 3600.0).newest("oss01", DB) == 3


def test_copies_for_another_database_go_entirely_once_older_than_the_window(tmp_path):
    kept = Kept(tmp_path, 3600.0)
    committed(kept, tmp_path, "oss01", 5, db=OTHER, age=7200.0)
    committed(kept, tmp_path, "oss01", 1, age=10.0)  # the collector moved on to DB
    kept.prune(force=True)
    assert not (tmp_path / "kept" / OTHER).exists()
    assert kept.seqs("oss01", DB) == [1]


def test_a_full_disk_frees_every_copy_but_the_marks(tmp_path):
    kept = Kept(tmp_path, 86400.0)
    for seq in range(1, 6):
        committed(kept, tmp_path, "oss01", seq)
    assert kept.free() == 4
    assert kept.seqs("oss01", DB) == [5]


def test_a_window_of_0s_keeps_only_each_collectors_newest_batch(tmp_path):
    kept = Kept(tmp_path, 0.0)  # "0s": only the newest is kept, pruned at every commit
    for seq in (1, 2, 3):
        committed(kept, tmp_path, "oss01", seq, age=1.0)
    committed(kept, tmp_path, "oss01", 4)
    assert kept.seqs("oss01", DB) == [4]


def test_the_gap_of_a_restored_database_is_what_to_send_again_and_what_is_lost():
    assert gap(10, [3, 4, 5]) == Gap([], None)  # the database has them all
    assert gap(4, [3, 4, 5, 6]) == Gap([5, 6], None)  # all kept: nothing lost
    assert gap(2, [7, 8]) == Gap([7, 8], (3, 6))  # 3..6 were pruned: lost
    assert gap(0, [9]) == Gap([9], (1, 8))  # restored from before the first batch


def test_on_a_compressed_clock_the_window_passes_as_fast(tmp_path, monkeypatch):
    """A soak (bench/soak.py) runs the daemons' clock 1440 times faster (slurm_io/clock.py):
    a 3-day window is then 180 wall seconds of the files' mtimes."""
    from slurm_io import clock

    monkeypatch.setenv(clock.ENV, f"1790000000 {time.time()} 1440")
    clock._compressed.cache_clear()
    try:
        kept = Kept(tmp_path, 3 * 86400.0)
        committed(kept, tmp_path, "oss01", 1, age=200.0)  # 3.3 simulated days ago
        committed(kept, tmp_path, "oss01", 2, age=100.0)  # 1.7 days
        committed(kept, tmp_path, "oss01", 3, age=0.0)
        assert kept.prune(force=True) == 1
        assert kept.seqs("oss01", DB) == [2, 3]
    finally:
        clock._compressed.cache_clear()
