"""The web view's HTML: the page frame and the "My jobs" page. Pure: documents in, text out.

Plain HTML built with the standard library (every value through `html.escape`): a login
node installs `slurm-io[client]`, without jinja2. Semantic tables with `scope` headers and
`aria-sort`, labelled form fields, a skip link, no script needed to sort or filter (links
and a GET form), so it works by keyboard and with a screen reader. Styles and the one small
script come from this app (`/static/`), never a CDN.
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from slurm_io.mail.fmt import fmt_count, fmt_duration, fmt_size
from slurm_io.web.listing import SORTS, ListQuery, choices, risk, select


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def url(base: str, path: str, params: Mapping[str, str] | None = None) -> str:
    q = urllib.parse.urlencode(dict(params)) if params else ""
    return f"{base}{path}" + (f"?{q}" if q else "")


def page(base: str, title: str, body: str, *, user: str, nav: Sequence[tuple[str, str]] = ()
         ) -> str:
    links = "".join(f'<li><a href="{esc(href)}">{esc(label)}</a></li>' for label, href in nav)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{esc(title)} - jobio</title>'
        f'<link rel="stylesheet" href="{esc(base)}/static/app.css">'
        f'<script src="{esc(base)}/static/app.js" defer></script></head><body>'
        '<a class="skip" href="#main">Skip to the content</a>'
        f'<header><nav aria-label="jobio"><ul><li><a href="{esc(base)}/">My jobs</a></li>'
        f'{links}</ul></nav><p class="who">Signed in as <strong>{esc(user)}</strong></p>'
        f'</header><main id="main" tabindex="-1">{body}</main></body></html>\n')


def ranged(value: float | None, least: float | None, most: float | None,
           fmt: Any = fmt_size) -> str:
    """A figure and, where attribution gave its range (least, most), the range."""
    text = fmt(value)
    if least is not None and most is not None and (least != value or most != value):
        text += f' <span class="range">({fmt(least)} to {fmt(most)})</span>'
    return text


def error_page(base: str, user: str, title: str, message: str) -> str:
    return page(base, title, f'<h1>{esc(title)}</h1><p role="alert">{esc(message)}</p>',
                user=user)


def _select(name: str, label: str, values: list[str], current: str | None) -> str:
    opts = ['<option value="">all</option>'] + [
        f'<option value="{esc(v)}"{" selected" if v == current else ""}>{esc(v)}</option>'
        for v in values]
    return (f'<label for="f-{name}">{esc(label)}</label>'
            f'<select id="f-{name}" name="{name}">{"".join(opts)}</select>')


def _filters(q: ListQuery, jobs: list[dict[str, Any]], base: str) -> str:
    p = q.params()
    hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(p[k])}">'
                     for k in ("sort", "order") if k in p)
    return (
        f'<form class="filters" method="get" action="{esc(base)}/" role="search" '
        'aria-label="Filter the jobs">'
        f'<label for="f-from">From</label><input id="f-from" name="from" type="date" '
        f'value="{esc(p["from"])}">'
        f'<label for="f-to">To</label><input id="f-to" name="to" type="date" '
        f'value="{esc(p["to"])}">'
        + _select("state", "State", sorted(set(choices(jobs, "state")) | (
            {q.state} if q.state else set())), q.state)
        + _select("account", "Account", sorted(set(choices(jobs, "account")) | (
            {q.account} if q.account else set())), q.account)
        + f'<label for="f-name">Name contains</label><input id="f-name" name="name" '
        f'type="search" value="{esc(q.name)}">{hidden}'
        '<button type="submit">Show</button></form>')


def _heading(key: str, q: ListQuery, base: str) -> str:
    label = SORTS[key][0]
    if q.sort == key:
        order = "descending" if q.descending else "ascending"
        nxt = "asc" if q.descending else "desc"
        arrow = " ▼" if q.descending else " ▲"
        aria = f' aria-sort="{order}"'
    else:
        nxt, arrow, aria = "desc", "", ""
    href = url(base, "/", q.params(sort=key, order=nxt))
    return (f'<th scope="col" class="num"{aria}><a href="{esc(href)}" data-sort="{key}">'
            f'{esc(label)}{arrow}<span class="sr"> (sort)</span></a></th>')


def _figure(j: Mapping[str, Any], field: str, fmt: Any) -> str:
    if not j.get("figures", True):
        return '<span class="pending">pending</span>'
    return ranged(j.get(field), j.get(f"{field}_least"), j.get(f"{field}_most"), fmt)


def _risk_text(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _row(j: Mapping[str, Any], base: str) -> str:
    advice = list(j.get("advice") or [])
    mark = ""
    if advice:
        words = "; ".join(str(a) for a in advice)
        mark = (f'<span class="mark" title="{esc(words)}" aria-hidden="true">⚠</span>'
                f'<span class="sr">advice: {esc(words)}</span>')
    job = f'<a href="{esc(url(base, "/job/" + str(j["jobid"])))}">{esc(j["jobid"])}</a>'
    state = esc(j.get("state")) + (' <span class="live">running</span>'
                                   if j.get("running") else "")
    r = risk(j)
    risky = ' class="num risky"' if r is not None and r > 0 else ' class="num"'
    return (f'<tr data-jobid="{esc(j["jobid"])}"><th scope="row">{job} {mark}</th>'
            f'<td>{esc(j.get("name"))}</td><td>{esc(j.get("account"))}</td><td>{state}</td>'
            f'<td>{esc((j.get("start") or "").replace("T", " "))}</td>'
            f'<td class="num">{esc(fmt_duration(j.get("elapsed")))}</td>'
            f'<td class="num">{_figure(j, "read_bytes", fmt_size)}</td>'
            f'<td class="num">{_figure(j, "write_bytes", fmt_size)}</td>'
            f'<td class="num">{_figure(j, "metadata_ops", fmt_count)}</td>'
            f'<td class="num">{_figure(j, "mean_request", fmt_size)}</td>'
            f'<td{risky}>{esc(_risk_text(r))}</td></tr>')


def myjobs_page(doc: Mapping[str, Any], q: ListQuery, base: str, user: str,
                nav: Sequence[tuple[str, str]] = ()) -> str:
    jobs = list(doc.get("jobs") or [])
    shown = select(jobs, q)
    p = q.params()
    caption = (f'{len(shown)} of {len(jobs)} jobs of {esc(doc.get("user") or user)} that ran '
               f'from {esc(p["from"])} to {esc(p["to"])}')
    if doc.get("truncated"):
        caption += f' (the newest {len(jobs)} of {doc.get("total")}: choose a shorter period)'
    head = ('<tr><th scope="col">Job</th><th scope="col">Name</th><th scope="col">Account'
            '</th><th scope="col">State</th>'
            + _heading("start", q, base).replace(' class="num"', "")
            + '<th scope="col" class="num">Elapsed</th>'
            + "".join(_heading(k, q, base) for k in ("read", "written", "meta", "size", "risk"))
            + "</tr>")
    rows = "".join(_row(j, base) for j in shown) or (
        '<tr><td colspan="11">No job of yours ran in this period, or none matches the '
        'filters.</td></tr>')
    body = (f'<h1>My jobs</h1>{_filters(q, jobs, base)}'
            f'<table id="jobs" class="jobs"><caption>{caption}</caption><thead>{head}</thead>'
            f'<tbody>{rows}</tbody></table>'
            '<p class="note">⚠ marks a job whose I/O drew advice (its page says what and '
            'how to improve it). LASSi risk: 0 is twice the usual load of the filesystem, '
            'above 0 riskier. "pending": figures not computed yet.</p>')
    return page(base, "My jobs", body, user=user, nav=nav)
