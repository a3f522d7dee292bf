"""Spreading an interval over fixed-width time buckets: the hours of a job's figures
(attribute.core) and of LASSi (lassi.metrics, lassi.sql.spread_sql in SQL) use one rule.

A leaf (standard library only), so that attribution and LASSi both import it from below.
"""

from __future__ import annotations

import math


def spread_buckets(t0: float, t1: float, width: float, first: float | None = None
                   ) -> list[float]:
    """Bucket starts (buckets (b, b + width]) that the interval (t0, t1] is spread over.

    An interval up to 1.5 buckets long (a normal collector read) goes whole to the bucket of
    t1; a longer one (reads missed: a GAP delta) is spread evenly over the buckets it covers,
    none before `first`. Same rule as lassi.sql.spread_sql.
    """
    last = (math.ceil(t1 / width) - 1) * width
    if t1 - t0 <= 1.5 * width:
        return [last]
    b = math.floor(t0 / width) * width
    if first is not None:
        b = max(b, first)
    out = []
    while b <= last:
        out.append(b)
        b += width
    return out or [last]
