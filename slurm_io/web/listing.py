"""The "My jobs" list's query: sort and filters, parsed from the page's own query string,
applied to the service's job documents. Pure.

Sorting and filtering happen in the page, not in the service: the service sends one period's
jobs once (cached briefly), and every sort or filter the user tries reads that same answer.
Unknown or malformed values fall back to the defaults, never an error page: they come from
links and a form of this app, or from a hand-edited URL.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# sort key -> (column heading, document field)
SORTS: dict[str, tuple[str, str]] = {
    "read": ("Read", "read_bytes"), "written": ("Written", "write_bytes"),
    "meta": ("Metadata ops", "metadata_ops"), "size": ("Mean request", "mean_request"),
    "risk": ("LASSi risk", "risk"), "start": ("Start", "start_epoch"),
}
DEFAULT_DAYS = 7
MAX_DAYS = 31


@dataclass(frozen=True)
class ListQuery:
    sort: str | None  # None: running first, then the newest (the service's order)
    descending: bool
    state: str | None
    account: str | None
    name: str | None  # a part of the job name, case-insensitive
    start: float
    end: float

    def params(self, **changes: Any) -> dict[str, str]:
        """The query string of this view with `changes` (for links that keep the rest)."""
        d = {"sort": self.sort, "order": "desc" if self.descending else "asc",
             "state": self.state, "account": self.account, "name": self.name,
             "from": datetime.fromtimestamp(self.start).strftime("%Y-%m-%d"),
             "to": datetime.fromtimestamp(self.end).strftime("%Y-%m-%d")}
        d.update(changes)
        return {k: str(v) for k, v in d.items() if v not in (None, "")}


def _day(text: str | None, *, end_of_day: bool) -> float | None:
    if not text:
        return None
    try:
        d = datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        return None
    return d.timestamp() + (86400 - 1 if end_of_day else 0)


def parse_query(q: Mapping[str, str], *, now: float | None = None) -> ListQuery:
    """The view a query string asks for (defaults: the last 7 days, the service's order)."""
    now = time.time() if now is None else now
    sort = q.get("sort") if q.get("sort") in SORTS else None
    end = min(_day(q.get("to"), end_of_day=True) or now, now)
    start = _day(q.get("from"), end_of_day=False) or end - DEFAULT_DAYS * 86400
    if start > end or end - start > MAX_DAYS * 86400:
        start = end - DEFAULT_DAYS * 86400
    return ListQuery(sort, q.get("order", "desc") != "asc", q.get("state") or None,
                     q.get("account") or None, (q.get("name") or "").strip()[:256] or None,
                     start, end)


def risk(job: Mapping[str, Any]) -> float | None:
    """A job's LASSi risk for the list: the worse of its OSS and MDS risks."""
    values = [v for v in (job.get("risk_oss"), job.get("risk_mds")) if v is not None]
    return max(values) if values else None


def select(jobs: list[dict[str, Any]], q: ListQuery) -> list[dict[str, Any]]:
    """The jobs the filters keep, in the order asked for (jobs without the figure last)."""
    out = [j for j in jobs
           if (q.state is None or (j.get("state") or "").split()[0:1] == [q.state])
           and (q.account is None or j.get("account") == q.account)
           and (q.name is None or q.name.lower() in (j.get("name") or "").lower())]
    if q.sort is None:
        return out
    field = SORTS[q.sort][1]

    def value(j: dict[str, Any]) -> float | None:
        v = risk(j) if field == "risk" else j.get(field)
        return None if v is None or (field != "risk" and not j.get("figures", True)
                                     and field != "start_epoch") else float(v)

    known = [j for j in out if value(j) is not None]
    unknown = [j for j in out if value(j) is None]
    known.sort(key=lambda j: (value(j), str(j.get("jobid"))), reverse=q.descending)
    return known + unknown


def choices(jobs: list[dict[str, Any]], field: str) -> list[str]:
    """The distinct values of a field (states by their first word: `CANCELLED by 0`)."""
    values = {(j.get(field) or "").split()[0] if field == "state" else (j.get(field) or "")
              for j in jobs}
    return sorted(v for v in values if v)
