"""The web view's pages, pure: sorting and filtering the job list, what the rows show
(ranges when attribution gives them, the advice mark), escaping of what users named."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from slurm_io.mail.view_model import Thresholds
from slurm_io.web import jobpage, pages
from slurm_io.web.listing import parse_query, select

NOW = datetime(2026, 11, 25, 12, 0).timestamp()


def job(jobid: str, **kw: Any) -> dict[str, Any]:
    d = {"jobid": jobid, "job": int(jobid), "name": f"n{jobid}", "account": "proj",
         "state": "COMPLETED", "running": False, "figures": True, "read_bytes": 0,
         "write_bytes": 0, "metadata_ops": 0, "mean_request": None, "risk_oss": None,
         "risk_mds": None, "start": "2026-11-24T10:00:00", "start_epoch": NOW - 86400,
         "elapsed": 60, "advice": []}
    d.update(kw)
    return d


JOBS = [job("1", running=True, state="RUNNING", read_bytes=5),
        job("2", read_bytes=50, account="chem", name="Post-process"),
        job("3", read_bytes=20, risk_oss=0.5, risk_mds=2.0, state="CANCELLED by 0"),
        job("4", figures=False)]


def ids(jobs: list[dict[str, Any]]) -> list[str]:
    return [j["jobid"] for j in jobs]


def test_sorting_puts_jobs_without_the_figure_last_both_ways() -> None:
    assert ids(select(JOBS, parse_query({"sort": "read"}, now=NOW))) == ["2", "3", "1", "4"]
    assert ids(select(JOBS, parse_query({"sort": "read", "order": "asc"}, now=NOW))) == [
        "1", "3", "2", "4"]
    assert ids(select(JOBS, parse_query({"sort": "risk"}, now=NOW)))[0] == "3"
    assert ids(select(JOBS, parse_query({}, now=NOW))) == ["1", "2", "3", "4"]  # as served


def test_filters_by_state_account_and_name() -> None:
    assert ids(select(JOBS, parse_query({"state": "CANCELLED"}, now=NOW))) == ["3"]
    assert ids(select(JOBS, parse_query({"account": "chem"}, now=NOW))) == ["2"]
    assert ids(select(JOBS, parse_query({"name": "post"}, now=NOW))) == ["2"]
    assert ids(select(JOBS, parse_query({"name": "nothing"}, now=NOW))) == []


def test_a_bad_query_falls_back_to_the_defaults() -> None:
    q = parse_query({"sort": "'; drop", "from": "2020-13-45", "to": "yesterday"}, now=NOW)
    assert q.sort is None and q.end == NOW and q.start == NOW - 7 * 86400
    q = parse_query({"from": "2026-01-01", "to": "2026-11-25"}, now=NOW)  # over 31 days
    assert q.end - q.start == 7 * 86400


def test_the_list_escapes_names_and_marks_advice() -> None:
    doc = {"user": "alice", "jobs": [job("7", name="<script>x</script>",
                                         advice=["Heavy metadata load"])]}
    html = pages.myjobs_page(doc, parse_query({}, now=NOW), "/base", "alice")
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    assert "advice: Heavy metadata load" in html and 'href="/base/job/7"' in html
    assert '<th scope="col"' in html and "<caption>" in html


def test_ranges_are_shown_when_attribution_gives_them() -> None:
    doc = {"user": "alice", "jobs": [job("8", read_bytes=2048, read_bytes_least=1024,
                                         read_bytes_most=4096)]}
    html = pages.myjobs_page(doc, parse_query({}, now=NOW), "", "alice")
    assert "(1.0 KiB to 4.0 KiB)" in html
    assert "(" not in pages.ranged(5, None, None)
    doc = {"jobid": "9", "job": 9, "user": "alice", "start": "2026-11-25T11:00:00",
           "end": "2026-11-25T11:30:00", "totals": {"read_bytes": 2048}, "quality": {
               "metadata_ops": 7}, "ranges": {"read_bytes": {"least": 1024, "most": 4096},
                                              "metadata_ops": {"least": 5, "most": 9}}}
    html = jobpage.job_page(doc, "", "alice", Thresholds(), refresh=30, now=NOW)
    assert "(1.0 KiB to 4.0 KiB)" in html and "(5 to 9)" in html
    assert "(" not in jobpage.job_page(dict(doc, ranges=None), "", "alice", Thresholds(),
                                       refresh=30, now=NOW).split("Figures</caption>")[1
                                       ].split("</table>")[0]


def test_the_job_page_has_its_charts_and_a_live_region_when_running() -> None:
    doc = {"jobid": "9", "job": 9, "user": "alice", "name": "x", "nodes": ["n1"],
           "start": "2026-11-25T11:00:00", "end": None, "running": True, "elapsed": 3600,
           "totals": {"read_bytes": 10, "write_bytes": 5}, "quality": {},
           "by_target": {"fs-OST0000": {"read_bytes": 10}},
           "timeline": [[NOW - 60, 10, 5, 0]], "lassi": None}
    html = jobpage.job_page(doc, "/b", "alice", Thresholds(), refresh=7, now=NOW)
    assert 'aria-live="polite"' in html and 'data-refresh="7"' in html
    assert 'data-src="/b/job/9/live"' in html
    assert html.count("<svg") == 3
    done = dict(doc, end="2026-11-25T11:30:00", running=False)
    assert "data-refresh" not in jobpage.job_page(done, "", "alice", Thresholds(), refresh=7,
                                                  now=NOW)


def test_the_top_page_names_owners_only_per_job_and_escapes() -> None:
    from slurm_io.web import admin

    by_user = admin.top_page({"top": {"at": NOW, "interval": 120, "rows": [
        {"kind": "user", "key": "<i>alice", "rates": {"write_bytes": 5}, "jobs": 1}]}},
        "user", "write", "", "carol", [])
    assert "<i>alice" not in by_user and "&lt;i&gt;alice" in by_user
    assert '<th scope="col">account</th>' not in by_user
    by_job = admin.top_page({"top": {"at": NOW, "interval": 120, "rows": [
        {"kind": "job", "jobid": "5", "key": "5", "user": "a", "account": "p", "rates": {},
         "jobs": 1}]}}, "job", "write", "/b", "carol", [])
    assert '<th scope="col">account</th>' in by_job and 'href="/b/job/5"' in by_job
    assert 'aria-current="page"' in by_job  # the grouping and ranking shown are marked
