"""The collector state survives a save/load round trip exactly."""

from __future__ import annotations

import pytest

from slurm_io.delta import state_file
from slurm_io.delta.engine import compute
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
