"""bench/accuracy_model.py, the model oracle of the accuracy breakdown (pure): each job's
expected blind bytes on a target from its true phases and the node's episodes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.accuracy_model import (  # noqa: E402
    MIB,
    Known,
    blind_seconds,
    expected,
    from_the_data,
    indistinct,
    load_model,
    mean_leak,
    mode_mean,
    model_split,
    printed_rates,
    shared_by_time,
    shown_osts,
)

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
    got = expected(model, "n1", OST0, 7, 100, 150, facet=1, known=Known(osts=shown))
    assert got == pytest.approx({1: 50 * 50, 2: 30 * 50, 3: 50 / 3 * 50})
    assert 3 not in expected(model, "n1", OST0, 7, 100, 150, facet=1)


def test_the_split_is_over_the_rules_candidates_and_none_where_nothing_is_expected(
        tmp_path: Path) -> None:
    model = load_model(_model(tmp_path))
    split = model_split(model, "n1", OST0, 7, 100, 150, 1, {1: 0.5, 2: 0.5})
    assert split == pytest.approx({1: 2500 / 4000, 2: 1500 / 4000})
    assert model_split(model, "n1", OST0, 7, 250, 300, 1, {1: 1.0}) is None


def test_the_data_knows_a_phase_only_as_it_printed_by_its_id(tmp_path: Path) -> None:
    path = _model(tmp_path)
    # phase 0 printed 6000 B on OSTs by its id, from 160 to 180 s; phase 2 only MDT
    # operations, at 250 s; phase 1 nothing
    path.write_text(path.read_text().replace(
        '{"phase": 0, "ost_bytes": 10, "mdt_ops": 1}',
        '{"phase": 0, "ost_bytes": 6000, "mdt_ops": 1, "first": 160, "last": 180}\n'
        '{"phase": 2, "ost_bytes": 0, "mdt_ops": 9, "first": 250, "last": 250}'))
    model = load_model(path)
    assert model.printed[0].ost_bytes == 6000 and 1 not in model.printed
    rates = printed_rates(model)
    # phase 0 ran 200 s, 100 of them in the episode: 6000 B over 100 printed seconds
    assert rates[0] == pytest.approx((0.0, 60.0))
    assert rates[1] == rates[2] == (0.0, 500.0 * MIB)  # no bytes by id: the mode's mean
    known = from_the_data(model)
    assert known.osts == frozenset({0})
    assert known.spans == {0: (140.0, 200.0), 2: (230.0, 270.0)}
    assert known.leak is None
    assert from_the_data(model, leak=False).leak == pytest.approx(mean_leak(model))
    # in (100, 200]: job 1's phase as printed (60 B/s over its 2 OSTs) from 140 s, blind
    # until the episode ends at 150; job 2's phase printed nothing, so it has no span;
    # job 3's span (230, 270) lies outside
    assert expected(model, "n1", OST0, 7, 100, 200, 1, known) == pytest.approx({1: 30.0 * 10})
    # with the truth, all three phases count
    assert set(expected(model, "n1", OST0, 7, 100, 200, 1)) == {1, 2}


def test_the_strictest_data_knows_a_phase_only_on_the_osts_it_printed_bytes_on(
        tmp_path: Path) -> None:
    path = _model(tmp_path)
    # job 1's phase, on OST0 and OST1, printed bytes by its id on OST1 only
    path.write_text(path.read_text().replace(
        '{"phase": 0, "ost_bytes": 10, "mdt_ops": 1}',
        f'{{"phase": 0, "ost_bytes": 10, "mdt_ops": 1, "osts": ["{OST1}"]}}'))
    model = load_model(path)
    assert shown_osts(model) == {0: frozenset({OST1})}
    strict = Known(shown_osts=shown_osts(model))
    # on OST0 the data shows job 1 nowhere: it is not expected there; jobs 2 and 3, which
    # printed no bytes, are spread over every OST (50 s blind, and job 2 half of 50 more)
    assert expected(model, "n1", OST0, 7, 100, 200, 1, strict) == pytest.approx(
        {2: 30 / 3 * (50 + 0.5 * 50), 3: 50 / 3 * 50})
    assert 1 in expected(model, "n1", OST0, 7, 100, 200, 1)  # the truth knows it there
    # on OST1 its whole rate (one OST shown), where the truth spreads it over two
    assert expected(model, "n1", OST1, 7, 100, 150, 1, strict)[1] == pytest.approx(100 * 50)
    assert expected(model, "n1", OST1, 7, 100, 150, 1) == pytest.approx({1: 50 * 50})


def test_the_mean_leak_weighs_each_phase_by_its_seconds(tmp_path: Path) -> None:
    model = load_model(_model(tmp_path))
    # 200 s at 0, 200 s at 0.5, 300 s at 0
    assert mean_leak(model) == pytest.approx(100 / 700)


@pytest.mark.parametrize(("rates", "mean"), [
    ((300.0 * MIB, 0.0), (500.0 * MIB, 0.0)),
    ((0.0, 700.0 * MIB), (0.0, 500.0 * MIB)),
    ((0.2 * MIB, 0.2 * MIB), (0.2 * MIB, 0.2 * MIB)),
    ((5.0 * MIB, 2.0 * MIB), (9.0 * MIB, 8.0 * MIB)),
    ((0.0, 0.0), (0.0, 0.0)),
])
def test_a_phase_that_printed_no_bytes_gets_its_modes_mean_rate(rates, mean) -> None:
    assert mode_mean(rates) == pytest.approx(mean)


def _tasks(tmp_path: Path) -> Path:
    """Four jobs of uid 7 on n1 from 0 s: 1 and 2 read at 300 MiB/s, 3 writes at 400 MiB/s,
    all three shown on the MDT only (no OST byte by their id); 4 reads at 5 MiB/s (a light
    mode); job 5 reads at 300 MiB/s and printed bytes by its id; job 1's phase ends at 60 s."""
    rows = []
    for job, t1, read, write in ((1, 60, 300, 0), (2, 200, 300, 0), (3, 200, 0, 400),
                                 (4, 200, 5, 0), (5, 200, 300, 0)):
        rows.append({"model_phase": job, "node": "n1", "job": job, "uid": 7, "t0": 0,
                     "t1": t1, "read_rate": read * MIB, "write_rate": write * MIB,
                     "leak": 0, "osts": [OST0]})
        rows.append({"phase": job, "ost_bytes": 1000 if job == 5 else 0, "mdt_ops": 40})
    path = tmp_path / "oracle.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_the_data_cannot_tell_apart_data_phases_shown_on_the_mdt_only(tmp_path: Path) -> None:
    model = load_model(_tasks(tmp_path))
    # reading or writing alike (the MDT shows the same either way); not the light phase,
    # nor the one whose bytes the data shows; each with its seconds in (0, 120]
    assert indistinct(model, "n1", 7, 0, 120, [1, 2, 3, 4, 5]) == {1: 60, 2: 120, 3: 120}
    assert indistinct(model, "n1", 7, 0, 120, [1, 4, 5]) == {}  # one alone is told apart
    assert indistinct(model, "n2", 7, 0, 120, [1, 2]) == {}  # no phase there


def test_the_no_information_bound_shares_only_the_groups_bytes_by_their_seconds() -> None:
    true = {1: 90.0, 2: 0.0, 3: 10.0, 4: 5.0}
    got = shared_by_time(true, {1: 60, 2: 120, 3: 120})
    assert got == pytest.approx({1: 20.0, 2: 40.0, 3: 40.0, 4: 5.0})
    assert sum(got.values()) == pytest.approx(sum(true.values()))
    assert shared_by_time(true, {}) == true
