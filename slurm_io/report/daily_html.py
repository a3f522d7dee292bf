"""The HTML of `jobio daily` (slurm_io.report.daily): the day's page and a page per job.

Apart from daily.py (which queries the day and writes the files) so that the markup is a set
of pure functions of the figures; daily re-exports `index_html`, `job_html` and `job_file`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from slurm_io.report.counters import human_bytes

CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1250px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.3em 0 1em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
.note { color: #555; font-size: 0.9em; }
"""


def _e(x: Any) -> str:
    return html.escape("-" if x is None else str(x))


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
            "</body></html>\n")


def _table(head: list[str], rows: Iterable[list[str]], left: int = 0) -> str:
    th = "".join(f"<th class=\"l\">{h}</th>" if i < left else f"<th>{h}</th>"
                 for i, h in enumerate(head))
    out = [f"<table><tr>{th}</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class=\"l\">{c}</td>" if i < left else f"<td>{c}</td>"
                                     for i, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def job_file(jobid: str) -> str:
    return "jobs/" + "".join(c if c.isalnum() or c in "_-." else "_" for c in jobid) + ".html"


def kb_text(kb: float) -> str:
    return human_bytes(kb * 1024)


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def _job_rows(jobs: list[dict[str, Any]], linked: set[str]) -> list[list[str]]:
    out = []
    for j in jobs:
        jid = _e(j["jobid"])
        link = f"<a href=\"{job_file(j['jobid'])}\">{jid}</a>" if j["jobid"] in linked else jid
        out.append([link, _e(j["user"]), _e(j["name"]), kb_text(j["read_kb"]),
                    kb_text(j["write_kb"]),
                    f"{j['md_ops']:.0f}", _num(j["read_kb_ops"]), _num(j["write_kb_ops"]),
                    f"{j['risk_oss']:.2f}", f"{j['risk_mds']:.2f}", str(j["hours"])])
    return out


JOB_HEAD = ["job", "user", "name", "read", "written", "metadata ops", "read_kb_ops",
            "write_kb_ops", "max risk_oss", "max risk_mds", "hours"]


def index_html(day: date, summary: dict[str, Any], tops: dict[str, Any], linked: set[str],
               baseline: list[dict[str, Any]]) -> str:
    s = summary
    parts = [f"<h1>slurm-io daily report: {day.isoformat()} (UTC)</h1>",
             "<p class=\"note\">LASSi risk: (x - a&middot;avg) / (a&middot;avg) per operation, "
             "summed over the positive ones; see docs/views.md. Generated "
             f"{_e(datetime.now(UTC).isoformat(timespec='seconds'))}.</p>",
             "<h2>Summary</h2>",
             _table(["filesystem", "read", "written", "read requests", "write requests",
                     "metadata ops", "jobs", "filesystem's max hourly risk_oss",
                     "risk_mds"],
                    [[_e(fs), kb_text(v["read_kb"]), kb_text(v["write_kb"]), f"{v['read_ops']:.0f}",
                      f"{v['write_ops']:.0f}", f"{v['md_ops']:.0f}", str(v["jobs"]),
                      f"{v['risk_oss']:.2f}", f"{v['risk_mds']:.2f}"]
                     for fs, v in s["by_fs"].items()], left=1)]
    if baseline:
        parts.append(_table(
            ["filesystem", "a", "baseline", "baseline hours", "metrics compared with the day "
             "itself (no history)"],
            [[_e(b["fs"]), f"{b['a']:g}", f"{_e(b['from'])} .. {_e(b['to'])}",
              str(b["hours"]), _e(", ".join(b["own"]) or "none")] for b in baseline], left=1))
    for png, title in (("risk.png", "LASSi risk per hour"),
                       ("quality.png", "Request quality (kb_ops)"),
                       ("rates.png", "Aggregate rates"),
                       ("heatmap.png", "Per-job rates (log bins)")):
        parts.append(f"<h2>{title}</h2><img src=\"{png}\" alt=\"{title}\">")
    for key, title in (("by_risk", "Riskiest jobs (max hourly risk_oss + risk_mds)"),
                       ("by_bytes", "Top jobs by data volume"),
                       ("by_metadata", "Top jobs by metadata operations")):
        parts.append(f"<h2>{title}</h2>")
        parts.append(_table(JOB_HEAD, _job_rows(tops[key], linked), left=3)
                     if tops[key] else "<p>none</p>")
    parts.append("<h2>Top users</h2>")
    parts.append(_table(
        ["user", "jobs", "read", "written", "metadata ops", "max risk_oss", "max risk_mds"],
        [[_e(u["user"]), str(u["jobs"]), kb_text(u["read_kb"]), kb_text(u["write_kb"]),
          f"{u['md_ops']:.0f}", f"{u['risk_oss']:.2f}", f"{u['risk_mds']:.2f}"]
         for u in tops["users"]], left=1) if tops["users"] else "<p>none</p>")
    parts.append("<p class=\"note\">Jobs include their pro-rata share of job-missing "
                 "<code>:uid:host</code> entries; load outside jobs is in the plots and the "
                 "summary only (<code>jobio usage --attribution</code> splits it).</p>")
    return _page(f"slurm-io daily {day.isoformat()}", "\n".join(parts))


def job_html(report: dict[str, Any], text: str, hours: list[dict[str, Any]]) -> str:
    r = report
    keys = ("jobid", "user", "account", "partition", "name", "state", "start", "end", "elapsed",
            "work_dir")
    parts = ["<p><a href=\"../index.html\">&larr; daily report</a></p>",
             f"<h1>Job {_e(r['jobid'])} ({_e(r['name'])})</h1>",
             _table(["field", "value"], [[k, _e(r.get(k))] for k in keys], left=2),
             f"<h2>jobio show</h2><pre>{html.escape(text)}</pre>"]
    if hours:
        parts.append("<h2>LASSi hours</h2>")
        parts.append(_table(
            ["hour (UTC)", "fs", "read", "written", "metadata ops", "read_kb_ops",
             "write_kb_ops", "risk_oss", "risk_mds", "risky metrics"],
            [[_dt(h["hour"]), _e(h["fs"]), kb_text(h["read_kb"]), kb_text(h["write_kb"]),
              f"{h['md_ops']:.0f}", _num(h["read_kb_ops"]), _num(h["write_kb_ops"]),
              f"{h['risk_oss']:.2f}", f"{h['risk_mds']:.2f}",
              _e(", ".join(f"{k} {v:.1f}" for k, v in sorted(
                  (h["risks"] or {}).items(), key=lambda kv: -kv[1])) or "-")]
             for h in hours], left=2))
    parts.append("<h2>JSON</h2><pre>" + html.escape(json.dumps(
        {k: v for k, v in r.items() if k != "timeline"}, indent=1, sort_keys=True)) + "</pre>")
    return _page(f"job {r['jobid']}", "\n".join(parts))


def _dt(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M")
