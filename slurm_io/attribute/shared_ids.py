"""The rows sharing a raw job id and the clusters of nodes (the fetching side of owners.py).

A raw id names more than one job row when two clusters used it or a job was requeued
(sql/0020); attribute.owners decides whose each delta is, this module asks attribute.sql for
what it needs: one indexed lookup (job_raw) per fetch, and the node -> clusters map only
when the id is shared or the database knows several clusters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_io.attribute import sql
from slurm_io.attribute.owners import Claimant, owner
from slurm_io.attribute.rows import DeltaRow
from slurm_io.jobs.info import JobWindow

if TYPE_CHECKING:
    import psycopg


class Owners:
    """Whose deltas are whose, for the jobs of some raw ids: every row with those ids (one
    query) and the node -> clusters map once, for the jobs of one fetch (attribute.batch).
    Asked only when some job has deltas naming it: one job's show without any costs none."""

    def __init__(self, conn: psycopg.Connection, raws: list[int]) -> None:
        self._conn = conn
        self._raws = raws
        self._rivals: dict[int, list[Claimant]] | None = None
        self._one_cluster = True
        self._where: dict[str, frozenset[str]] = {}
        self._looked: set[str] = set()

    def of(self, j: JobWindow, rows: list[DeltaRow], now: float) -> list[DeltaRow]:
        """Of `rows` (deltas naming j's raw id), those attribute.owners gives row `j`."""
        if not rows:
            return rows
        if self._rivals is None:
            self._rivals = sql.claimants(self._conn, self._raws)
            self._one_cluster = sql.one_cluster(self._conn)
        rivals = list(self._rivals.get(j.raw_id, ()))
        if len(rivals) <= 1 and self._one_cluster:
            return rows
        if not any(c.key == j.job for c in rivals):
            rivals.append(Claimant(j.job, j.cluster or "", j.start, j.end))
        nodes = sorted({d.node for d in rows if d.node is not None} - self._looked)
        if nodes:
            self._where.update(sql.node_clusters(self._conn, nodes))
            self._looked.update(nodes)
        return [d for d in rows
                if owner(d.node, d.ts_start, d.ts_end, rivals, self._where, now) == j.job]
