"""The web view's page of one job: what its mail shows (figures, advice, targets) and the
charts (rates and metadata operations over its time, share per OST). Pure.

A running job's figures and charts sit in one live region (`aria-live="polite"`) that the
page's script reloads every `refresh` seconds from `/job/ID/live` (the same fragment), so
that a screen reader announces the change and a page without script still shows the figures
of its load.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from slurm_io.mail.advice import advice
from slurm_io.mail.fmt import fmt_count, fmt_duration, fmt_size, fmt_step
from slurm_io.mail.view_model import Thresholds
from slurm_io.report.jobreport import JobReport
from slurm_io.web import chart
from slurm_io.web.pages import esc, page, ranged, url


def _epoch(iso: str | None) -> float | None:
    return None if not iso else datetime.fromisoformat(iso).timestamp()


def _fig(doc: Mapping[str, Any], counter: str, fmt: Any = fmt_size,
         value: float | None = None) -> str:
    """A figure with its range where the show document has one (`"ranges": {"read_bytes":
    {"least": L, "most": M}, ...}`; absent from rows an older release revised)."""
    r = (doc.get("ranges") or {}).get(counter)
    r = r if isinstance(r, dict) else {}
    v = (doc.get("totals") or {}).get(counter, 0) if value is None else value
    return ranged(v, r.get("least"), r.get("most"), fmt)


def _figures(doc: Mapping[str, Any]) -> str:
    t, q = doc.get("totals") or {}, doc.get("quality") or {}
    rec = doc.get("recovered") or {}
    moved = t.get("read_bytes", 0) + t.get("write_bytes", 0)
    recovered = rec.get("read_bytes", 0) + rec.get("write_bytes", 0)
    rows = [("Read", _fig(doc, "read_bytes")), ("Written", _fig(doc, "write_bytes")),
            ("Read requests", _fig(doc, "read_bytes_samples", fmt_count)),
            ("Write requests", _fig(doc, "write_bytes_samples", fmt_count)),
            ("Mean read request", esc(fmt_size(q.get("read_mean_size")))),
            ("Mean write request", esc(fmt_size(q.get("write_mean_size")))),
            ("Metadata operations", _fig(doc, "metadata_ops", fmt_count,
                                         q.get("metadata_ops", 0))),
            ("Recovered from ids without a job", esc(
                f"{100 * recovered / moved:.1f}% of the bytes" if moved else "-"))]
    lassi = doc.get("lassi")
    if lassi:
        rows.append(("LASSi risk (worst hour, OSS / MDS)",
                     esc(f"{lassi['risk_oss_max']:.2f} / {lassi['risk_mds_max']:.2f}")))
    body = "".join(f'<tr><th scope="row">{esc(k)}</th><td class="num">{v}</td></tr>'
                   for k, v in rows)
    return (f'<table class="figures"><caption>Figures</caption><tbody>{body}</tbody>'
            '</table>')


def _advice(doc: Mapping[str, Any], thresholds: Thresholds, now: float) -> str:
    found = advice(JobReport.from_json(dict(doc), now=now), thresholds)
    if not found:
        return '<section aria-labelledby="adv"><h2 id="adv">Advice</h2><p>None: the I/O ' \
               'pattern looks healthy.</p></section>'
    parts = []
    for a in found:
        tips = "".join(f"<li>{esc(s)}</li>" for s in a.suggestions)
        parts.append(f'<article class="advice"><h3>{esc(a.title)}</h3><p>{esc(a.finding)}'
                     f'</p><ul>{tips}</ul></article>')
    return f'<section aria-labelledby="adv"><h2 id="adv">Advice</h2>{"".join(parts)}</section>'


def _bins_table(b: chart.Bins) -> str:
    rows = "".join(
        f'<tr><th scope="row">{esc(chart.time_label(b.start + k * b.width, 0))}</th>'
        f'<td class="num">{esc(chart.si(r, "B/s"))}</td><td class="num">'
        f'{esc(chart.si(w, "B/s"))}</td><td class="num">{esc(chart.si(m, "op/s"))}</td></tr>'
        for k, (r, w, m) in enumerate(zip(b.read, b.write, b.meta, strict=True))
        if r or w or m)
    return ('<details><summary>The charts\' numbers</summary><table><caption>Rates per '
            f'{int(b.width)} s bin (bins without I/O left out)</caption><thead><tr>'
            '<th scope="col">Bin start</th><th scope="col">Read</th><th scope="col">Write'
            '</th><th scope="col">Metadata</th></tr></thead>'
            f'<tbody>{rows}</tbody></table></details>')


def _charts(doc: Mapping[str, Any], now: float) -> str:
    start = _epoch(doc.get("start"))
    end = _epoch(doc.get("end")) or now
    b = chart.binned(doc.get("timeline") or [], start, end)
    osts = chart.ost_shares(doc.get("by_target") or {})
    ost = (chart.ost_svg(osts) if osts else "<p>No bytes on any OST.</p>")
    return ('<section aria-labelledby="charts"><h2 id="charts">Over the job\'s time</h2>'
            '<p class="legend"><span class="key read"></span>read '
            '<span class="key write"></span>write <span class="key meta"></span>metadata</p>'
            f'<figure id="rates">{chart.rates_svg(b)}<figcaption>Read and write rates, '
            f'per {esc(fmt_step(int(b.width)))}</figcaption></figure>'
            f'<figure id="meta">{chart.meta_svg(b)}<figcaption>Metadata operations per '
            f'second, per {esc(fmt_step(int(b.width)))}</figcaption></figure>'
            f'{_bins_table(b)}</section>'
            '<section aria-labelledby="osts"><h2 id="osts">Share per OST</h2>'
            f'<figure id="ost">{ost}<figcaption>Each OST\'s share of the bytes read (blue) '
            'and written (orange)</figcaption></figure></section>')


def _targets(doc: Mapping[str, Any]) -> str:
    from slurm_io.counter_names import METADATA_OPS

    by = doc.get("by_target") or {}
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td class="num">'
        f'{esc(fmt_size(c.get("read_bytes", 0)))}</td><td class="num">'
        f'{esc(fmt_size(c.get("write_bytes", 0)))}</td><td class="num">'
        f'{esc(fmt_count(sum(v for k, v in c.items() if k in METADATA_OPS)))}</td></tr>'
        for name, c in sorted(by.items()))
    return ('<section aria-labelledby="tg"><h2 id="tg">Targets</h2><table class="targets">'
            '<caption>Per target (OST: data, MDT: metadata)</caption><thead><tr>'
            '<th scope="col">Target</th><th scope="col">Read</th><th scope="col">Written</th>'
            f'<th scope="col">Metadata ops</th></tr></thead><tbody>{rows}</tbody></table>'
            '</section>')


def live_part(doc: Mapping[str, Any], thresholds: Thresholds, now: float | None = None
              ) -> str:
    """What changes while a job runs: the figures, the advice and the charts."""
    now = time.time() if now is None else now
    state = "running: the figures so far" if doc.get("running") else (
        "final" if doc.get("complete") else "not final yet (collectors still reading)")
    return (f'<p class="status">Figures: {esc(state)}, as of '
            f'{esc(datetime.fromtimestamp(now).strftime("%H:%M:%S"))}.</p>'
            f'{_figures(doc)}{_advice(doc, thresholds, now)}{_charts(doc, now)}')


def job_page(doc: Mapping[str, Any], base: str, user: str, thresholds: Thresholds, *,
             refresh: int, nav: Sequence[tuple[str, str]] = (), now: float | None = None
             ) -> str:
    d = doc
    facts = [("User", d.get("user")), ("Account", d.get("account")),
             ("Partition", d.get("partition")), ("State", d.get("state")),
             ("Nodes", ", ".join(d.get("nodes") or [])),
             ("Start", (d.get("start") or "-").replace("T", " ")),
             ("End", (d.get("end") or "-").replace("T", " ")),
             ("Elapsed", fmt_duration(d.get("elapsed"))), ("Work dir", d.get("work_dir"))]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    live_attrs = (f' data-refresh="{refresh}" data-src="'
                  f'{esc(url(base, "/job/" + str(d["jobid"]) + "/live"))}"'
                  if d.get("running") else "")
    body = (f'<h1>Job {esc(d["jobid"])} <small>{esc(d.get("name"))}</small></h1>'
            f'<dl class="facts">{dl}</dl>'
            f'<div id="live" aria-live="polite"{live_attrs}>{live_part(d, thresholds, now)}'
            f'</div>{_targets(d)}')
    return page(base, f"Job {d['jobid']}", body, user=user, nav=nav)
