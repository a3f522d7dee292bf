"""Parser behaviour on each release format, on damage, and fast path == robust path."""

from __future__ import annotations

import re

import pytest

from slurm_io.model import ByteStats
from slurm_io.parse import jobstats
from slurm_io.parse.jobstats import Parser, decode_job_id, parse, parse_stream
from tests.parse import samples


def only(result, target="unknown"):
    return result.targets[target]


def test_2_10_reqs_format_keeps_byte_stats_and_glued_max():
    r = parse(samples.V2_10_OST)
    e1, e2 = only(r)
    assert e1.raw_id == "4242" and e1.snapshot_time == 1700000100
    assert e1.stats["write_bytes"] == ByteStats(3, 524288, 16777216, 17825792, None, None)
    assert e1.counter("sync") == 2 and e1.counter("statfs") == 5
    assert e2.job_id == "rsync.2001" and e2.stats["read_bytes"].sum == 8192
    assert not r.problems


def test_2_14_usecs_format_keeps_samples_of_ops_and_sumsq_of_bytes():
    (e,) = only(parse(samples.V2_14_MDT))
    assert e.counter("open") == 40 and e.counter("mkdir") == 7 and e.counter("migrate") == 0
    assert e.stats["read_bytes"].sumsq == 0


def test_2_15_0_unindented_boot_relative_times_are_read():
    (e,) = only(parse(samples.V2_15_0_OST))
    assert e.snapshot_time == 86400.25 and e.start_time == 86000.125
    assert e.stats["read_bytes"] == ByteStats(2, 4096, 4096, 8192, 33554432, None)


def test_2_15_2_quoted_escaped_ids_are_decoded_and_raw_kept():
    a, b = only(parse(samples.V2_15_2_OST))
    assert a.raw_id == '"556\\x3A1600\\x3Acn003"' and a.job_id == "556:1600:cn003"
    assert b.job_id == "tar x.1601"
    assert a.start_time == 1700000000.25


def test_2_16_lctl_output_blocks_hist_unknown_counter_and_empty_id():
    r = parse(samples.V2_16_LCTL)
    assert set(r.targets) == {"home-OST0000", "home-OST0001", "home-MDT0000", "home-OST0002"}
    assert r.targets["home-OST0000"] == [] and r.targets["home-OST0002"] == []
    e, empty = r.targets["home-OST0001"]
    assert e.job_id == "557:1700:cn004"
    assert e.stats["read_bytes"].hist == (("4K", 2), ("1M", 1))
    assert e.stats["write_bytes"].hist == ()
    assert e.counter("frobnicate") == 9  # unknown counter kept
    assert empty.raw_id == "" and empty.stats["read_bytes"].sum == 4096
    (m,) = r.targets["home-MDT0000"]
    assert m.job_id == ":1700:cn004" and m.counter("open") == 5
    assert m.counter("rename_trylocks") == 0
    assert not r.problems


def test_hard_wrapped_lines_are_rejoined():
    r = parse(samples.WRAPPED)
    (e,) = r.targets["w-MDT0000"]
    assert e.counter("open") == 3
    assert e.stats["write_bytes"] == ByteStats(1, 4096, 4096, 4096, 16777216, None)
    assert not r.problems


@pytest.mark.parametrize("text", [samples.V2_10_OST, samples.V2_14_MDT, samples.V2_15_0_OST,
                                  samples.V2_15_2_OST, samples.V2_16_LCTL, samples.WRAPPED])
def test_fast_and_robust_paths_agree(text, monkeypatch):
    fast = parse(text)
    monkeypatch.setattr(Parser, "_fast", lambda self, chunk: False)
    robust = parse(text)
    assert fast.targets == robust.targets
    assert len(fast.problems) == len(robust.problems)


def test_broken_entry_is_counted_and_does_not_take_neighbours_down():
    text = samples.V2_10_OST.replace("samples:           2, unit:  reqs", "samples: x2, unit")
    r = parse(text)
    ids = [e.raw_id for e in only(r)]
    assert ids == ["rsync.2001"]
    assert r.problems and r.problems[0].raw_id == "4242"
    assert "malformed" in r.problems[0].message
    assert r.broken_ids["unknown"] == {"4242"}


@pytest.mark.parametrize("damage", ["- job_id :", "-  job_id\t:"])
def test_an_id_line_damaged_in_its_spacing_is_one_broken_entry_and_keeps_the_one_before(
        damage):
    # found by bench/fuzz_jobstats.py (seed 20261126): the damaged line was read as an
    # unparseable line of the entry before it, which was lost with it, uncounted
    text = samples.V2_16_LCTL
    second = text.index("- job_id:", text.index("- job_id:") + 1)
    r = parse(text[:second] + damage + text[second + len("- job_id:"):])
    good = parse(text)
    kept = [e.raw_id for t in r.targets.values() for e in t]
    every = [e.raw_id for t in good.targets.values() for e in t]
    assert len(kept) == len(every) - 1 and every[0] in kept
    assert [p.message for p in r.problems] == ["malformed job_id line"]
    assert r.problems[0].raw_id == every[1]


def test_truncated_output_loses_only_the_last_entry():
    text = samples.V2_16_LCTL
    cut = text.index("  write_bytes", text.index("- job_id:\n"))
    r = parse(text[:cut] + "  write_bytes:     { samples:   ")
    assert [e.raw_id for e in r.targets["home-OST0001"]] == ['"557:1700:cn004"']
    assert len(r.problems) == 1 and r.problems[0].raw_id == ""


def test_duplicate_ids_in_a_target_keep_the_first_and_are_counted():
    block = samples.V2_10_OST.split("- job_id:", 2)
    text = samples.V2_10_OST + "- job_id:" + block[1]
    r = parse(text)
    assert [e.raw_id for e in only(r)] == ["4242", "rsync.2001"]
    assert any("duplicate" in p.message for p in r.problems)


def test_text_outside_entries_is_reported_not_fatal():
    r = parse("garbage line\n" + samples.V2_14_MDT)
    assert len(only(r)) == 1
    assert r.problems[0].message == "text outside any entry"
    assert r.problems[0].line == 1


def test_streamed_pieces_give_the_same_result_as_one_text(monkeypatch):
    monkeypatch.setattr(jobstats, "CHUNK_CHARS", 64)
    text = samples.V2_16_LCTL * 1 + samples.WRAPPED
    whole = parse(text)
    pieces = [text[i:i + 37] for i in range(0, len(text), 37)]
    assert parse_stream(pieces).targets == whole.targets


def test_many_chunks_fast_path_matches_robust_path(monkeypatch):
    monkeypatch.setattr(jobstats, "CHUNK_CHARS", 300)
    body = samples.V2_15_2_OST.split("job_stats:\n", 1)[1]
    text = "job_stats:\n" + "".join(
        body.replace("556\\x3A", f"{556 + i}\\x3A").replace("tar\\x20x.1601", f"tar{i}.1601")
        for i in range(50))
    fast = parse(text)
    assert len(only(fast)) == 100
    monkeypatch.setattr(Parser, "_fast", lambda self, chunk: False)
    assert parse(text).targets == fast.targets


def test_decode_job_id_handles_quotes_and_escapes():
    assert decode_job_id('"a\\x3Ab"') == "a:b"
    assert decode_job_id("plain") == "plain"
    assert decode_job_id('"only:quoted"') == "only:quoted"
    assert decode_job_id('"') == '"'


def test_damaged_targets_are_reported():
    text = samples.V2_16_LCTL.replace("  open:            { samples:           5",
                                      "  open:            { samples:     @@@")
    r = parse(text)
    assert r.damaged == frozenset({"home-MDT0000"})
    assert parse(samples.V2_16_LCTL).damaged == frozenset()


def test_line_cut_after_its_samples_field_is_still_detected():
    text = samples.V2_10_OST
    cut = text.rindex("unit:  reqs }") + len("unit:  r")
    r = parse(text[:cut])
    assert [e.raw_id for e in only(r)] == ["4242"]
    assert r.broken_ids["unknown"] == {"rsync.2001"} and r.damaged == frozenset({"unknown"})


def _by_id(result):
    return {(t, e.raw_id): e._replace(digest=0) for t, es in result.targets.items() for e in es}


def test_reusing_unchanged_entries_of_the_previous_read_gives_the_same_result(monkeypatch):
    monkeypatch.setattr(jobstats, "CHUNK_CHARS", 200)
    first = samples.V2_16_LCTL + samples.V2_15_2_OST.replace("job_stats:\n", "")
    prev = parse(first, previous={})
    assert all(e.digest for es in prev.targets.values() for e in es)
    # the next read: one entry changed, the others identical
    second = first.replace("samples:           5, unit: usecs", "samples:           9, unit: usecs")
    again = parse(second, previous=prev.targets_by_id())
    assert _by_id(again) == _by_id(parse(second))
    reused = [e for es in again.targets.values() for e in es
              if e is prev.targets_by_id()[e.target].get(e.raw_id)]
    assert len(reused) == prev.n_entries - 1


@pytest.mark.parametrize("text", [samples.V2_10_OST, samples.V2_14_MDT, samples.V2_15_0_OST,
                                  samples.V2_15_2_OST, samples.V2_16_LCTL])
def test_well_formed_output_takes_the_fast_path(text, monkeypatch):
    def robust(*a, **k):
        raise AssertionError("robust path used for well-formed output")

    monkeypatch.setattr(Parser, "_robust", robust)
    assert parse(text).n_entries > 0


ALL_FORMATS = [samples.V2_10_OST, samples.V2_14_MDT, samples.V2_15_0_OST, samples.V2_15_2_OST,
               samples.V2_16_LCTL]


def _repeated(text: str, n: int) -> str:
    """`text`'s entries n times over with distinct ids (a bigger, uniform target)."""
    body = text.split("job_stats:\n", 1)[1]
    head = text.split("job_stats:\n", 1)[0] + "job_stats:\n"
    out = []
    for i in range(n):
        out.append(re.sub(r"(- job_id:[ \t]*)", rf"\g<1>r{i}x", body))
    return head + "".join(out)


@pytest.mark.parametrize("text", ALL_FORMATS)
def test_whole_entry_path_agrees_with_the_line_path(text, monkeypatch):
    big = _repeated(text, 30)
    shaped = parse(big)
    monkeypatch.setattr(jobstats, "_shape_of", lambda compact: None)
    lines = parse(big)
    assert shaped.n_entries >= 30
    assert shaped.targets == lines.targets and not shaped.problems and not lines.problems


@pytest.mark.parametrize("text", [samples.V2_10_OST, samples.V2_14_MDT, samples.V2_15_2_OST])
def test_uniform_output_is_parsed_one_match_per_entry(text, monkeypatch):
    def generic(*a, **k):
        raise AssertionError("per-line path used for a uniform layout")

    big = _repeated(text, 10)
    monkeypatch.setattr(Parser, "_generic", generic)
    r = parse(big)
    assert r.n_entries == 10 * parse(text).n_entries and not r.problems


def test_entries_of_another_layout_in_a_chunk_fall_back_without_loss():
    # the second entry lacks a counter the first one has: one shape cannot match both
    one = samples.V2_14_MDT.split("job_stats:\n", 1)[1]
    other = "\n".join(line for line in one.split("\n") if "mkdir" not in line)
    text = "job_stats:\n" + one + other.replace(":", ":", 1).replace(
        "- job_id:          ", "- job_id:          other", 1)
    r = parse(text)
    a, b = only(r)
    assert a.counter("mkdir") == 7 and b.counter("mkdir") is None
    assert b.counter("open") == a.counter("open") and not r.problems


def test_bytes_and_text_input_give_the_same_entries():
    for text in ALL_FORMATS:
        assert parse(text.encode()).targets == parse(text).targets


def test_odd_histogram_in_a_uniform_chunk_goes_to_the_robust_path_whole(monkeypatch):
    big = _repeated(samples.V2_16_LCTL, 5)
    i = big.index("hist: {") + len("hist: {")
    odd = big[:i] + " 4K 9, " + big[i:]
    r = parse(odd)
    monkeypatch.setattr(Parser, "_fast", lambda self, chunk: False)
    assert r.targets == parse(odd).targets and r.n_entries == parse(big).n_entries
    first = r.targets["home-OST0001"][0]
    assert first.stats["read_bytes"].hist == (("4K", 2), ("1M", 1))


@pytest.mark.parametrize("digits", [21, 30, 5000])
def test_a_number_too_long_for_a_counter_breaks_only_its_entry(digits):
    huge = "9" * digits
    text = ("job_stats:\n- job_id: 1\n  snapshot_time: 5\n  open: { samples: " + huge
            + ", unit: reqs }\n- job_id: 2\n  snapshot_time: 5\n"
            "  open: { samples: 3, unit: reqs }\n- job_id: 3\n  snapshot_time: 5\n"
            "  read_bytes: { samples: 1, unit: bytes, min: 1, max: 1, sum: 1, hist: { 4K: "
            + huge + " } }\n")
    r = parse(text)
    assert [e.raw_id for e in only(r)] == ["2"]
    assert r.broken_ids["unknown"] == {"1", "3"} and len(r.problems) == 2


def test_values_beyond_the_bigint_range_are_reported_as_damage():
    text = ("job_stats:\n- job_id: 1\n  snapshot_time: 5\n  open: { samples: "
            + str(1 << 63) + ", unit: reqs }\n- job_id: 2\n  snapshot_time: 5\n"
            "  read_bytes: { samples: 1, unit: bytes, min: 1, max: 1, sum: " + str(1 << 63)
            + ", sumsq: " + str((1 << 64) - 1) + " }\n- job_id: 3\n  snapshot_time: 5\n"
            "  read_bytes: { samples: 1, unit: bytes, min: 1, max: 1, sum: 1, sumsq: "
            + str((1 << 64) - 1) + " }\n")
    r = parse(text)
    assert [e.raw_id for e in only(r)] == ["3"]  # a sum of squares may use all 64 bits
    assert [p.message for p in r.problems] == [
        "counter 'open': samples beyond the bigint range",
        "counter 'read_bytes': sum beyond the bigint range"]
