"""bench/accuracy_model.py, the model oracle of the accuracy breakdown (pure): each job's
expected blind bytes on a target from its true phases and the node's episodes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.accuracy_model import blind_seconds, expected, load_model, model_split  # noqa: E402

OST0, OST1, OST2 = "fs-OST0000", "fs-OST0001", "fs-OST0002"


@pytest.mark.parametrize(("a", "b", "spans", "seconds"), [
    (0, 100, [], 0),
    (0, 100, [(20, 40)], 20),
    (0, 100, [(-50, 10), (90, 200)], 20),
    (0, 100, [(20, 60), (40, 80)], 60),  # overlapping spans counted once
    (0, 100, [(100, 120)], 0),
])
def test_blind_seconds_counts_each_second_of_the_interval_once(a, b, spans, seconds) -> None:
    assert blind_seconds(a, b, spans) == pytest.approx(seconds)


def _model(tmp_path: Path) -> Path:
    rows = [
        # job 1 writes 100 B/s on OST0 and OST1 during [0, 200); job 2 writes 30 B/s on OST0
        # during [100, 300), leaking half its increments outside the episodes; job 3's phase
        # is on OST2 only
        {"model_phase": 0, "node": "n1", "job": 1, "uid": 7, "t0": 0, "t1": 200,
         "read_rate": 0, "write_rate": 100, "leak": 0, "osts": [OST0, OST1]},
        {"model_phase": 1, "node": "n1", "job": 2, "uid": 7, "t0": 100, "t1": 300,
         "read_rate": 0, "write_rate": 30, "leak": 0.5, "osts": [OST0]},
        {"model_phase": 2, "node": "n1", "job": 3, "uid": 7, "t0": 0, "t1": 300,
         "read_rate": 0, "write_rate": 50, "leak": 0, "osts": [OST2]},
        {"episode": [50, 150], "nodes": ["n1", "n2"]},
        {"phase": 0, "ost_bytes": 10, "mdt_ops": 1},  # the breakdown's rows are skipped
    ]
    path = tmp_path / "oracle.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n[1, 2]\n")
    return path


def test_expected_blind_bytes_follow_rates_osts_episodes_and_leaks(tmp_path: Path) -> None:
    model = load_model(_model(tmp_path))
    assert model.n_osts == 3
    got = expected(model, "n1", OST0, 7, 100, 200, facet=1)
    # job 1: blind 50 s (the episode until 150) at 100/2 per OST; job 2: 50 s blind and
    # half of the 50 s after, at 30
    assert got == pytest.approx({1: 50 * 50, 2: 30 * (50 + 0.5 * 50)})
    assert expected(model, "n1", OST0, 7, 100, 200, facet=0) == {}  # nobody read
    assert expected(model, "n2", OST0, 7, 100, 200, facet=1) == {}  # other node, no phase


def test_a_phase_whose_osts_were_never_shown_is_spread_over_every_ost(tmp_path: Path) -> None:
    model = load_model(_model(tmp_path))
    shown = frozenset({0, 1})  # job 3's phase printed no byte by its id on an OST
    got = expected(model, "n1", OST0, 7, 100, 150, facet=1, shown=shown)
    assert got == pytest.approx({1: 50 * 50, 2: 30 * 50, 3: 50 / 3 * 50})
    assert 3 not in expected(model, "n1", OST0, 7, 100, 150, facet=1)


def test_the_split_is_over_the_rules_candidates_and_none_where_nothing_is_expected(
        tmp_path: Path) -> None:
    model = load_model(_model(tmp_path))
    split = model_split(model, "n1", OST0, 7, 100, 150, 1, {1: 0.5, 2: 0.5})
    assert split == pytest.approx({1: 2500 / 4000, 2: 1500 / 4000})
    assert model_split(model, "n1", OST0, 7, 250, 300, 1, {1: 1.0}) is None
