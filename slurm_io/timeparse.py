"""sacct-like time arguments for `-S`/`-E`/`--since`/`--at`, as one pure function.

People paste what they type for `sacct -S`, so every form sacct accepts is accepted here, with
sacct's meaning (Slurm's parse_time with its "past" flag, as sacct calls it):

    HH:MM[:SS][AM|PM]                today at that time
    MMDD[YY], MM/DD[/YY], MM.DD[.YY] a date at midnight; without a year, this year unless the
                                     month is still to come, then last year
    YYYY-MM-DD[THH:MM[:SS]]          a date, optionally with a time
    a date, then `-`, `T` or a space, then a time     e.g. 11/20-08:00, 1120T8:00pm
    today, tomorrow, midnight, noon, elevenses (11:00), fika (15:00), teatime (16:00)
                                     (a day word and a time word combine: `today teatime`)
    now[{+|-}count[seconds|minutes|hours|days|weeks]]   (seconds by default)
    uts<epoch>                       seconds since 1970 (sacct's form)

and, beyond sacct: a bare epoch of 9 or more digits, unit letters (`now-2h`, `now-1d`) and
ISO 8601 with a time zone (`2026-11-20T08:00:00+01:00`). Naive times are local time, as in
sacct. Anything else, and impossible dates (`2026-13-45`, `02/30`), raise ValueError with a
message that can be shown to a person as it is.
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, date, datetime, timedelta

_UNITS = {"s": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
          "w": 604800, "week": 604800, "weeks": 604800}
_REL = re.compile(r"now(?:\s*([+-])\s*(\d+)\s*([a-z]*))?")
_NAMED_TIMES = {"midnight": (0, 0, 0), "noon": (12, 0, 0), "elevenses": (11, 0, 0),
                "fika": (15, 0, 0), "teatime": (16, 0, 0)}
_NAMED_DAYS = ("today", "tomorrow")

# a clock time: H[H]:MM[:SS] with an optional AM/PM, or one of the named times
_TIME = (r"(?P<hh>\d{1,2}):(?P<mi>\d{2})(?::(?P<ss>\d{2}))?\s*(?P<ampm>am|pm)?"
         r"|(?P<tname>" + "|".join(_NAMED_TIMES) + ")")
# a date: ISO, US with separators, MMDD[YY], or a named day
_DATE = (r"(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})"
         r"|(?P<sm>\d{1,2})(?P<sep>[/.])(?P<sd>\d{1,2})(?:(?P=sep)(?P<sy>\d{2}))?"
         r"|(?P<cm>\d{2})(?P<cd>\d{2})(?P<cy>\d{2})?"
         r"|(?P<dname>" + "|".join(_NAMED_DAYS) + ")")
_FORMS = [re.compile(p) for p in (
    rf"(?:{_DATE})(?:(?:\s*[-t]\s*|\s+)(?:{_TIME}))?",
    rf"(?:{_TIME})(?:\s+(?:{_DATE}))?",
)]

HINT = ("try 2026-11-20T08:00, 11/20, 1120, 08:00, today, noon, now-1day "
        "or another form of sacct -S")


def parse_time(text: str, now: float | None = None) -> float:
    """Unix time of a sacct-style time (see the module docstring); ValueError if it is none,
    or if it is no moment between years 1 and 9999 (`uts` with 400 digits is infinity,
    `now+99999999999days` overflows; Python's datetime, and so every later step, holds
    neither)."""
    try:
        t = _parse_time(text, now)
    except OverflowError as e:
        raise ValueError(f"time {text!r} is out of range ({HINT})") from e
    if not (math.isfinite(t) and _MIN_TIME <= t <= _MAX_TIME):
        raise ValueError(f"time {text!r} is out of range: years 1 to 9999 ({HINT})")
    return t


_MIN_TIME = -62_135_596_800.0  # 0001-01-01T00:00:00Z
_MAX_TIME = 253_402_300_799.0  # 9999-12-31T23:59:59Z


def _parse_time(text: str, now: float | None) -> float:
    now = time.time() if now is None else now
    s = text.strip().lower()
    if not s:
        raise ValueError(f"empty time ({HINT})")
    if (m := _REL.fullmatch(s)) is not None:
        return now + _relative(m, text)
    if (m := re.fullmatch(r"(?:uts)?(\d{9,})(\.\d+)?", s)) is not None:
        return float(s.removeprefix("uts"))
    for form in _FORMS:
        if (m := form.fullmatch(s)) is not None:
            return _absolute(m.groupdict(), text, now)
    try:  # ISO 8601 with seconds' fractions or a zone: Python's own parser
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        pass
    raise ValueError(f"cannot understand time {text!r} ({HINT})")


def _relative(m: re.Match[str], text: str) -> float:
    sign, count, unit = m.groups()
    if sign is None:
        return 0.0
    if unit and unit not in _UNITS:
        raise ValueError(f"unknown unit {unit!r} in time {text!r} (seconds, minutes, hours, "
                         "days or weeks)")
    return (1 if sign == "+" else -1) * int(count) * _UNITS[unit or "s"]


def _absolute(g: dict[str, str | None], text: str, now: float) -> float:
    today = datetime.fromtimestamp(now).date()
    day = _day(g, today, text)
    hh, mi, ss = _clock(g, text)
    if day is None:
        day = today  # a time alone: today (sacct looks into the past)
    return datetime(day.year, day.month, day.day, hh, mi, ss).timestamp()


def _day(g: dict[str, str | None], today: date, text: str) -> date | None:
    if g["dname"]:
        return today if g["dname"] == "today" else today + timedelta(days=1)
    if g["iy"]:
        year, month, mday = int(g["iy"]), int(g["im"] or 0), int(g["id"] or 0)
    elif g["sm"] or g["cm"]:
        month = int(g["sm"] or g["cm"] or 0)
        mday = int(g["sd"] or g["cd"] or 0)
        yy = g["sy"] or g["cy"]
        if yy is not None:
            year = 2000 + int(yy)
        else:  # no year: the most recent such month (sacct's "past" rule)
            year = today.year - 1 if month > today.month else today.year
    else:
        return None
    if not 1 <= month <= 12:
        raise ValueError(f"no month {month} in time {text!r} ({HINT})")
    try:
        return date(year, month, mday)
    except ValueError:
        raise ValueError(f"no day {mday} in month {month} of {year} in time {text!r} "
                         f"({HINT})") from None


def _clock(g: dict[str, str | None], text: str) -> tuple[int, int, int]:
    if g["tname"]:
        return _NAMED_TIMES[g["tname"]]
    if g["hh"] is None:
        return (0, 0, 0)
    hh, mi, ss = int(g["hh"]), int(g["mi"] or 0), int(g["ss"] or 0)
    if g["ampm"]:
        if not 1 <= hh <= 12:
            raise ValueError(f"hour {hh} with {g['ampm'].upper()} in time {text!r} ({HINT})")
        hh = hh % 12 + (12 if g["ampm"] == "pm" else 0)
    if hh > 23 or mi > 59 or ss > 59:
        raise ValueError(f"no time {hh:02d}:{mi:02d}:{ss:02d} in {text!r} ({HINT})")
    return hh, mi, ss


def parse_day(value: str | None, now: float | None = None) -> date:
    """A UTC day (`jobio daily`, `jobio lassi compute`): YYYY-MM-DD, `today`, `yesterday`
    (the default), or the UTC day of any time parse_time takes (`now-3days`, `11/20`)."""
    now = time.time() if now is None else now
    today = datetime.fromtimestamp(now, UTC).date()
    word = None if value is None else value.strip().lower()
    if word is None or word == "yesterday":
        return today - timedelta(days=1)
    if word == "today":
        return today
    if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", word):  # the day itself, not local midnight
        year, month, mday = (int(x) for x in word.split("-"))
        try:
            return date(year, month, mday)
        except ValueError:
            raise ValueError(f"not a day: {value!r} (no {word} in the calendar)") from None
    try:
        return datetime.fromtimestamp(parse_time(word, now=now), UTC).date()
    except ValueError as e:
        raise ValueError(f"not a day: {value!r} ({e})") from None
