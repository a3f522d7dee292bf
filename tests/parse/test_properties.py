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
@given(st.text(alphabet=ALPHABET, max_size=2000), st.integers(0, 2000))
def test_arbitrary_text_gives_no_invented_entry_and_parses_alike_in_pieces(text, cut):
    """Garbage made of job_stats' own characters: the parser never raises, takes no entry
    that is not printed in the text (at most one per `job_id:`, its id on such a line), and
    reads the text alike as str, as bytes, and cut anywhere into two pieces of a stream."""
    r = parse(text)
    assert r.n_entries <= text.count("job_id:")
    id_lines = [line for line in text.split("\n") if "job_id:" in line]
    for entries in r.targets.values():
        for e in entries:
            assert any(e.raw_id in line for line in id_lines), e.raw_id
    k = min(cut, len(text))
    streamed = parse_stream([text[:k], text[k:]])
    assert (streamed.targets, streamed.broken_ids, streamed.problems) == (
        r.targets, r.broken_ids, r.problems)
    assert parse(text.encode()) == r


@settings(max_examples=200)
@given(st.text(max_size=500))
def test_arbitrary_unicode_before_a_read_costs_none_of_its_entries(text):
    """Any text at all (control characters, other scripts, surrogates' neighbours) before
    a complete lctl read: the parser never raises and every entry of that read comes out
    exactly as it does from the read alone."""
    alone = parse(samples.V2_16_LCTL)
    assert alone.n_entries == samples.V2_16_LCTL.count("job_id:") > 0
    r = parse(text + "\n" + samples.V2_16_LCTL)
    for target, entries in alone.targets.items():
        assert r.targets[target] == entries


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
