"""The typed job report: times stay unix seconds up to the edge (JSON, templates)."""

from __future__ import annotations

from datetime import datetime

from slurm_io.attribute.core import JobWindow, attribute
from slurm_io.jobs.info import JobInfo
from slurm_io.mail.view import build_view
from slurm_io.model import IdClass
from slurm_io.report.jobreport import JobReport
from tests.attribute.test_core import delta

START, END = 1_795_000_000.5, 1_795_003_600.5


def _info(end: float | None) -> JobInfo:
    return JobInfo(7, "7", 1000, "ann", "acc", "p", "sim", ("n1",), START, end, "COMPLETED",
                   "0:0", "/w", "sbatch x")


def _io(end: float | None):
    d = [delta(START + 60, START + 180, job=7, cls=IdClass.EXACT, wb=5 << 30)]
    return attribute(JobWindow(7, 1000, ("n1",), START, end), d, [], [], now=END + 60)


def test_json_is_made_at_the_edge_with_iso_times():
    r = JobReport(_info(END), _io(END), True, 2, END + 60)
    j = r.as_json()
    assert j["start"] == datetime.fromtimestamp(START).isoformat(timespec="seconds")
    assert j["elapsed"] == 3600 and not j["running"] and j["revision"] == 2
    assert j["totals"]["write_bytes"] == 5 << 30
    assert r.start == START  # the typed report keeps the exact time


def test_a_running_job_is_elapsed_until_now():
    r = JobReport(_info(None), _io(None), False, None, START + 600)
    assert r.running and r.elapsed == 600 and r.as_json()["end"] is None


def test_the_mail_view_takes_the_typed_report_without_parsing_times_back():
    r = JobReport(_info(END), _io(END), True, 1, END + 60)
    typed, from_json = build_view(r), build_view(JobReport.from_json(r.as_json(), now=END + 60))
    # the JSON form lost the half second; the typed one did not, and both show the same
    assert typed.start == from_json.start and typed.subject == from_json.subject
    assert typed.chart == from_json.chart and typed.write_bytes == 5 << 30


def test_a_report_rebuilt_from_its_json_renders_as_the_service_sent_it():
    # what `jobio --server show` does with the service's documents: the same lines, tables
    # and JSON as the server would print, though the times crossed as whole local seconds
    from slurm_io.lassi.summary import LassiSummary
    from slurm_io.report.show import parsable, render, table

    lassi = LassiSummary(["fs"], 2, 1.5, 0.25, 0.75, 0.125, 1, 1.0, 256.0,
                         {"write_kb_ops": 2.0, "open": 0.5})
    for end, now, revision in ((END, END + 60, 2), (None, START + 600.7, None)):
        sent = JobReport(_info(end), _io(end), end is not None, revision, now, lassi)
        doc = sent.as_json()
        got = JobReport.from_json(doc, now=now + 5)  # the client's clock is its own
        assert got.as_json() == doc
        assert render(got, targets=True, timeline=True) == render(sent, targets=True,
                                                                  timeline=True)
        fmt = "JobID,JobIDRaw,User,Start,End,Elapsed,ReadBytes,WriteBytes,MetaOps,open"
        assert parsable([got], fmt) == parsable([sent], fmt)
        assert table([got], fmt) == table([sent], fmt)
    assert "LASSi (fs, 2 h, 1 risky)" in render(got)
