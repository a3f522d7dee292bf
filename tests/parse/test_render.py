"""The renderer prints each Lustre release's job_stats exactly as that release does.

The SYNTH_* samples in ../shared/fixtures/jobstats are the reference when that folder exists;
only the tests that read them are skipped without it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slurm_io.model import ByteStats, Entry
from slurm_io.parse.render import (
    RELEASES,
    counter_names,
    format_job_id,
    param_name,
    render_entry,
    render_read,
    render_target,
)
from tests.shared import SHARED, shared_params

JOBSTATS = SHARED / "fixtures" / "jobstats"
SYNTH_RELEASE = {"v2_12_6": "2.12", "v2_14_0": "2.14", "v2_15_0": "2.15.0",
                 "v2_15_2": "2.15.2", "v2_16_0": "2.16"}
BOOT = 1_700_000_000.0
ID_PREFIX = "- job_id:          "


def make_entry(job_id: str, release: str, kind: str, *, snapshot: float = 1721048514.5,
               start: float = 1721040000.25, extra: tuple[tuple[str, int], ...] = ()) -> Entry:
    """An entry with every counter of the release, values of varied widths, our own numbers."""
    names = counter_names(release, kind)
    samples = tuple((i * 7919) % 100_000 for i in range(len(names)))
    values = dict(zip(names, samples, strict=True))
    stats = {
        "read_bytes": ByteStats(values.get("read_bytes", 0), 4096, 16777216, 987654321,
                                123456789012345, ()),
        "write_bytes": ByteStats(values.get("write_bytes", 0), 4096, 4194304, 55555555555,
                                 99999999999999999, (("4K", 3), ("1M", 20), ("4M", 1234))),
    }
    return Entry("fs-OST0000", job_id, job_id, snapshot, start,
                 names + tuple(n for n, _ in extra), samples + tuple(v for _, v in extra), stats)


# --- counters per release ---------------------------------------------------------------------

def test_counter_lists_grow_release_by_release_as_in_the_format_table() -> None:
    mdt210 = counter_names("2.10", "MDT")
    assert len(mdt210) == 16 and "read_bytes" not in mdt210
    assert counter_names("2.12", "MDT") == (*mdt210, "read_bytes", "write_bytes", "punch")
    assert counter_names("2.14", "MDT")[-1] == "migrate"
    assert counter_names("2.15.0", "MDT")[-7:] == (
        "read_bytes", "write_bytes", "read", "write", "punch", "migrate", "fallocate")
    assert counter_names("2.15.2", "MDT") == counter_names("2.15.0", "MDT")
    mdt216 = counter_names("2.16", "MDT")
    i = mdt216.index("samedir_rename")
    assert mdt216[i + 1 : i + 4] == ("parallel_rename_file", "parallel_rename_dir",
                                     "crossdir_rename")
    assert counter_names("2.17", "MDT") == (*mdt216, "rename_trylocks")
    assert counter_names("2.12", "OST") == counter_names("2.10", "OST")
    assert "read" not in counter_names("2.12", "OST")
    assert counter_names("2.14", "OST")[:4] == ("read_bytes", "write_bytes", "read", "write")
    assert counter_names("2.17", "OST")[-1] == "prealloc"


def test_unknown_release_or_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        counter_names("2.99", "OST")
    with pytest.raises(ValueError):
        counter_names("2.12", "MGS")


# --- exact text -----------------------------------------------------------------------------

def test_2_12_ost_entry_is_rendered_exactly_with_glued_max() -> None:
    names = counter_names("2.12", "OST")
    samples = tuple(25 if n == "write_bytes" else 1 if n in ("read_bytes", "punch") else 0
                    for n in names)
    entry = Entry("fs-OST0001", "cluster-testjob1", "cluster-testjob1", 1461772761.9, None,
                  names, samples,
                  {"read_bytes": ByteStats(1, 4096, 4096, 4096, None, None),
                   "write_bytes": ByteStats(25, 1048576, 16777216, 26214400, None, None)})
    expected = (
        "- job_id:          cluster-testjob1\n"
        "  snapshot_time:   1461772761\n"
        "  read_bytes:      { samples:           1, unit: bytes, min:    4096, max:    4096,"
        " sum:            4096 }\n"
        "  write_bytes:     { samples:          25, unit: bytes, min: 1048576, max:16777216,"
        " sum:        26214400 }\n"
        "  getattr:         { samples:           0, unit:  reqs }\n"
        "  setattr:         { samples:           0, unit:  reqs }\n"
        "  punch:           { samples:           1, unit:  reqs }\n"
        "  sync:            { samples:           0, unit:  reqs }\n"
        "  destroy:         { samples:           0, unit:  reqs }\n"
        "  create:          { samples:           0, unit:  reqs }\n"
        "  statfs:          { samples:           0, unit:  reqs }\n"
        "  get_info:        { samples:           0, unit:  reqs }\n"
        "  set_info:        { samples:           0, unit:  reqs }\n"
        "  quotactl:        { samples:           0, unit:  reqs }\n"
    )
    assert render_entry(entry, "2.12", "OST") == expected


def test_eight_digit_max_is_glued_up_to_2_14_and_spaced_from_2_15() -> None:
    for release in ("2.10", "2.12", "2.14"):
        text = render_entry(make_entry("1", release, "OST"), release, "OST")
        assert "max:16777216," in text
    for release in ("2.15.0", "2.15.2", "2.16", "2.17"):
        text = render_entry(make_entry("1", release, "OST"), release, "OST", boot_time=BOOT)
        assert "max: 16777216," in text and "max:16777216" not in text


def test_2_12_mdt_counts_its_byte_counters_in_reqs() -> None:
    text = render_entry(make_entry("1", "2.12", "MDT"), "2.12", "MDT")
    assert re.search(r"^  read_bytes: +\{ samples: +\d+, unit:  reqs, min: +4096,", text, re.M)
    assert re.search(r"^  open: +\{ samples: +\d+, unit:  reqs \}$", text, re.M)


def test_2_15_0_prints_unindented_boot_relative_times() -> None:
    entry = make_entry("1", "2.15.0", "OST", snapshot=BOOT + 864321.5, start=BOOT + 860000.25)
    lines = render_entry(entry, "2.15.0", "OST", boot_time=BOOT).splitlines()
    assert lines[1:4] == [
        "snapshot_time   : 864321.500000000 secs.nsecs",
        "start_time      : 860000.250000000 secs.nsecs",
        "elapsed_time    : 4321.250000000 secs.nsecs",
    ]


def test_2_15_2_and_later_print_indented_epoch_times_with_elapsed() -> None:
    entry = make_entry("1", "2.16", "OST", snapshot=1721048514.75, start=1721048500.5)
    lines = render_entry(entry, "2.16", "OST").splitlines()
    assert lines[1:4] == [
        "  snapshot_time:   1721048514.750000000 secs.nsecs",
        "  start_time:      1721048500.500000000 secs.nsecs",
        "  elapsed_time:    14.250000000 secs.nsecs",
    ]


def test_up_to_2_14_snapshot_time_is_integer_seconds() -> None:
    entry = make_entry("1", "2.14", "OST", snapshot=1669010520.99)
    assert render_entry(entry, "2.14", "OST").splitlines()[1] == "  snapshot_time:   1669010520"


@pytest.mark.parametrize(
    ("job_id", "printed"),
    [
        ("11317854:17627127:r01c01", {"2.12": "11317854:17627127:r01c01",
                                      "2.15.2": '"11317854\\x3A17627127\\x3Ar01c01"',
                                      "2.16": '"11317854:17627127:r01c01"'}),
        ("wget.17627127", {"2.12": "wget.17627127", "2.15.2": "wget.17627127",
                           "2.16": "wget.17627127"}),
        ("backup rsync\n.0", {"2.12": "backup rsync?.0",
                              "2.15.2": '"backup\\x20rsync\\x0A.0"',
                              "2.16": '"backup\\x20rsync\\x0A.0"'}),
        ("@odd.0", {"2.12": "@odd.0", "2.15.2": "@odd.0", "2.16": '"@odd.0"'}),
        ("", {"2.12": "", "2.15.2": "", "2.16": ""}),
    ],
)
def test_job_id_quoting_and_escaping_follow_each_release(job_id: str,
                                                         printed: dict[str, str]) -> None:
    for release, expected in printed.items():
        assert format_job_id(job_id, release) == expected
    assert format_job_id(job_id, "2.17") == printed["2.16"]
    assert format_job_id(job_id, "2.15.0") == printed["2.12"]


def test_hist_is_printed_on_byte_counters_from_2_16_only() -> None:
    text = render_entry(make_entry("1", "2.16", "OST"), "2.16", "OST")
    assert re.search(r"^  write_bytes: .*, hist: \{ 4K: 3, 1M: 20, 4M: 1234 \} \}$", text, re.M)
    assert re.search(r"^  read_bytes: .*, hist: \{  \} \}$", text, re.M)
    assert "hist" not in re.search(r"^  read: .*$", text, re.M).group(0)
    assert "hist" not in render_entry(make_entry("1", "2.15.2", "OST"), "2.15.2", "OST")


def test_usecs_operation_stats_are_self_consistent() -> None:
    text = render_entry(make_entry("1", "2.14", "MDT"), "2.14", "MDT")
    rows = re.findall(r"samples: +(\d+), unit: usecs, min: *(\d+), max: *(\d+), sum: *(\d+),"
                      r" sumsq: +(\d+)", text)
    assert rows
    for n, mn, mx, sm, sq in (tuple(map(int, r)) for r in rows):
        if n == 0:
            assert (mn, mx, sm, sq) == (0, 0, 0, 0)
        else:
            assert mn <= sm / n <= mx and sq * n >= sm * sm


def test_missing_counters_print_as_zero_and_unknown_ones_follow_the_known() -> None:
    entry = Entry("fs-OST0000", "7", "7", 1.0, None, ("future_op", "punch"), (9, 4), {})
    lines = render_entry(entry, "2.12", "OST").splitlines()
    assert lines[-1] == "  future_op:       { samples:           9, unit:  reqs }"
    assert "  punch:           { samples:           4, unit:  reqs }" in lines
    assert "  getattr:         { samples:           0, unit:  reqs }" in lines
    assert len(lines) == 2 + len(counter_names("2.12", "OST")) + 1


def test_targets_render_as_lctl_blocks_and_empty_targets_on_one_line() -> None:
    param = param_name("scratch-OST0001", "OST")
    assert param == "obdfilter.scratch-OST0001.job_stats"
    assert param_name("scratch-MDT0000", "MDT") == "mdt.scratch-MDT0000.job_stats"
    assert render_target(param, [], "2.14", "OST") == f"{param}=job_stats:\n"
    assert render_target(param, [], "2.17", "OST") == f"{param}=\n"
    entry = make_entry("5", "2.16", "OST")
    block = render_target(param, [entry], "2.16", "OST")
    assert block == f"{param}=\njob_stats:\n" + render_entry(entry, "2.16", "OST")
    assert render_read([block, f"{param}=\n"]) == block + f"{param}=\n"


def test_every_release_renders_every_kind() -> None:
    for release in RELEASES:
        for kind in ("MDT", "OST"):
            text = render_entry(make_entry("9:1001:n1", release, kind), release, kind,
                                boot_time=BOOT)
            counters = re.findall(r"^ +(\w+): +\{ samples:", text, re.M)
            assert tuple(counters) == counter_names(release, kind)


# --- conformance with the shared SYNTH samples ----------------------------------------------

def _synth_files() -> list[Path]:
    return sorted(JOBSTATS.glob("SYNTH_*")) if JOBSTATS.is_dir() else []


def _fixture_entries(path: Path) -> list[str]:
    return re.split(r"(?m)^(?=- job_id:)", path.read_text())[1:]


def _decode(printed: str) -> str:
    if printed.startswith('"') and printed.endswith('"'):
        printed = printed[1:-1]
    return re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), printed)


def _shape(line: str) -> str:
    """The line with numbers masked but their printed widths kept (the fixture numbers
    differ from ours); hist contents and unpadded secs.nsecs are masked entirely."""
    line = re.sub(r"hist: \{ (?:\w+: \d+(?:, \w+: \d+)*)? \}", "hist: {H}", line)
    line = re.sub(r"\d+\.\d{9} secs\.nsecs", "T secs.nsecs", line)
    return re.sub(r" *\d+", lambda m: "#" * len(m.group()), line)


def _release_kind(path: Path) -> tuple[str, str]:
    m = re.match(r"SYNTH_(v\d+_\d+_\d+)__(mdt|ost)", path.name)
    assert m, path.name
    return SYNTH_RELEASE[m.group(1)], m.group(2).upper()


@pytest.mark.parametrize("path", shared_params(_synth_files()), ids=lambda p: p.name if p else "-")
def test_rendered_lines_have_the_shapes_of_the_synth_sample(path: Path) -> None:
    release, kind = _release_kind(path)
    for chunk in _fixture_entries(path):
        lines = chunk.splitlines()
        job_id = _decode(lines[0][len(ID_PREFIX):])
        ours = render_entry(make_entry(job_id, release, kind), release, kind,
                            boot_time=BOOT).splitlines()
        assert ours[0] == lines[0]  # the id is printed exactly as the release prints it
        assert [_shape(x) for x in ours] == [_shape(x) for x in lines]


@pytest.mark.parametrize("path", shared_params(_synth_files()), ids=lambda p: p.name if p else "-")
def test_synth_sample_numbers_are_rendered_back_byte_for_byte(path: Path) -> None:
    release, kind = _release_kind(path)
    boot = BOOT if release == "2.15.0" else 0.0
    for chunk in _fixture_entries(path):
        names, samples, stats, times = [], [], {}, {}
        for line in chunk.splitlines()[1:]:
            t = re.match(r" *(snapshot_time|start_time|elapsed_time) *: +([\d.]+)", line)
            if t:
                times[t.group(1)] = float(t.group(2)) + boot
                continue
            m = re.match(r" +(\w+): +\{ samples: +(\d+), unit: +\w+(.*) \}$", line)
            assert m, line
            names.append(m.group(1))
            samples.append(int(m.group(2)))
            nums = dict(re.findall(r"(min|max|sum|sumsq): *(\d+)", m.group(3)))
            hist = re.search(r"hist: \{ (.*?) ?\}", m.group(3))
            if nums:
                stats[m.group(1)] = ByteStats(
                    int(m.group(2)), int(nums["min"]), int(nums["max"]), int(nums["sum"]),
                    int(nums["sumsq"]) if "sumsq" in nums else None,
                    tuple((k, int(v)) for k, v in re.findall(r"(\w+): (\d+)", hist.group(1)))
                    if hist else None)
        job_id = _decode(chunk.splitlines()[0][len(ID_PREFIX):])
        entry = Entry("t", job_id, job_id, times["snapshot_time"], times.get("start_time"),
                      tuple(names), tuple(samples), stats)
        assert render_entry(entry, release, kind, boot_time=boot) == chunk
