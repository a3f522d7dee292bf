"""The collector state survives a save/load round trip exactly."""

from __future__ import annotations

import marshal

import pytest

from slurm_io.delta import state_file
from slurm_io.delta.engine import compute
from slurm_io.model import counts
from slurm_io.parse.jobstats import parse
from tests.parse import samples


def test_state_round_trips_through_the_file(tmp_path):
    r = parse(samples.V2_16_LCTL + samples.V2_10_OST, previous={})
    st = compute({}, r.targets, 100.0).state
    st = compute(st, {"home-OST0001": []}, 220.0, damaged={"home-OST0001"}).state
    path = tmp_path / "c" / "x.state"
    state_file.save(path, state_file.CollectorState(7, st))
    back = state_file.load(path)
    assert back.seq == 7 and back.targets == st
    assert back.targets["home-OST0001"].since  # carried entries keep their start
    assert not list(path.parent.glob("*.tmp"))


def test_missing_state_is_empty(tmp_path):
    assert state_file.load(tmp_path / "none") == state_file.CollectorState(0, {})


def test_corrupt_state_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.state"
    p.write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match="unreadable collector state"):
        state_file.load(p)


def _big_state():
    text = samples.V2_15_2_OST.split("job_stats:\n", 1)[1]
    body = "".join(text.replace("556\\x3A", f"{556 + i}\\x3A").replace(
        "tar\\x20x.1601", f"tar{i}.1601") for i in range(40))
    r = parse("job_stats:\n" + body, previous={})
    return compute({}, r.targets, 100.0).state, r


def test_a_state_written_in_many_records_reads_back_equal(tmp_path, monkeypatch):
    monkeypatch.setattr(state_file, "_RECORD_ENTRIES", 7)
    st, r = _big_state()
    assert r.n_entries == 80
    path = tmp_path / "x.state"
    state_file.save(path, state_file.CollectorState(3, st))
    assert state_file.load(path) == state_file.CollectorState(3, st)


def test_a_reused_encoder_writes_what_a_fresh_one_writes(tmp_path):
    st, _ = _big_state()
    enc = state_file.Encoder()
    state_file.save(tmp_path / "a", state_file.CollectorState(1, st), enc)
    # next read: the same entries (reused by digest), written again with the warm encoder
    state_file.save(tmp_path / "a", state_file.CollectorState(2, st), enc)
    state_file.save(tmp_path / "b", state_file.CollectorState(2, st))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_a_state_of_the_previous_format_is_still_read(tmp_path):
    st, _ = _big_state()
    records = list(state_file.Encoder().records(st))
    layouts, meta = records[-1], records[1]
    entries = [(raw, job, snap, start, li, tuple(counts(samples)),
                tuple((n, *st) for n, st in zip(keys, stats, strict=True)), digest)
               for rec in records[2:-1]
               for raw, job, snap, start, li, samples, keys, stats, digest in rec]
    target, read_time, gone, since, _ = meta
    old = (3, 9, (layouts, {target: (read_time, entries, gone, since)}))
    path = tmp_path / "old.state"
    path.write_bytes(marshal.dumps(old, 2))
    assert state_file.load(path) == state_file.CollectorState(9, st, state_file.LEGACY)


def test_a_truncated_state_is_a_clear_error(tmp_path):
    st, _ = _big_state()
    path = tmp_path / "x.state"
    state_file.save(path, state_file.CollectorState(1, st))
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ValueError, match="unreadable collector state"):
        state_file.load(path)
