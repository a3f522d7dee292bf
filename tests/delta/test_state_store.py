"""Snapshot + journal: every save is durable, a torn record is cut off, loads are exact."""

from __future__ import annotations

import pytest

from slurm_io.delta import state_store
from slurm_io.delta.engine import compute
from slurm_io.delta.state_file import CollectorState
from slurm_io.delta.state_store import StateStore
from slurm_io.parse.jobstats import parse
from tests.parse import samples


def _reads(n: int) -> list[str]:
    """n reads of one OST with 40 entries; read k grows entries k, k+1 and drops entry 39-k."""
    body = samples.V2_15_2_OST.split("job_stats:\n", 1)[1]
    one = body.split("- job_id:")[1]
    out = []
    for k in range(n):
        entries = []
        for i in range(40 - k):
            text = one.replace("556\\x3A", f"{556 + i}\\x3A").replace("tar\\x20x.1601",
                                                                     f"tar{i}.1601")
            if i in (k, k + 1):
                text = text.replace("samples:           4, unit: usecs",
                                    f"samples:  {4 + k:10d}, unit: usecs")
            entries.append("- job_id:" + text)
        out.append("obdfilter.fs-OST0000.job_stats=\njob_stats:\n" + "".join(entries))
    return out


def _run(store: StateStore, reads: list[str], seq0: int = 0, state=None):
    state = {} if state is None else state
    for k, text in enumerate(reads):
        prev = {t: s.entries for t, s in state.items()}
        r = parse(text, previous=prev)
        res = compute(state, r.targets, 100.0 + 120 * (seq0 + k))
        state = res.state
        store.save(CollectorState(seq0 + k + 1, state), res.changed)
    return state


def test_journaled_saves_load_back_as_the_last_state(tmp_path):
    store = StateStore(tmp_path / "oss1.state", snapshot_every=100)
    state = _run(store, _reads(5))
    assert store.journal.exists()  # saves 2..5 were journal records
    assert StateStore(tmp_path / "oss1.state").load() == CollectorState(5, state)


def test_a_snapshot_every_n_saves_removes_the_journal(tmp_path):
    store = StateStore(tmp_path / "oss1.state", snapshot_every=3)
    state = _run(store, _reads(4))  # snapshot, journal, journal, snapshot
    assert not store.journal.exists()
    assert StateStore(tmp_path / "oss1.state").load() == CollectorState(4, state)


def test_a_torn_last_record_is_ignored_and_cut_off(tmp_path):
    path = tmp_path / "oss1.state"
    store = StateStore(path, snapshot_every=100)
    reads = _reads(6)
    state3 = _run(store, reads[:3])
    _run(store, reads[3:4], seq0=3, state=state3)
    data = store.journal.read_bytes()
    store.journal.write_bytes(data[:-17])  # the 4th save was cut by a crash
    again = StateStore(path, snapshot_every=100)
    assert again.load() == CollectorState(3, state3)
    assert again.torn_records == 1
    # saving after the cut appends behind the last good record, not behind the torn one
    state5 = _run(again, reads[3:5], seq0=3, state=state3)
    assert StateStore(path).load() == CollectorState(5, state5)


def test_records_older_than_the_snapshot_are_skipped(tmp_path):
    path = tmp_path / "oss1.state"
    store = StateStore(path, snapshot_every=100)
    reads = _reads(4)
    _run(store, reads[:3])
    stale_journal = store.journal.read_bytes()
    store.snapshot_every = 1
    state4 = _run(store, reads[:4])  # seq 1..4 again, each a snapshot
    # a crash between the snapshot's rename and the journal's removal left the journal
    store.journal.write_bytes(stale_journal)
    assert StateStore(path).load() == CollectorState(4, state4)


def test_a_damaged_record_in_the_middle_is_not_a_torn_tail_and_keeps_the_numbers(tmp_path):
    path = tmp_path / "oss1.state"
    store = StateStore(path, snapshot_every=100)
    _run(store, _reads(4))
    data = bytearray(store.journal.read_bytes())
    data[12] ^= 0xFF  # inside the first record's payload: its CRC no longer matches
    store.journal.write_bytes(bytes(data))
    loaded = StateStore(path)
    st = loaded.load()
    # records 3 and 4 follow the damaged one: its number and theirs are never used again,
    # the entries are unknown (the next read is a baseline), and the damage is reported
    assert st.seq == 4 and st.targets == {} and loaded.reset
    assert loaded.torn_records == 0 and loaded.floor == 100.0 + 120 * 3
    assert any("damaged" in d for d in loaded.damage)
    assert not store.journal.exists()
    assert list(tmp_path.glob("oss1.state.journal.damaged-*"))  # set aside, not deleted


def test_a_journal_without_its_snapshot_is_not_taken_for_the_whole_state(tmp_path):
    path = tmp_path / "oss1.state"
    store = StateStore(path, snapshot_every=100)
    _run(store, _reads(5))
    path.unlink()
    loaded = StateStore(path)
    st = loaded.load()
    # applying the journal alone would leave out every entry idle since the snapshot, and
    # their whole history would be counted again at the next read
    assert st.targets == {} and loaded.reset and st.seq == 5
    assert loaded.floor == 100.0 + 120 * 4


def test_a_damaged_snapshot_is_set_aside_and_reported_not_raised(tmp_path):
    path = tmp_path / "oss1.state"
    store = StateStore(path, snapshot_every=1)
    _run(store, _reads(3))
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    loaded = StateStore(path)
    st = loaded.load()
    assert st.targets == {} and loaded.reset and loaded.damage
    assert not path.exists() and list(tmp_path.glob("oss1.state.damaged-*"))


def test_the_journal_is_replaced_by_a_snapshot_once_as_large(tmp_path):
    path = tmp_path / "oss1.state"
    store = StateStore(path, snapshot_every=1000)
    reads = _reads(30)
    state = {}
    sizes = []
    for k, text in enumerate(reads):
        state = _run(store, [text], seq0=k, state=state)
        sizes.append(store.journal.stat().st_size if store.journal.exists() else 0)
        assert sizes[-1] < 2 * path.stat().st_size
    assert sizes.count(0) >= 2  # snapshots happened on size alone
    assert StateStore(path).load() == CollectorState(30, state)


@pytest.mark.parametrize("every", [1, 2, 100])
def test_load_equals_state_whatever_the_snapshot_period(tmp_path, every):
    store = StateStore(tmp_path / "s", snapshot_every=every)
    state = _run(store, _reads(7))
    assert StateStore(tmp_path / "s").load() == CollectorState(7, state)


def test_without_the_engine_s_changes_or_out_of_sequence_a_snapshot_is_written(tmp_path):
    store = StateStore(tmp_path / "s", snapshot_every=100)
    state = _run(store, _reads(2))
    assert store.journal.exists()
    store.save(CollectorState(3, state))  # no change list: the whole state
    assert not store.journal.exists()
    _run(store, _reads(3)[2:], seq0=3, state=state)  # seq 4 follows 3: journaled again
    assert store.journal.exists()
    store.save(CollectorState(9, state), {})  # a gap in the sequence: the whole state
    assert not store.journal.exists() and StateStore(tmp_path / "s").load().seq == 9


def test_a_record_in_many_parts_loads_whole_or_not_at_all(tmp_path, monkeypatch):
    monkeypatch.setattr(state_store, "_PART_ENTRIES", 1)
    path = tmp_path / "s"
    store = StateStore(path, snapshot_every=100)
    reads = _reads(4)
    state3 = _run(store, reads[:3])
    size3 = store.journal.stat().st_size
    _run(store, reads[3:], seq0=3, state=state3)
    whole = store.journal.read_bytes()
    assert StateStore(path).load().seq == 4
    # cut inside the 4th save's parts: that save is dropped as a whole
    store.journal.write_bytes(whole[:size3 + (len(whole) - size3) // 2])
    assert StateStore(path).load() == CollectorState(3, state3)
