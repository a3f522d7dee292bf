"""Every request's parameters, parsed into a typed request before anything uses them.

Why one pure function: the handlers used to read `parse_qs` dictionaries themselves, so a
value the database or `datetime` could not take (a job id above 2^63-1, `1\\n`, NUL, `nan`,
`1e18`, a uid of twenty digits) went on to PostgreSQL and came back as a 500. Here each
endpoint's parameters become one small frozen dataclass, or `BadRequest` with the one line
the client prints (HTTP 400). Nothing below this module sees a raw query string.
"""

from __future__ import annotations

import datetime
import math
import re
import urllib.parse
from dataclasses import dataclass

from slurm_io.jobs.spec import JOBID_ARG

INT64_MAX = 2**63 - 1
UID_MAX = 2**32 - 2  # (uid_t) -1 is "no uid"
# seconds since the epoch the database and datetime can both take: 1970 .. 9999-12-31
TIME_MAX = 253402300799.0
MAX_NAME = 256  # characters of a user or cluster list
# parameters in one query (the front end's line cap, 16 KiB, allows ~8000 `a&`): copies of
# one job id are allowed, and count once against max_ids
MAX_FIELDS = 10000
# /v1/jobs: the longest period one request may list (a month of a user's jobs; the web view's
# default is 7 days) -- a wider one is a 400, not a scan of the user's whole history
MAX_PERIOD = 31 * 86400.0
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class BadRequest(Exception):
    """400: the message is the one line the client prints."""


@dataclass(frozen=True)
class ShowRequest:
    jobids: tuple[str, ...]  # distinct, in the order given
    user: str | None
    start: float | None
    end: float | None
    clusters: str | None


@dataclass(frozen=True)
class ReportRequest:
    jobid: str
    clusters: str | None


@dataclass(frozen=True)
class MailRequest:
    user: str | None  # an account name, or a uid in decimal
    enabled: bool | None  # POST: the new choice; GET: None


@dataclass(frozen=True)
class UsageRequest:
    start: float | None
    end: float | None
    attribution: bool


@dataclass(frozen=True)
class JobsRequest:
    """A user's jobs that ran in [start, end] with their summary figures (the web view)."""

    user: str | None  # None: the caller
    start: float | None
    end: float | None


@dataclass(frozen=True)
class TopRequest:
    """The newest interval's top (`jobio top --once`), for the web view's admin page."""

    by: str  # job, user, account
    sort: str  # write, read, meta_ops, reqs


@dataclass(frozen=True)
class DailyRequest:
    """The tables of a day's report (report.daily.day_tables)."""

    day: str  # YYYY-MM-DD


TOP_BY = ("job", "user", "account")
TOP_SORT = ("write", "read", "meta_ops", "reqs")
Request = (ShowRequest | ReportRequest | MailRequest | UsageRequest | JobsRequest | TopRequest
           | DailyRequest)
_KEYS: dict[str, frozenset[str]] = {
    "/v1/show": frozenset({"jobid", "user", "start", "end", "clusters"}),
    "/v1/report": frozenset({"jobid", "clusters"}),
    "/v1/mail": frozenset({"user", "enabled"}),
    "/v1/usage": frozenset({"start", "end", "attribution"}),
    "/v1/jobs": frozenset({"user", "start", "end"}),
    "/v1/top": frozenset({"by", "sort"}),
    "/v1/daily": frozenset({"date"}),
}


def parse(path: str, method: str, query: str, *, max_ids: int) -> Request:
    """The typed request of `method path?query` (a route the app knows), or BadRequest."""
    params = _query(query, max_fields=MAX_FIELDS)
    unknown = sorted(set(params) - _KEYS[path])
    if unknown:
        raise BadRequest(f"unknown parameter {_show(unknown[0])} for {path}")
    if path == "/v1/show":
        ids = _jobids(params.get("jobid", []), max_ids)
        user = _name(params, "user")
        if not ids and not user:
            raise BadRequest("give jobid=..., or user=...")
        return ShowRequest(ids, user, _time(params, "start"), _time(params, "end"),
                           _name(params, "clusters"))
    if path == "/v1/report":
        ids = _jobids(params.get("jobid", [""]), 1)
        return ReportRequest(ids[0], _name(params, "clusters"))
    if path == "/v1/mail":
        user = _name(params, "user")
        if user is not None and user.isdigit() and (len(user) > 10 or int(user) > UID_MAX):
            raise BadRequest(f"user: not a uid: {user}")
        enabled = _one(params, "enabled")
        if method == "POST":
            if enabled not in ("true", "false"):
                raise BadRequest("enabled=true or enabled=false")
            return MailRequest(user, enabled == "true")
        if enabled is not None:
            raise BadRequest("enabled= is for POST")
        return MailRequest(user, None)
    if path == "/v1/jobs":
        start, end = _time(params, "start"), _time(params, "end")
        if start is not None and end is not None:
            if start > end:
                raise BadRequest("start: after end")
            if end - start > MAX_PERIOD:
                raise BadRequest(f"a period of at most {MAX_PERIOD / 86400:.0f} days")
        return JobsRequest(_name(params, "user"), start, end)
    if path == "/v1/top":
        by, sort = _one(params, "by") or "job", _one(params, "sort") or "write"
        if by not in TOP_BY:
            raise BadRequest(f"by: one of {', '.join(TOP_BY)}")
        if sort not in TOP_SORT:
            raise BadRequest(f"sort: one of {', '.join(TOP_SORT)}")
        return TopRequest(by, sort)
    if path == "/v1/daily":
        day = _one(params, "date") or ""
        try:
            datetime.date.fromisoformat(day)
        except ValueError:
            raise BadRequest(f"date: not a day (YYYY-MM-DD): {_show(day)}") from None
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", day):
            raise BadRequest(f"date: not a day (YYYY-MM-DD): {_show(day)}")
        return DailyRequest(day)
    attribution = _one(params, "attribution")
    if attribution not in (None, "0", "1"):
        raise BadRequest("attribution=1 or attribution=0")
    return UsageRequest(_time(params, "start"), _time(params, "end"), attribution == "1")


def _query(query: str, *, max_fields: int) -> dict[str, list[str]]:
    try:
        return urllib.parse.parse_qs(query, keep_blank_values=True, errors="strict",
                                     max_num_fields=max_fields)
    except UnicodeDecodeError:
        raise BadRequest("the query is not UTF-8") from None
    except ValueError:
        raise BadRequest(f"more than {max_fields} parameters in one request") from None


def _show(value: str) -> str:
    """A parameter as it may appear in an error line: escaped, shortened."""
    text = repr(value[:80] + ("..." if len(value) > 80 else ""))
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _one(params: dict[str, list[str]], key: str) -> str | None:
    values = params.get(key)
    if not values:
        return None
    if len(values) > 1:
        raise BadRequest(f"{key}= given {len(values)} times")
    return values[0]


def _name(params: dict[str, list[str]], key: str) -> str | None:
    value = _one(params, key)
    if value is None:
        return None
    if not value or len(value) > MAX_NAME or _CONTROL.search(value):
        raise BadRequest(f"{key}: not a name: {_show(value)}")
    return value


def _jobids(specs: list[str], max_ids: int) -> tuple[str, ...]:
    distinct = tuple(dict.fromkeys(specs))
    if len(distinct) > max_ids:
        raise BadRequest(f"{len(distinct)} job ids in one request: at most {max_ids}")
    for spec in distinct:
        if not JOBID_ARG.fullmatch(spec) or any(
                int(n) > INT64_MAX for n in re.findall(r"[0-9]+", spec.split(".")[0])):
            raise BadRequest(f"not a job id: {_show(spec)}")
    return distinct


def _time(params: dict[str, list[str]], key: str) -> float | None:
    value = _one(params, key)
    if value is None:
        return None
    try:
        t = float(value)
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and 0 <= t <= TIME_MAX):
        raise BadRequest(f"{key}: not a number of seconds since the epoch: {_show(value)}")
    return t
