"""Delta engine: baseline, new ids, resets (drop, start_time, absence), gaps, broken ids."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurm_io.delta.engine import compute
from slurm_io.model import ByteStats, DeltaFlag, Entry

NAMES = ("read_bytes", "write_bytes", "open")


def entry(rid, rb=0, wb=0, opens=0, start=None, target="fs-OST0000", hist=None):
    stats = {
        "read_bytes": ByteStats(rb // 4096, 4096 if rb else 0, 4096 if rb else 0, rb,
                                (rb // 4096) * 4096 * 4096, None),
        "write_bytes": ByteStats(wb // 1048576, 0, 1048576 if wb else 0, wb, None, hist),
    }
    return Entry(target, rid, rid, None, start, NAMES,
                 (rb // 4096, wb // 1048576, opens), stats)


def run(reads, period=120.0):
    """reads: list of (time, [entries]) of one target -> list of delta lists per read."""
    state, out = {}, []
    for t, entries in reads:
        res = compute(state, {"fs-OST0000": entries}, t, period=period)
        state = res.state
        out.append(res.deltas)
    return out


def test_first_read_of_a_target_is_only_a_baseline():
    res = compute({}, {"fs-OST0000": [entry("1:1000:n1", rb=40960)]}, 100.0)
    assert res.deltas == [] and res.baseline_targets == ["fs-OST0000"]


def test_growth_gives_the_difference_over_the_interval():
    _, (d,) = run([(0, [entry("a", rb=4096)]), (120, [entry("a", rb=3 * 4096, opens=2)])])
    assert (d.t0, d.t1) == (0, 120)
    assert d.samples == {"read_bytes": 2, "open": 2}
    assert d.stats["read_bytes"].sum == 8192 and d.stats["read_bytes"].samples == 2
    assert d.stats["read_bytes"].sumsq == 2 * 4096 * 4096
    assert d.flags == DeltaFlag.NONE


def test_unchanged_entries_emit_nothing():
    out = run([(0, [entry("a", rb=4096)]), (120, [entry("a", rb=4096)])])
    assert out[1] == []


def test_new_id_counts_from_zero_since_the_previous_read():
    _, (d,) = run([(0, [entry("a", rb=4096)]),
                   (120, [entry("a", rb=4096), entry("b", wb=1048576)])])
    assert d.raw_id == "b" and d.t0 == 0 and d.flags & DeltaFlag.NEW
    assert d.stats["write_bytes"].sum == 1048576


def test_all_zero_new_entry_is_not_emitted():
    _, out = run([(0, [entry("a")]), (120, [entry("a"), entry("b")])])
    assert out == []


def test_value_drop_is_a_reset_and_counts_the_new_value():
    _, (d,) = run([(0, [entry("a", rb=10 * 4096)]), (120, [entry("a", rb=2 * 4096)])])
    assert d.flags & DeltaFlag.RESET_DROP and d.stats["read_bytes"].sum == 8192


def test_changed_start_time_is_a_reset_even_when_counters_grew():
    _, (d,) = run([(0, [entry("a", rb=2 * 4096, start=10.0)]),
                   (120, [entry("a", rb=5 * 4096, start=100.0)])])
    assert d.flags & DeltaFlag.RESET_START and d.stats["read_bytes"].sum == 5 * 4096


def test_a_new_or_recreated_entry_keeps_its_creation_time_inside_the_interval():
    _, (d,) = run([(0, [entry("a", rb=4096, start=-50.0)]),
                   (120, [entry("a", rb=4096, start=-50.0), entry("b", wb=1048576,
                                                                   start=70.0)])])
    assert d.raw_id == "b" and d.entry_start == 70.0
    _, (d,) = run([(0, [entry("a", rb=2 * 4096, start=10.0)]),
                   (120, [entry("a", rb=5 * 4096, start=100.0)])])
    assert d.entry_start == 100.0
    # a growing old entry (created before the interval) says nothing new
    _, (d,) = run([(0, [entry("a", rb=4096, start=-50.0)]),
                   (120, [entry("a", rb=2 * 4096, start=-50.0)])])
    assert d.entry_start is None


def test_absence_from_an_intermediate_read_is_a_reset():
    out = run([(0, [entry("a", rb=8 * 4096)]), (120, []), (240, [entry("a", rb=9 * 4096)])])
    (d,) = out[2]
    assert d.t0 == 120 and d.stats["read_bytes"].sum == 9 * 4096
    assert d.flags & DeltaFlag.NEW and d.flags & DeltaFlag.RESET_ABSENT


def test_missed_reads_give_one_longer_interval():
    _, (d,) = run([(0, [entry("a", rb=4096)]), (600, [entry("a", rb=5 * 4096)])])
    assert (d.t0, d.t1) == (0, 600) and d.flags & DeltaFlag.GAP
    assert d.stats["read_bytes"].sum == 4 * 4096


def test_target_missing_from_a_read_keeps_its_state():
    state = compute({}, {"t1": [entry("a", rb=4096, target="t1")]}, 0).state
    state = compute(state, {"t2": []}, 120).state
    (d,) = compute(state, {"t1": [entry("a", rb=3 * 4096, target="t1")]}, 240).deltas
    assert (d.t0, d.t1) == (0, 240) and d.stats["read_bytes"].sum == 2 * 4096


def test_broken_entry_keeps_its_previous_state_instead_of_resetting():
    s = compute({}, {"t": [entry("a", rb=4096, target="t")]}, 0).state
    s = compute(s, {"t": []}, 120, broken_ids={"t": {"a"}}).state
    (d,) = compute(s, {"t": [entry("a", rb=3 * 4096, target="t")]}, 240).deltas
    assert d.t0 == 0 and d.stats["read_bytes"].sum == 2 * 4096
    assert not d.flags & DeltaFlag.NEW


def test_stale_read_is_skipped():
    s = compute({}, {"t": [entry("a", target="t")]}, 100).state
    res = compute(s, {"t": [entry("a", rb=4096, target="t")]}, 100)
    assert res.deltas == [] and res.stale_targets == ["t"]


def test_hist_buckets_are_differenced():
    _, (d,) = run([(0, [entry("a", wb=1048576, hist=(("1M", 1),))]),
                   (120, [entry("a", wb=3 * 1048576, hist=(("4K", 0), ("1M", 3)))])])
    assert d.stats["write_bytes"].hist == (("1M", 2),)


def test_layout_change_between_reads_compares_by_name():
    a = entry("a", rb=4096, opens=1)
    b = Entry(a.target, "a", "a", None, None, ("open", "read_bytes", "write_bytes", "mkdir"),
              (3, 1, 0, 4), a.stats)
    _, (d,) = run([(0, [a]), (120, [b])])
    assert d.samples == {"open": 2, "mkdir": 4}


@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), min_size=2, max_size=30))
def test_sum_of_deltas_equals_total_growth_despite_missed_reads(steps):
    """Without resets the deltas add up to last - first read: nothing lost or doubled."""
    value, reads, t = 0, [], 0
    for i, (inc, read_happens) in enumerate(steps):
        value += inc
        t += 120
        if read_happens or i == 0:
            reads.append((t, [entry("a", rb=value * 4096)]))
    out = run(reads)
    total = sum(d.stats["read_bytes"].sum for ds in out for d in ds if "read_bytes" in d.stats)
    first = reads[0][1][0].stats["read_bytes"].sum
    last = reads[-1][1][0].stats["read_bytes"].sum
    assert total == last - first


def test_in_a_damaged_block_absent_ids_keep_their_state():
    s = compute({}, {"t": [entry("a", rb=4096, target="t"), entry("b", rb=4096, target="t")]},
                0).state
    # truncated read: b is missing, the block is damaged
    s = compute(s, {"t": [entry("a", rb=2 * 4096, target="t")]}, 120, damaged={"t"}).state
    out = compute(s, {"t": [entry("a", rb=2 * 4096, target="t"),
                            entry("b", rb=5 * 4096, target="t")]}, 240).deltas
    (d,) = out
    assert d.raw_id == "b" and d.t0 == 0 and d.stats["read_bytes"].sum == 4 * 4096


def test_entry_that_lost_counters_is_a_cut_capture_and_keeps_its_state():
    a = entry("a", rb=4096, opens=1)
    cut = Entry(a.target, "a", "a", None, None, ("read_bytes",), (2,), {})
    out = run([(0, [a]), (120, [cut]), (240, [entry("a", rb=3 * 4096, opens=1)])])
    assert out[1] == []
    (d,) = out[2]
    assert d.t0 == 0 and d.stats["read_bytes"].sum == 2 * 4096 and "open" not in d.samples


def _at(e: Entry, snap: float) -> Entry:
    return e._replace(snapshot_time=snap)


def test_an_old_read_filed_under_a_newer_time_is_stale_not_a_reset():
    t0 = 1_795_000_000.0
    old = [_at(entry("1:1000:n1", rb=40960, opens=10), t0 - 5)]
    new = [_at(entry("1:1000:n1", rb=81920, opens=30), t0 + 115)]
    state = compute({}, {"fs-OST0000": old}, t0).state
    state = compute(state, {"fs-OST0000": new}, t0 + 120).state
    res = compute(state, {"fs-OST0000": old}, t0 + 240)  # the capture of t0, filed late
    assert res.deltas == [] and res.stale_targets == ["fs-OST0000"]
    assert res.state["fs-OST0000"] is state["fs-OST0000"]  # state kept: nothing counted
    later = [_at(entry("1:1000:n1", rb=81920 + 4096, opens=31), t0 + 350)]
    (d,) = compute(res.state, {"fs-OST0000": later}, t0 + 360).deltas
    assert d.samples == {"read_bytes": 1, "open": 1} and d.t0 == t0 + 120


def test_boot_relative_times_are_never_compared():
    # 2.15.0 prints times since boot: after a reboot they start again from small values
    before = [_at(entry("a", rb=4096 * 9), 86_400.0)]
    after = [_at(entry("a", rb=4096), 60.0)]
    state = compute({}, {"fs-OST0000": before}, 1_795_000_000.0).state
    res = compute(state, {"fs-OST0000": after}, 1_795_000_120.0)
    assert res.stale_targets == [] and res.deltas[0].flags & DeltaFlag.RESET_DROP
