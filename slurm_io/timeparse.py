"""sacct-like time arguments: `2026-11-20`, `2026-11-20T08:00`, `now`, `now-2hours`, epoch."""

from __future__ import annotations

import re
import time
from datetime import datetime

_REL = re.compile(r"^now(?:([+-])(\d+)(seconds?|minutes?|hours?|days?|weeks?|[smhdw])?)?$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text: str, now: float | None = None) -> float:
    """Unix time of a sacct-style time; naive dates are local time, as in sacct."""
    s = text.strip().lower()
    now = time.time() if now is None else now
    m = _REL.match(s)
    if m:
        if not m.group(1):
            return now
        n = int(m.group(2))
        unit = (m.group(3) or "s")[0]
        sign = 1 if m.group(1) == "+" else -1
        return now + sign * n * _UNIT[unit]
    if re.fullmatch(r"\d{9,}(\.\d+)?", s):
        return float(s)
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError as e:
        raise ValueError(f"cannot understand time {text!r} (try 2026-11-20T08:00 or "
                         "now-1day)") from e
    return dt.timestamp()
