"""The mail's view model (slurm_io/mail/view.py): advice, chart, formatting. Pure."""

from __future__ import annotations

import pytest

from slurm_io.mail import view
from slurm_io.mail.view import Thresholds, build_view
from tests.mail.reports import (
    START,
    GiB,
    KiB,
    MiB,
    TiB,
    healthy_streamer,
    job_report,
    metadata_storm,
    small_writer,
    typed,
)


# -- advice ------------------------------------------------------------------------------------
def test_a_job_writing_4_kib_requests_gets_the_small_writes_advice():
    r = small_writer()
    assert r["quality"]["write_kb_ops"] == pytest.approx(256, rel=1e-3)
    advice = view.advice(typed(r))
    assert [a.key for a in advice] == ["small_writes"]
    a = advice[0]
    assert a.title == "Many small writes"
    assert "4.0 KiB" in a.finding and "write_kb_ops 256" in a.finding
    assert "100% of them were smaller than 64 KiB" in a.finding
    tips = " ".join(a.suggestions)
    for word in ("Buffer", "MPI_File_write_all", "collective buffering", "HDF5", "H5Pset_chunk"):
        assert word in tips


def test_small_reads_get_their_own_advice():
    r = job_report(read_bytes=4 * GiB, read_size=16 * KiB)  # read_kb_ops 64
    (a,) = view.advice(typed(r))
    assert a.key == "small_reads" and "read_kb_ops 64" in a.finding
    assert any("/tmp" in tip for tip in a.suggestions)


def test_a_job_with_a_million_opens_gets_the_metadata_advice():
    r = metadata_storm()
    advice = view.advice(typed(r))
    assert [a.key for a in advice] == ["metadata"]
    a = advice[0]
    assert "1,000,000 opens" in a.finding and "1 M per node-hour" in a.finding
    tips = " ".join(a.suggestions)
    assert "fewer, larger files" in tips and "node-local /tmp" in tips
    assert "Open each file once" in tips
    assert "stat loops" not in tips  # 20,000 stats an hour are not a storm
    rows = {m.name: m for m in view.metadata_rows(typed(r), Thresholds())}
    assert rows["opens"].storm and not rows["closes"].storm  # closes follow opens
    assert not rows["stats (getattr)"].storm


def test_stat_loops_and_mkdirs_get_their_tips():
    r = job_report(meta={"getattr": 3_000_000, "mkdir": 200_000})
    (a,) = view.advice(typed(r))
    tips = " ".join(a.suggestions)
    assert "stat loops" in tips and "directory trees once" in tips
    assert "Open each file once" not in tips


def test_a_healthy_4_mib_streaming_job_gets_no_advice():
    r = healthy_streamer()
    assert r["quality"]["write_kb_ops"] == pytest.approx(0.25)
    assert view.advice(typed(r)) == ()
    v = build_view(typed(r))
    assert v.advice == ()
    assert [q.rating for q in v.quality] == ["good", "good"]


def test_metadata_rates_are_per_node_hour():
    # a million opens over 16 nodes for an hour: 62,500 per node-hour, below 1e5
    assert view.advice(typed(metadata_storm(nodes=16))) == ()
    # the same in six minutes on one node: 10 M per node-hour
    assert [a.key for a in view.advice(typed(metadata_storm(elapsed=360)))] == ["metadata"]


def test_few_requests_never_earn_advice():
    r = job_report(write_bytes=4 * MiB, write_size=4 * KiB)  # 1024 tiny writes
    assert view.advice(typed(r)) == ()
    assert build_view(typed(r)).quality[1].rating_label == "few requests"
    r = job_report(meta={"open": 5_000}, elapsed=60)  # 300k per node-hour, but 5,000 in all
    assert view.advice(typed(r)) == ()


def test_the_small_share_counts_only_where_it_is_known_for_enough_requests():
    r = healthy_streamer()
    r["quality"].update(write_small_share=0.8, write_small_share_basis=1.0)
    assert [a.key for a in view.advice(typed(r))] == ["small_writes"]
    assert "80% of them were smaller than 64 KiB" in view.advice(typed(r))[0].finding
    r["quality"].update(write_small_share_basis=0.2)  # bounds tell for 20 % only
    assert view.advice(typed(r)) == ()


def test_thresholds_are_configurable():
    relaxed = Thresholds(kb_ops=300, small_share=1.0, metadata_per_node_hour=1e7)
    assert view.advice(typed(small_writer()), relaxed) == ()
    assert view.advice(typed(metadata_storm()), relaxed) == ()
    strict = Thresholds(kb_ops=0.1, min_requests=1)
    assert {a.key for a in view.advice(typed(healthy_streamer()), strict)} == {"small_reads",
                                                                        "small_writes"}


# -- the chart ---------------------------------------------------------------------------------
def test_chart_rows_use_one_scale_for_reads_and_writes():
    r = job_report(read_bytes=50 * GiB, write_bytes=100 * GiB, elapsed=3600)
    c = build_view(typed(r)).chart
    assert 1 < len(c.rows) <= 24
    assert c.step in view.NICE_STEPS and c.step >= 120
    assert c.step_label == "4 min"  # a multiple of the 2-minute bins: no aliasing
    assert len({row.write_pct for row in c.rows if row.write_pct}) == 1  # steady is flat
    full = [row for row in c.rows if row.write_pct == 100]
    assert full and all(row.read_pct == 50 for row in full)
    assert c.scale == c.peak_write and c.peak_write.endswith("/s")
    assert len(c.ascii) == len(c.rows) + 1
    assert all("|" in line for line in c.ascii)
    assert "#" * 18 in "".join(c.ascii) and "=" * 9 in "".join(c.ascii)


def test_chart_of_a_long_job_keeps_24_rows_at_most():
    tl = [[START + i * 120, 1 << 30, 0, 0] for i in range(0, 3 * 86400 // 120, 7)]
    c = view.chart(tl, start=START, end=START + 3 * 86400, resolution=120)
    assert len(c.rows) <= 24 and c.step >= 3 * 3600
    assert c.rows[0].label[:3].isalpha()  # several days: the weekday is shown


def test_idle_rows_have_no_bars_and_tiny_rates_still_show():
    tl = [[START, 100 * MiB * 120, 0, 0], [START + 600, 1, 0, 0]]
    c = view.chart(tl, start=START, end=START + 1200, resolution=120, max_rows=10)
    pcts = [row.read_pct for row in c.rows]
    assert pcts[0] == 100 and 1 in pcts and 0 in pcts
    idle = [row for row in c.rows if row.read_pct == 0]
    assert all(row.read_rate == "" and row.write_rate == "" for row in idle)


def test_no_timeline_means_an_empty_chart():
    c = view.chart([], start=START, end=START + 60)
    assert c.empty and c.ascii == ()


# -- the rest of the view -----------------------------------------------------------------------
def test_subject_and_headline_figures():
    r = job_report(name="stream\nevil: header", write_bytes=int(1.2 * TiB),
                   read_bytes=int(3.4 * GiB))
    v = build_view(typed(r))
    assert v.subject == "[slurm-io] job 123 (stream evil: header): 1.2 TiB written, 3.4 GiB read"
    # a Unicode line separator or a C1 NEL broke the Subject too (email refuses the header)
    assert build_view(typed(job_report(name="a\u2028Bcc: x\x85y"))).subject.startswith(
        "[slurm-io] job 123 (a Bcc: x y)")
    assert (v.written, v.read) == ("1.2 TiB", "3.4 GiB")
    assert build_view(typed(job_report(name=None))).subject == \
        "[slurm-io] job 123: no Lustre I/O recorded"
    assert "50,000 metadata operations" in build_view(
        typed(job_report(meta={"open": 50_000}))).subject


def test_provenance_shares_of_recovered_and_ambiguous_bytes():
    v = build_view(typed(healthy_streamer(recovered_share=0.25, ambiguous_share=0.05)))
    p = v.provenance
    assert (p.direct, p.recovered, p.ambiguous) == ("75.0%", "25.0%", "5.0%")
    assert p.basis == "bytes"
    text = " ".join(p.notes)
    assert "lacked the job id" in text and "pro rata" in text
    clean = build_view(typed(healthy_streamer())).provenance
    assert clean.recovered == "0.0%" and "nothing was estimated" in clean.notes[0]


def test_targets_busiest_first_then_the_metadata_targets():
    r = healthy_streamer(targets=8)
    r["by_target"]["scratch-OST0003"]["write_bytes"] *= 3
    rows, more = view.target_rows(typed(r), top=5)
    names = [t.name for t in rows]
    assert names[0] == "scratch-OST0003" and names[-1] == "scratch-MDT0000"
    assert len(names) == 6 and more == 3
    assert rows[-1].share_pct == 0 and rows[0].share_pct > rows[1].share_pct


def test_running_and_incomplete_jobs_say_so():
    r = healthy_streamer()
    assert build_view(typed(r)).status_note == ""
    r["complete"] = False
    assert "may still grow" in build_view(typed(r)).status_note
    r["running"], r["end"] = True, None  # a running job has no end yet
    assert "still running" in build_view(typed(r)).status_note


@pytest.mark.parametrize(("fn", "value", "expected"), [
    (view.fmt_count, 1234567, "1,234,567"),
    (view.fmt_si, 1_000_000, "1 M"),
    (view.fmt_si, 752_123, "752 k"),
    (view.fmt_si, 1500, "1.5 k"),
    (view.fmt_si, 42, "42"),
    (view.fmt_pct, 0.2468, "24.7%"),
    (view.fmt_duration, 3628, "1 h 00 min"),
    (view.fmt_duration, 2795, "46 min 35 s"),
    (view.fmt_duration, 2 * 86400 + 3 * 3600, "2 d 03 h"),
    (view.fmt_duration, None, "-"),
    (view.fmt_step, 300, "5 min"),
    (view.fmt_rate, 0, ""),
    (view.fmt_rate, 3 * MiB, "3.0 MiB/s"),
])
def test_formatting(fn, value, expected):
    assert fn(value) == expected
