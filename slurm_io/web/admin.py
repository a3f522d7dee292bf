"""The web view's pages for admins (members of `privacy.admin_group`): the live top by
job, user or account, and the tables of a day's report. Pure: documents in, HTML out.

Who is an admin is decided twice: here only to show the pages (group membership as the
login node sees it), and by the database for what they hold (row-level security as the
caller's role: a user who is not in `jobio_admin` would see their own load only).
"""

from __future__ import annotations

import grp
import os
import pwd
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from slurm_io.mail.fmt import fmt_count, fmt_size
from slurm_io.service.requests import TOP_BY, TOP_SORT
from slurm_io.web.pages import esc, page, url

NO_HOURS = ('<tr><td colspan="7">No LASSi hours stored for this day (`jobio daily` or '
            '`jobio lassi compute` stores them).</td></tr>')
SORT_NAMES = {"write": "written", "read": "read", "meta_ops": "metadata ops",
              "reqs": "requests"}


def in_group(user: str, group: str) -> bool:
    """Whether `user` is in `group` (its primary group, or a listed member)."""
    try:
        g = grp.getgrnam(group)
    except KeyError:
        return False
    if user in g.gr_mem:
        return True
    try:
        return pwd.getpwnam(user).pw_gid == g.gr_gid or g.gr_gid in os.getgroups()
    except KeyError:
        return False


def _choices(base: str, path: str, name: str, values: Sequence[str], current: str,
             others: Mapping[str, str], words: Mapping[str, str]) -> str:
    links = []
    for v in values:
        label = esc(words.get(v, v))
        if v == current:
            links.append(f'<li><a aria-current="page" href="'
                         f'{esc(url(base, path, {**others, name: v}))}"><strong>{label}'
                         '</strong></a></li>')
        else:
            links.append(f'<li><a href="{esc(url(base, path, {**others, name: v}))}">'
                         f'{label}</a></li>')
    return f'<ul class="choices" aria-label="{esc(name)}">{"".join(links)}</ul>'


def top_page(doc: Mapping[str, Any], by: str, sort: str, base: str, user: str,
             nav: Sequence[tuple[str, str]]) -> str:
    t = doc.get("top") or {}
    at = t.get("at")
    when = ("no data yet" if at is None else
            f"the interval ending {datetime.fromtimestamp(at).strftime('%Y-%m-%d %H:%M:%S')}"
            f" ({t.get('interval', 0):.0f} s)")
    per_job = by == "job"  # a job's line also names its owner and account
    head = (f'<tr><th scope="col">{esc(by)}</th>'
            + ('<th scope="col">user</th><th scope="col">account</th>' if per_job else "")
            + '<th scope="col" class="num">written/s</th>'
            '<th scope="col" class="num">read/s</th><th scope="col" class="num">metadata '
            'ops/s</th><th scope="col" class="num">requests/s</th><th scope="col" '
            'class="num">jobs</th></tr>')
    body = []
    for r in t.get("rows") or []:
        rates = r.get("rates") or {}
        key = esc(r.get("key"))
        if r.get("kind") == "job" and r.get("jobid"):
            key = f'<a href="{esc(url(base, "/job/" + str(r["jobid"])))}">{key}</a>'
        body.append(
            f'<tr><th scope="row">{key}</th>'
            + (f'<td>{esc(r.get("user") or "")}</td><td>{esc(r.get("account") or "")}</td>'
               if per_job else "")
            + f'<td class="num">{esc(fmt_size(rates.get("write_bytes", 0)))}</td>'
            f'<td class="num">{esc(fmt_size(rates.get("read_bytes", 0)))}</td>'
            f'<td class="num">{esc(fmt_count(rates.get("meta_ops", 0)))}</td>'
            f'<td class="num">{esc(fmt_count(rates.get("reqs", 0)))}</td>'
            f'<td class="num">{esc(r.get("jobs"))}</td></tr>')
    rows = "".join(body) or (f'<tr><td colspan="{8 if per_job else 6}">Nothing in this '
                             'interval.</td></tr>')
    text = (f'<h1>Top by {esc(by)}</h1><p>{esc(when)}, ranked by {esc(SORT_NAMES[sort])}.'
            '</p><nav aria-label="Group and rank"><p>Group by:</p>'
            + _choices(base, "/admin/top", "by", TOP_BY, by, {"sort": sort}, {})
            + "<p>Rank by:</p>"
            + _choices(base, "/admin/top", "sort", TOP_SORT, sort, {"by": by}, SORT_NAMES)
            + f'</nav><table id="top"><caption>The newest interval, per second</caption>'
            f'<thead>{head}</thead><tbody>{rows}</tbody></table>')
    return page(base, f"Top by {by}", text, user=user, nav=nav)


def _kb(kb: float) -> str:
    return fmt_size(kb * 1024)


def daily_page(doc: Mapping[str, Any], base: str, user: str,
               nav: Sequence[tuple[str, str]]) -> str:
    day = str(doc.get("day"))
    by_fs = (doc.get("summary") or {}).get("by_fs") or {}
    tops = doc.get("tops") or {}
    fs_rows = "".join(
        f'<tr><th scope="row">{esc(fs)}</th><td class="num">{esc(_kb(v["read_kb"]))}</td>'
        f'<td class="num">{esc(_kb(v["write_kb"]))}</td><td class="num">'
        f'{esc(fmt_count(v["md_ops"]))}</td><td class="num">{esc(v["jobs"])}</td>'
        f'<td class="num">{v["risk_oss"]:.2f}</td><td class="num">{v["risk_mds"]:.2f}</td>'
        '</tr>' for fs, v in sorted(by_fs.items()))
    parts = [f'<h1>Daily report {esc(day)}</h1>'
             f'<form method="get" action="{esc(base)}/admin/daily"><label for="d">Day</label>'
             f'<input id="d" name="date" type="date" value="{esc(day)}">'
             '<button type="submit">Show</button></form>',
             '<table id="by-fs"><caption>Per filesystem</caption><thead><tr>'
             '<th scope="col">filesystem</th><th scope="col">read</th><th scope="col">written'
             '</th><th scope="col">metadata ops</th><th scope="col">jobs</th><th scope="col">'
             'max risk_oss</th><th scope="col">max risk_mds</th></tr></thead><tbody>'
             f'{fs_rows or NO_HOURS}'
             '</tbody></table>']
    for key, title in (("by_risk", "Riskiest jobs"), ("by_bytes", "Top jobs by data volume"),
                       ("by_metadata", "Top jobs by metadata operations")):
        rows = "".join(
            f'<tr><th scope="row"><a href="{esc(url(base, "/job/" + str(j["jobid"])))}">'
            f'{esc(j["jobid"])}</a></th><td>{esc(j["user"])}</td><td>{esc(j["name"])}</td>'
            f'<td class="num">{esc(_kb(j["read_kb"]))}</td><td class="num">'
            f'{esc(_kb(j["write_kb"]))}</td><td class="num">{esc(fmt_count(j["md_ops"]))}'
            f'</td><td class="num">{j["risk_oss"]:.2f}</td><td class="num">'
            f'{j["risk_mds"]:.2f}</td></tr>' for j in tops.get(key) or [])
        parts.append(
            f'<table id="{key}"><caption>{title}</caption><thead><tr><th scope="col">job</th>'
            '<th scope="col">user</th><th scope="col">name</th><th scope="col">read</th>'
            '<th scope="col">written</th><th scope="col">metadata ops</th><th scope="col">'
            'max risk_oss</th><th scope="col">max risk_mds</th></tr></thead><tbody>'
            f'{rows or "<tr><td colspan=8>none</td></tr>"}</tbody></table>')
    users = "".join(
        f'<tr><th scope="row">{esc(u["user"])}</th><td class="num">{esc(u["jobs"])}</td>'
        f'<td class="num">{esc(_kb(u["read_kb"]))}</td><td class="num">'
        f'{esc(_kb(u["write_kb"]))}</td><td class="num">{esc(fmt_count(u["md_ops"]))}</td>'
        '</tr>' for u in tops.get("users") or [])
    parts.append('<table id="users"><caption>Top users</caption><thead><tr><th scope="col">'
                 'user</th><th scope="col">jobs</th><th scope="col">read</th><th scope="col">'
                 'written</th><th scope="col">metadata ops</th></tr></thead><tbody>'
                 f'{users or "<tr><td colspan=5>none</td></tr>"}</tbody></table>')
    return page(base, f"Daily report {day}", "".join(parts), user=user, nav=nav)
