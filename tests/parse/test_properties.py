"""Hypothesis properties of the parser: garbage never raises, damage is local."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from slurm_io.parse.jobstats import parse, parse_stream
from tests.parse import samples

ALL = (samples.V2_10_OST + samples.V2_14_MDT + samples.V2_15_0_OST + samples.V2_15_2_OST
       + samples.V2_16_LCTL + samples.WRAPPED)
ALPHABET = st.sampled_from([*sorted(set(ALL)), "\x00", "\t", "\r", "é", "{", "}", ":", "-"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=ALPHABET, max_size=2000))
def test_arbitrary_text_never_raises(text):
    r = parse(text)
    assert r.n_entries >= 0


@settings(max_examples=200)
@given(st.text(max_size=500))
def test_arbitrary_unicode_never_raises(text):
    parse(text)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(ALL)), st.integers(0, 40), st.text(alphabet=ALPHABET, max_size=40))
@example(4900, 17, "")  # once joined two histogram lines: a damaged hist must not raise
def test_local_damage_never_raises_and_loses_at_most_nearby_entries(pos, cut, insert):
    damaged = ALL[:pos] + insert + ALL[pos + cut:]
    r = parse(damaged)
    clean = parse(ALL)
    # damage of <= 40 chars plus an insertion touches at most a few entries
    assert r.n_entries >= clean.n_entries - 4


@settings(max_examples=100)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=30))
def test_any_split_into_pieces_parses_like_the_whole(sizes):
    pieces, pos = [], 0
    for s in sizes:
        pieces.append(ALL[pos:pos + s])
        pos += s
    pieces.append(ALL[pos:])
    assert parse_stream(pieces).targets == parse(ALL).targets
