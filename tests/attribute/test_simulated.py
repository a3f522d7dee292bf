"""Attribution on a simulated cluster, checked against the simulator's ground truth."""

from __future__ import annotations

import json

import psycopg
import pytest

from slurm_io.attribute.accuracy import compare
from slurm_io.simulate import simulate
from tests.attribute.simulated import load

START = 1_795_000_000.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("attr") / "cluster"
    simulate(out, seed=11, start=START, hours=3, n_nodes=24, n_oss=2, jobs_per_hour=14)
    return out


@pytest.fixture
def loaded(cluster, db_dsn, tmp_path):
    return load(cluster, db_dsn, tmp_path)


def test_direct_attribution_is_exact_and_recovery_close(cluster, loaded):
    with psycopg.connect(loaded) as conn:
        r = compare(conn, cluster / "truth.json", now=START + 86400)
    assert r["jobs"] >= 30
    assert r["direct_exact_jobs"] == r["jobs"]
    assert r["recovered_truth_bytes"] > 0
    # pro-rata recovery: within 10 % of the truth over the cluster
    assert r["recovered_bytes"] == pytest.approx(r["recovered_truth_bytes"], rel=0.10)
    assert r["attributed_bytes"] == pytest.approx(r["attributable_bytes"], rel=0.05)


def test_load_split_adds_up_to_the_total(cluster, loaded):
    from slurm_io.report.unattributed import split

    with psycopg.connect(loaded) as conn:
        a = split(conn, START - 3600, START + 86400, now=START + 86400)
    for k in ("read_bytes", "write_bytes", "metadata_ops"):
        parts = sum(a.group(g)[k] for g in ("jobs", "recovered", "unclaimed_job_missing",
                                            "unknown_job_ids", "nobody"))
        parts += sum(v[k] for v in a.by_user.values())
        parts += sum(v[k] for v in a.by_host.values())
        assert abs(parts - a.total[k]) <= 2  # rounding of pro-rata shares
    assert a.recovered["read_bytes"] + a.recovered["write_bytes"] > 0
    assert a.by_user


def test_show_json_of_a_recovered_and_an_ambiguous_job(cluster, loaded):
    from click.testing import CliRunner

    from slurm_io.cli import main

    truth = json.loads((cluster / "truth.json").read_text())["jobs"]
    with psycopg.connect(loaded) as conn:
        rows = compare(conn, cluster / "truth.json", now=START + 86400)["rows"]
    rec = max(rows, key=lambda r: r["recovered_got"])
    out = CliRunner().invoke(main, ["--dsn", loaded, rec["job"], "--json"])
    assert out.exit_code == 0, out.output
    (j,) = json.loads(out.output)
    assert j["jobid"] and j["user"] == truth[rec["job"]]["user"]
    assert j["nodes"] == sorted(truth[rec["job"]]["nodes"])
    assert j["recovered"].get("read_bytes", 0) + j["recovered"].get("write_bytes", 0) > 0
    for key in ("totals", "quality", "ambiguous", "start", "end"):
        assert key in j
    amb = [r for r in rows if r["ambiguous"] > 0]
    assert amb, "the simulator plants two jobs of one user on one node"


def test_the_truth_lies_inside_every_range_the_rule_guarantees(cluster, loaded):
    """attribute.ranges: a job's own deltas are certain, each `:uid:host` delta it shared
    lies between none and all of it. So wherever the job's own deltas were attributed
    exactly (the direct part, per facet), its recoverable truth lies inside the range of
    its read and of its written bytes: coverage is at least the share of those jobs."""
    from slurm_io.attribute.accuracy import range_summary

    with psycopg.connect(loaded) as conn:
        rows = compare(conn, cluster / "truth.json", now=START + 86400)["rows"]
    g = range_summary(rows)
    assert g["guaranteed"] >= 0.9 * g["jobs"] and g["jobs"] >= 30
    assert g["guaranteed_inside"] == g["guaranteed"]
    assert g["coverage"] >= g["guaranteed"] / g["jobs"]
    shared = [r for r in rows if r["ambiguous"] > 0]
    assert shared, "the simulator plants two jobs of one user on one node"
    for r in shared:  # where a job shared a delta its range is a real interval
        lo, hi = r["facets"]["read_bytes"]["range"]
        wlo, whi = r["facets"]["write_bytes"]["range"]
        assert hi - lo + whi - wlo > 0
    for r in rows:  # and the figure always lies inside its own range
        for f in r["facets"].values():
            assert f["range"][0] <= f["got"] <= f["range"][1]
