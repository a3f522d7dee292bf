"""Whose is a delta naming a job id that several job rows share (pure functions).

A raw job id (Lustre's `%j`) names more than one job row when two clusters on one
filesystem both used it, or when a requeued job ran more than once. The rule:

1. Cluster by node: a delta carrying a host (`%j:%u:%H`) belongs to the cluster(s) whose
   jobs ran on that node (cluster_host, filled from the job records). A host no cluster
   is known to have is no evidence either way. A delta on a node that is known only to
   other clusters is none of these rows' (it stays unattributed load).
2. Cluster by time: a delta without a host goes to the clusters whose row with that id was
   running then (with SLACK for collector lag). Still more than one cluster: nobody's, kept
   as unattributed load rather than guessed.
3. Run within the cluster: the run whose time covers most of the delta's interval; none
   does: the latest run started by the delta's end, else the first run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

SLACK = 900.0  # a delta is read up to a collector interval (and an outage) after the I/O


class Claimant(NamedTuple):
    """A job row with the raw id a delta names."""

    key: int
    cluster: str
    start: float | None
    end: float | None  # None: still running


def _span(c: Claimant, now: float) -> tuple[float, float]:
    start = c.start if c.start is not None else float("-inf")
    return start, c.end if c.end is not None else now


def _overlap(a: float, b: float, c: float, d: float) -> float:
    return max(0.0, min(b, d) - max(a, c))


def owner(node: str | None, ts_start: float, ts_end: float, claimants: Sequence[Claimant],
          node_clusters: Mapping[str, frozenset[str]], now: float) -> int | None:
    """The key of the row a delta belongs to, or None (see the module docstring)."""
    cands = list(claimants)
    if node is not None and node in node_clusters:
        cands = [c for c in cands if c.cluster in node_clusters[node]]
    if len({c.cluster for c in cands}) > 1:
        cands = [c for c in cands if _span(c, now)[0] - SLACK <= ts_end
                 and _span(c, now)[1] + SLACK >= ts_start]
        if len({c.cluster for c in cands}) != 1:
            return None
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0].key
    best = max(cands, key=lambda c: (_overlap(ts_start, ts_end, *_span(c, now)),
                                     _span(c, now)[0]))
    if _overlap(ts_start, ts_end, *_span(best, now)) > 0:
        return best.key
    started = [c for c in cands if _span(c, now)[0] <= ts_end]
    if started:
        return max(started, key=lambda c: _span(c, now)[0]).key
    return min(cands, key=lambda c: _span(c, now)[0]).key
