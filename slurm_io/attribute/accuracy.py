"""Accuracy of attribution against a simulated cluster's ground truth (truth.json).

Direct attribution (ids naming the job) must be exact; recovery of `:uid:host` entries is
shared at the edges of jobs and between concurrent jobs of a user, so it is measured, not
exact. The truth is the simulator's ledger (truth.json: what each job's processes did, by the
id class Lustre printed), never the attribution's inputs; "recoverable" is the job's I/O under
ids naming it or under `:uid:host` ids (the rest was printed broken beyond repair).
Used by the tests and by bench/accuracy.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_io.attribute.batch import fetch_chunk
from slurm_io.attribute.core import JobIO, attribute, attribute_by_time
from slurm_io.jobs.info import JobWindow
from slurm_io.jobs.store import find_jobs

if TYPE_CHECKING:
    import psycopg

DIRECT_FORMS = ("exact", "fqdn", "job_only", "job_uid")


def _bytes(d: dict[str, Any]) -> int:
    return int(d.get("read_bytes", 0)) + int(d.get("write_bytes", 0))


def _attributed(conn: psycopg.Connection, j: JobWindow, *, now: float,
                splits: dict[Any, Any], evidence: bool) -> JobIO:
    """The job's figures as attribution makes them, or (`evidence` False) with every
    ambiguous delta split by time alone: what the evidence rule is measured against."""
    x = fetch_chunk(conn, [j], now)[j.job]
    if not evidence:
        return attribute_by_time(j, x.direct, x.recovered, x.competitors, now=now)
    return attribute(j, x.direct, x.recovered, x.competitors, now=now, evidence=x.evidence,
                     splits=splits)


def compare(conn: psycopg.Connection, truth_file: Path, *, now: float,
            evidence: bool = True, splits: dict[Any, Any] | None = None) -> dict[str, Any]:
    """Per-job attributed vs true bytes; `evidence=False` measures time-only splitting.
    `splits` receives the batch's ambiguous splits (for a breakdown of where error lies)."""
    truth = json.loads(truth_file.read_text())["jobs"]
    rows = []
    if splits is None:
        splits = {}
    for job_id, t in truth.items():
        infos = [i for i in find_jobs(conn, job_id) if str(i.raw_id) == job_id]
        if not infos:
            continue
        io = _attributed(conn, infos[0].window, now=now, splits=splits, evidence=evidence)
        by_form = t.get("by_class", {})
        direct_truth = sum(_bytes(by_form.get(f, {})) for f in DIRECT_FORMS)
        missing_truth = _bytes(by_form.get("job_missing", {}))
        got = _bytes(io.totals)
        got_rec = _bytes(io.recovered)
        facets = {k: {"truth": sum(int(by_form.get(f, {}).get(k, 0))
                                   for f in (*DIRECT_FORMS, "job_missing")),
                      "direct_truth": sum(int(by_form.get(f, {}).get(k, 0))
                                          for f in DIRECT_FORMS),
                      "direct_got": io.totals.get(k, 0) - io.recovered.get(k, 0),
                      "got": io.totals.get(k, 0), "range": io.ranges.get(k)}
                  for k in ("read_bytes", "write_bytes")}
        rows.append({
            "job": job_id, "direct_truth": direct_truth, "direct_got": got - got_rec,
            "recovered_truth": missing_truth, "recovered_got": got_rec,
            "ambiguous": _bytes(io.ambiguous), "split": _bytes(io.split),
            "by_evidence": _bytes(io.by_evidence), "by_time": _bytes(io.by_time),
            "generated": _bytes(t), "attributed": got,
            "unrecoverable_truth": _bytes(by_form.get("unrecoverable", {})),
            "facets": facets,
        })
    attributable = sum(r["direct_truth"] + r["recovered_truth"] for r in rows)
    attributed = sum(r["attributed"] for r in rows)
    rec_truth = sum(r["recovered_truth"] for r in rows)
    rec_got = sum(r["recovered_got"] for r in rows)
    abs_err = sum(abs(r["attributed"] - r["direct_truth"] - r["recovered_truth"]) for r in rows)
    # relative errors of jobs that did I/O; a job that did none but was given bytes has no
    # relative error: it is counted apart (and its bytes are in byte_accuracy)
    errs = sorted(abs(r["attributed"] - r["direct_truth"] - r["recovered_truth"])
                  / (r["direct_truth"] + r["recovered_truth"]) for r in rows
                  if r["direct_truth"] + r["recovered_truth"] > 0)
    idle_given = [r for r in rows if r["direct_truth"] + r["recovered_truth"] == 0
                  and r["attributed"] > 0]
    return {
        "jobs": len(rows),
        "direct_exact_jobs": sum(r["direct_got"] == r["direct_truth"] for r in rows),
        "attributable_bytes": attributable,
        "attributed_bytes": attributed,
        "recovered_truth_bytes": rec_truth,
        "recovered_bytes": rec_got,
        # 1 - sum over jobs of |attributed - recoverable truth| / recoverable truth: bytes
        # given to the wrong job count twice (missing here, extra there), unlike a net sum
        "byte_accuracy": 1.0 - abs_err / max(1, attributable),
        "ambiguous_bytes": sum(r["ambiguous"] for r in rows),
        "by_evidence_bytes": sum(r["by_evidence"] for r in rows),
        "by_time_bytes": sum(r["by_time"] for r in rows),
        "median_job_error": errs[len(errs) // 2] if errs else 0.0,
        "p90_job_error": errs[int(len(errs) * 0.9)] if errs else 0.0,
        "max_job_error": errs[-1] if errs else 0.0,
        "idle_jobs_given_bytes": len(idle_given),
        "idle_jobs_bytes": sum(r["attributed"] for r in idle_given),
        "rows": rows,
    }


def _pick(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else 0.0


def range_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How honest the ranges are (attribute.ranges), from compare's rows: the share of jobs
    whose recoverable truth lies inside the range of both their read and written bytes;
    `guaranteed`: the jobs whose own deltas were attributed exactly, where the rule
    guarantees it as far as its premise holds (the owner of each `:uid:host` byte was one
    of the delta's candidates: attribute.ranges); and the width of the ranges,
    (most - least) / figure per job, read and written bytes together."""
    inside = guaranteed = guaranteed_inside = 0
    widths: list[float] = []
    shown: list[float] = []
    width_bytes = figure_bytes = 0
    for r in rows:
        fs = r["facets"].values()
        ok = all(f["range"] is not None and f["range"][0] <= f["truth"] <= f["range"][1]
                 for f in fs)
        sure = all(f["direct_got"] == f["direct_truth"] for f in fs)
        inside += ok
        guaranteed += sure
        guaranteed_inside += ok and sure
        fig = sum(f["got"] for f in fs)
        width = sum(f["range"][1] - f["range"][0] for f in fs if f["range"] is not None)
        width_bytes += width
        figure_bytes += fig
        if fig > 0:
            widths.append(width / fig)
            if any(f["range"] is not None and f["range"][1] - f["range"][0] > 0.01 * f["got"]
                   for f in fs):
                shown.append(width / fig)
    widths.sort()
    shown.sort()
    n = len(rows)
    return {
        "jobs": n, "inside": inside, "coverage": inside / n if n else 1.0,
        "guaranteed": guaranteed, "guaranteed_inside": guaranteed_inside,
        "median_width": _pick(widths, 0.5), "p90_width": _pick(widths, 0.9),
        "jobs_with_range_shown": len(shown), "median_width_shown": _pick(shown, 0.5),
        "p90_width_shown": _pick(shown, 0.9),
        "width_over_figures": width_bytes / figure_bytes if figure_bytes else 0.0,
    }
