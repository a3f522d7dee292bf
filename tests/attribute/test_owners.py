"""Whose is a delta naming a raw job id that several rows share (attribute.owners, pure)."""

from __future__ import annotations

import pytest

from slurm_io.attribute.owners import SLACK, Claimant, owner

NOW = 100_000.0
A1 = Claimant(1, "alpha", 1000.0, 2000.0)        # job 7 on cluster alpha
B1 = Claimant(2, "beta", 1000.0, 2000.0)         # job 7 on cluster beta, same time
B_LATE = Claimant(3, "beta", 50_000.0, 60_000.0)  # job 7 on beta, much later
R0 = Claimant(10, "alpha", 1000.0, 2000.0)       # a requeued job's first run ...
R1 = Claimant(11, "alpha", 2100.0, 3000.0)       # ... and its second
RUNNING = Claimant(12, "alpha", 2100.0, None)
NODES = {"a01": frozenset({"alpha"}), "b01": frozenset({"beta"}),
         "shared": frozenset({"alpha", "beta"})}

CASES = [
    # (what, node, ts_start, ts_end, claimants, expected key)
    ("one row: the id says so", None, 1100, 1200, [A1], 1),
    ("one row, node of its cluster", "a01", 1100, 1200, [A1], 1),
    ("one row, node unknown to every cluster", "x99", 1100, 1200, [A1], 1),
    ("one row, node only another cluster has: not this job's", "b01", 1100, 1200, [A1], None),
    ("two clusters, node of alpha", "a01", 1100, 1200, [A1, B1], 1),
    ("two clusters, node of beta", "b01", 1100, 1200, [A1, B1], 2),
    ("two clusters at once, no host: nobody's", None, 1100, 1200, [A1, B1], None),
    ("two clusters at once, node both have: nobody's", "shared", 1100, 1200, [A1, B1], None),
    ("two clusters, no host, only alpha's ran then", None, 1100, 1200, [A1, B_LATE], 1),
    ("two clusters, no host, only beta's ran then", None, 55_000, 55_100, [A1, B_LATE], 3),
    ("read just after the end (collector lag)", None, 2000, 2000 + SLACK - 1, [A1, B_LATE], 1),
    ("no host, nobody ran then", None, 30_000, 30_100, [A1, B_LATE], None),
    ("requeue: first run's interval", "a01", 1100, 1200, [R0, R1], 10),
    ("requeue: second run's interval", "a01", 2200, 2300, [R0, R1], 11),
    ("requeue: straddling, more in the second", None, 1950, 2300, [R0, R1], 11),
    ("requeue: between the runs, read after the first", None, 2010, 2050, [R0, R1], 10),
    ("requeue: before any run", None, 500, 600, [R0, R1], 10),
    ("requeue: second run still running", None, 5000, 5100, [R0, RUNNING], 12),
    ("requeue on beta, node of alpha", "a01", 2200, 2300, [R0, R1, B1], 11),
]


@pytest.mark.parametrize(("what", "node", "a", "b", "claimants", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_a_delta_goes_to_the_cluster_of_its_node_and_the_run_of_its_time(
        what, node, a, b, claimants, expected):
    assert owner(node, a, b, claimants, NODES, NOW) == expected, what


def test_the_order_of_the_claimants_does_not_matter():
    for *_, node, a, b, claimants, expected in [(c[0], *c[1:]) for c in CASES]:
        assert owner(node, a, b, list(reversed(claimants)), NODES, NOW) == expected
