"""How sure a figure is, as every view shows it: `jobio show` (human, `-o`, `-P`), `--json`
and the service's documents, the mail's text and HTML parts.

A range is shown where it is wider than 1 % of the figure (`95.9 GiB (95.1–96.4)`), the
figure plainly elsewhere; a report without ranges (stored by an older release) reads as
before.
"""

from __future__ import annotations

from typing import Any

from slurm_io.config import Config
from slurm_io.mail.builder import MailBuilder
from slurm_io.report.counters import bytes_with_range, count_with_range
from slurm_io.report.jobreport import JobReport
from slurm_io.report.show import parsable, render, table
from tests.mail.reports import NOW, GiB, MiB, job_report, typed

READ = int(95.9 * GiB)
RANGES = {"read_bytes": {"least": int(95.1 * GiB), "most": int(96.4 * GiB)},
          "write_bytes": {"least": 10 * GiB, "most": 10 * GiB + 10 * MiB},  # 0.1 %: plain
          "metadata_ops": {"least": 1000, "most": 1500}}


def _doc(ranges: dict[str, Any] | None = RANGES) -> dict[str, Any]:
    d = job_report(read_bytes=READ, write_bytes=10 * GiB, meta={"open": 1200},
                   ambiguous_share=0.01)
    if ranges is not None:
        d["ranges"] = ranges
    return d


def test_bytes_and_counts_with_their_range_only_where_it_is_wider_than_one_percent():
    assert bytes_with_range(READ, (int(95.1 * GiB), int(96.4 * GiB))) == "95.9 GiB (95.1–96.4)"
    assert bytes_with_range(READ, (READ, READ)) == "95.9 GiB"
    assert bytes_with_range(READ, None) == "95.9 GiB"
    # given nothing, may have done 1.5 GiB: the three in the unit of the most
    assert bytes_with_range(0, (0, int(1.5 * GiB))) == "0.0 GiB (0.0–1.5)"
    assert bytes_with_range(900, (100, 1000)) == "900 B (100–1000)"
    assert count_with_range(1200, (1000, 1500)) == "1200 (1000–1500)"
    assert count_with_range(1200, (1195, 1205)) == "1200"


def test_show_prints_the_range_of_a_figure_and_says_what_it_means():
    r = typed(_doc())
    text = render(r)
    assert "  read    95.9 GiB (95.1–96.4) in " in text
    assert "  written     10.0 GiB in " in text  # its range is 0.1 %: plainly
    assert "  metadata ops 1200 (1000–1500): open 1200" in text
    assert "(least–most): what the job can have done at least and at most" in text


def test_show_without_ranges_reads_as_before():
    text = render(typed(_doc(None)))
    assert "  read        95.9 GiB in " in text and "least–most" not in text


def test_parsable_and_table_columns_of_the_range():
    r = typed(_doc())
    fmt = "JobID,ReadBytes,ReadBytesLeast,ReadBytesMost,WriteBytesLeast,WriteBytesMost," \
          "MetaOps,MetaOpsLeast,MetaOpsMost"
    lines = parsable([r], fmt).splitlines()
    assert lines[0] == fmt.replace(",", "|")
    assert lines[1].split("|") == ["123", str(READ), str(int(95.1 * GiB)),
                                   str(int(96.4 * GiB)), str(10 * GiB),
                                   str(10 * GiB + 10 * MiB), "1200", "1000", "1500"]
    assert table([r], "JobID,ReadBytesLeast").splitlines()[2].split() == [
        "123", str(int(95.1 * GiB))]
    # unknown (an older release stored the figures): empty, not a made-up zero
    assert parsable([typed(_doc(None))], "JobID,ReadBytesLeast,MetaOpsMost",
                    header=False) == "123||"


def test_json_has_least_and_most_and_survives_the_service():
    r = typed(_doc())
    j = r.as_json()
    assert j["ranges"] == RANGES
    again = JobReport.from_json(j, now=NOW)
    assert again.io.ranges["read_bytes"] == (int(95.1 * GiB), int(96.4 * GiB))
    assert again.as_json() == j and render(again) == render(r)
    assert typed(_doc(None)).as_json()["ranges"] == {}


def test_the_mail_shows_the_range_in_text_and_html_and_explains_it():
    b = MailBuilder(Config(mail_policy="all"), lookup=lambda job: None, clock=lambda: NOW)
    text, html, v = b.render_parts(typed(_doc()))
    assert v.read == "95.9 GiB (95.1–96.4)" and v.written == "10.0 GiB"
    assert v.metadata_ops == "1,200 (1,000–1,500)"
    assert "95.9 GiB (95.1–96.4)" in text and "95.9 GiB (95.1–96.4)" in html
    note = "depending on how much of the I/O it shared with your other jobs"
    assert note in " ".join(text.split()) and note in " ".join(html.split())
    plain_text, plain_html, _ = b.render_parts(typed(_doc(None)))
    assert "(95.1" not in plain_text and "(95.1" not in plain_html
    assert note not in " ".join(plain_text.split()) and note not in " ".join(plain_html.split())
