"""The row type attribution works on: one stored delta as fetched (attribute.sql).

A leaf below every module of the rules (core, evidence, observed, sizes): the type used to
live in core, which imports evidence and observed, which need the type -- a module circle.
"""

from __future__ import annotations

from typing import NamedTuple


class DeltaRow(NamedTuple):
    """One stored delta, as fetched for attribution."""

    ts_start: float
    ts_end: float
    last_update: float | None
    target: str
    node: str | None
    id_class: int
    job: int | None
    uid: int | None
    counters: dict[str, int]  # Lustre counter name -> delta (bytes for *_bytes)
    sizes: dict[str, tuple[int, int | None, int | None, tuple[tuple[str, int], ...] | None]]
    # sizes: "read"/"write" -> (requests, min, max, hist) of the byte counter in the interval
    entry_start: float | None = None  # the entry was created then, inside the interval
