"""The rows sharing a raw job id and the clusters of nodes (thin SQL side of owners.py).

A raw id names more than one job row when two clusters used it or a job was requeued
(sql/0020); attribute.owners decides whose each delta is, this module fetches what it needs:
one indexed lookup (job_raw) per job, and the node -> clusters map only when the id is shared
or the database knows several clusters.
"""

from __future__ import annotations

import psycopg

from slurm_io.attribute.owners import Claimant, owner
from slurm_io.attribute.rows import DeltaRow
from slurm_io.jobs.info import JobWindow


def node_clusters(conn: psycopg.Connection, nodes: list[str]) -> dict[str, frozenset[str]]:
    """node -> the clusters whose jobs ran on it (cluster_host), for `nodes`."""
    out: dict[str, set[str]] = {}
    for name, cluster in conn.execute(
            "SELECT h.name, c.cluster FROM cluster_host c JOIN host h USING (host_id) "
            "WHERE h.name = ANY(%s)", (nodes,)):
        out.setdefault(name, set()).add(cluster)
    return {k: frozenset(v) for k, v in out.items()}


class Owners:
    """Whose deltas are whose, for the jobs of some raw ids: every row with those ids (one
    query) and the node -> clusters map once, for the jobs of one fetch (attribute.batch)."""

    def __init__(self, conn: psycopg.Connection, raws: list[int]) -> None:
        self._conn = conn
        self._rivals: dict[int, list[Claimant]] = {}
        for key, raw, cluster, st, en in conn.execute(
                "SELECT job, job_raw, cluster, extract(epoch FROM start_time)::float8, "
                "extract(epoch FROM end_time)::float8 FROM job WHERE job_raw = ANY(%s)",
                (raws,)):
            self._rivals.setdefault(raw, []).append(Claimant(key, cluster, st, en))
        (one,) = conn.execute("SELECT count(*) <= 1 FROM (SELECT DISTINCT cluster "
                              "FROM cluster_host) c").fetchone() or (True,)
        self._one_cluster = bool(one)
        self._where: dict[str, frozenset[str]] = {}
        self._looked: set[str] = set()

    def of(self, j: JobWindow, rows: list[DeltaRow], now: float) -> list[DeltaRow]:
        """Of `rows` (deltas naming j's raw id), those attribute.owners gives row `j`."""
        rivals = list(self._rivals.get(j.raw_id, ()))
        if not rows or (len(rivals) <= 1 and self._one_cluster):
            return rows
        if not any(c.key == j.job for c in rivals):
            rivals.append(Claimant(j.job, j.cluster or "", j.start, j.end))
        nodes = sorted({d.node for d in rows if d.node is not None} - self._looked)
        if nodes:
            self._where.update(node_clusters(self._conn, nodes))
            self._looked.update(nodes)
        return [d for d in rows
                if owner(d.node, d.ts_start, d.ts_end, rivals, self._where, now) == j.job]
