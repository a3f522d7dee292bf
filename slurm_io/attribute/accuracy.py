"""Accuracy of attribution against a simulated cluster's ground truth (truth.json).

Direct attribution (ids naming the job) must be exact; recovery of `:uid:host` entries is pro
rata at the edges of jobs and between concurrent jobs of a user, so it is measured, not exact.
Used by the tests and by bench/accuracy.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

from slurm_io.attribute.sql import attribute_job, find_jobs

DIRECT_FORMS = ("exact", "fqdn", "job_only", "job_uid")


def _bytes(d: dict[str, Any]) -> int:
    return int(d.get("read_bytes", 0)) + int(d.get("write_bytes", 0))


def compare(conn: psycopg.Connection, truth_file: Path, *, now: float) -> dict[str, Any]:
    truth = json.loads(truth_file.read_text())["jobs"]
    rows = []
    for job_id, t in truth.items():
        infos = [i for i in find_jobs(conn, job_id) if str(i.job) == job_id]
        if not infos:
            continue
        io = attribute_job(conn, infos[0].window, now=now)
        by_form = t.get("by_class", {})
        direct_truth = sum(_bytes(by_form.get(f, {})) for f in DIRECT_FORMS)
        missing_truth = _bytes(by_form.get("job_missing", {}))
        got = _bytes(io.totals)
        got_rec = _bytes(io.recovered)
        rows.append({
            "job": job_id, "direct_truth": direct_truth, "direct_got": got - got_rec,
            "recovered_truth": missing_truth, "recovered_got": got_rec,
            "ambiguous": _bytes(io.ambiguous), "split": _bytes(io.split),
            "generated": _bytes(t), "attributed": got,
            "unrecoverable_truth": _bytes(by_form.get("unrecoverable", {})),
        })
    attributable = sum(r["direct_truth"] + r["recovered_truth"] for r in rows)
    attributed = sum(r["attributed"] for r in rows)
    rec_truth = sum(r["recovered_truth"] for r in rows)
    rec_got = sum(r["recovered_got"] for r in rows)
    errs = sorted(abs(r["attributed"] - r["direct_truth"] - r["recovered_truth"])
                  / max(1, r["direct_truth"] + r["recovered_truth"]) for r in rows)
    return {
        "jobs": len(rows),
        "direct_exact_jobs": sum(r["direct_got"] == r["direct_truth"] for r in rows),
        "attributable_bytes": attributable,
        "attributed_bytes": attributed,
        "recovered_truth_bytes": rec_truth,
        "recovered_bytes": rec_got,
        "median_job_error": errs[len(errs) // 2] if errs else 0.0,
        "p90_job_error": errs[int(len(errs) * 0.9)] if errs else 0.0,
        "max_job_error": errs[-1] if errs else 0.0,
        "rows": rows,
    }
