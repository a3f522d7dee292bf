"""The spool's file format: exact round trip, older pickled batches still readable."""

from __future__ import annotations

import marshal
import pickle

import pytest

from slurm_io.model import Batch, ByteStats, Delta, DeltaFlag, IdClass, JobId
from slurm_io.store import batch_file
from slurm_io.store.spool import Spool


def _batch() -> Batch:
    big = ByteStats(7, 4096, 1 << 22, 9 << 20, (1 << 70) + 3, (("4K", 2), ("4M", 5)))
    deltas = [
        (Delta("fs-OST0001", '"5:1000:n1"', "5:1000:n1", 100.0, 220.0, 219.5,
               {"write_bytes": 7, "punch": 2, "future_op": 1}, {"write_bytes": big},
               DeltaFlag.NEW | DeltaFlag.GAP, 130.25),
         JobId(IdClass.EXACT, 5, 1000, "n1", None, True)),
        (Delta("fs-MDT0000", "python3.1001", "python3.1001", 100.0, 220.0, None, {"open": 3},
               {}, 0),
         JobId(IdClass.EXE, None, 1001, None, "python3", False)),
        (Delta("fs-MDT0000", "tär\u00e9", "tär\u00e9", 100.0, 220.0, None, {"open": 1},
               {"read_bytes": ByteStats(1, 0, 0, 0, None, None)}, 0),
         JobId(IdClass.UNRECOVERABLE, None, None, None, None, False)),
    ]
    return Batch("oss1", 42, 220.0, ("fs-MDT0000", "fs-OST0001"), deltas, 9, 1, 1, 2)


def test_a_batch_survives_encoding_exactly():
    batch = _batch()
    back = batch_file.decode(batch_file.encode(batch))
    assert back == batch
    assert [j.id_class for _, j in back.deltas] == [IdClass.EXACT, IdClass.EXE,
                                                    IdClass.UNRECOVERABLE]
    assert back.deltas[0][0].stats["write_bytes"].sumsq == (1 << 70) + 3


def test_a_batch_pickled_by_an_older_version_is_still_read(tmp_path):
    batch = _batch()
    path = tmp_path / "oss1.000000000042.batch"
    path.write_bytes(pickle.dumps(batch, protocol=5))
    assert Spool(tmp_path).load(path) == batch


def test_a_file_that_is_no_batch_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "oss1.000000000001.batch"
    path.write_bytes(b"hello world")
    with pytest.raises(ValueError, match="not a spooled batch"):
        Spool(tmp_path).load(path)
    path.write_bytes(pickle.dumps({"not": "a batch"}))
    with pytest.raises(ValueError, match="not a Batch"):
        Spool(tmp_path).load(path)


def test_a_spooled_file_read_by_a_new_process_equals_the_batch(tmp_path):
    batch = _batch()
    path = Spool(tmp_path).put(batch)
    assert path.read_bytes().startswith(batch_file.MAGIC)
    assert Spool(tmp_path).load(path) == batch


def test_a_batch_written_in_many_records_reads_back_equal(monkeypatch):
    monkeypatch.setattr(batch_file, "_RECORD_DELTAS", 1)
    batch = _batch()
    assert batch_file.decode(batch_file.encode(batch)) == batch


def test_a_batch_of_the_first_marshal_format_is_still_read():
    batch = _batch()
    old = (batch.collector, batch.seq, batch.read_time, batch.targets,
           batch_file._plain(batch.deltas), batch.n_entries, batch.n_problems,
           batch.n_repaired, batch.n_unattributable)
    assert batch_file.decode(b"SIOB\x01" + marshal.dumps(old, 4)) == batch


def test_a_batch_spooled_before_entry_start_was_kept_is_still_read():
    batch = _batch()
    plain = [row[:15] for row in batch_file._plain(batch.deltas)]
    old = (batch.collector, batch.seq, batch.read_time, batch.targets, plain,
           batch.n_entries, batch.n_problems, batch.n_repaired, batch.n_unattributable)
    got = batch_file.decode(b"SIOB\x01" + marshal.dumps(old, 4))
    assert got.deltas[0][0] == batch.deltas[0][0]._replace(entry_start=None)


def test_a_cut_batch_file_is_refused_not_half_read(monkeypatch):
    monkeypatch.setattr(batch_file, "_RECORD_DELTAS", 1)
    data = batch_file.encode(_batch())
    with pytest.raises((ValueError, EOFError)):
        batch_file.decode(data[:-30])
