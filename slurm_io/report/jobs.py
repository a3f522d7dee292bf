"""Per-job I/O from deltas whose id names the job (exact, FQDN, job-only, job+uid ids).

The full attribution (recovered `:uid:host` entries, straddling intervals split pro rata,
per-target/timeline views) builds on this; see docs/attribution.md.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

from slurm_io.model import IdClass
from slurm_io.report.counters import human_bytes, sum_select


def job_totals(conn: psycopg.Connection, jobid: str) -> dict[str, Any] | None:
    m = re.match(r"^(\d+)", jobid)
    if not m:
        return None
    job = int(m.group(1))
    row = conn.execute(
        f"""SELECT count(*)::bigint, min(ts_start), max(ts_end),
                   array_agg(DISTINCT h.name) FILTER (WHERE h.name IS NOT NULL),
                   array_agg(DISTINCT d.id_class), {sum_select('d')}
            FROM jobstats_delta d LEFT JOIN host h USING (host_id)
            WHERE d.job = %s""",
        (job,),
    ).fetchone()
    assert row is not None
    n, first, last, hosts, classes, *vals = row
    if not n:
        return None
    cols = [d.name for d in conn.execute(f"SELECT {sum_select()} FROM jobstats_delta LIMIT 0")
            .description]  # type: ignore[union-attr]
    totals = {k: int(v) for k, v in zip(cols, vals, strict=True) if v}
    return {
        "jobid": str(job),
        "nodes": sorted(hosts or []),
        "first_io": first.isoformat() if first else None,
        "last_io": last.isoformat() if last else None,
        "id_classes": sorted(IdClass(c).label for c in classes or []),
        "rows": n,
        "totals": totals,
    }


def render_job(r: dict[str, Any]) -> str:
    t = r["totals"]
    meta = sum(v for k, v in t.items() if k not in (
        "read_bytes", "write_bytes", "read_bytes_samples", "write_bytes_samples", "read",
        "write"))
    return (
        f"job {r['jobid']}  nodes {','.join(r['nodes']) or '-'}  "
        f"I/O {r['first_io']} .. {r['last_io']}\n"
        f"  read {human_bytes(t.get('read_bytes', 0))} in {t.get('read_bytes_samples', 0)} "
        f"requests, wrote {human_bytes(t.get('write_bytes', 0))} in "
        f"{t.get('write_bytes_samples', 0)} requests, {meta} metadata operations"
    )
