"""Per-process loss of `%j` in the simulator (the `leaky` scenario): a job whose processes
started outside srun prints `:uid:host` for part of its I/O all its life, next to its own id.
The other scenarios are unchanged by it."""

from __future__ import annotations

import random

from slurm_io.model import IdClass
from slurm_io.simulate.ids import compute_node_id, plan_ids
from slurm_io.simulate.scenario import SCENARIOS

NODES = tuple(f"node{i:03d}" for i in range(1, 33))


def _plan(**kw: float):
    # no node-wide episode inside the times looked at (they start >= 600 s after 0 and the
    # plan is drawn for a day starting at 10**6)
    return plan_ids(random.Random(7), NODES, 1e6, 1e6 + 86400, episodes_per_hour=0.0001, **kw)


def _classes(plan, job: int, node: str) -> list[IdClass]:
    return [compute_node_id(plan, t=100.0 + 40 * k, node=node, job=job, uid=1000, exe="a",
                            kind="OST")[1] for k in range(400)]


def test_a_leaky_job_prints_its_id_and_the_blind_id_side_by_side_all_its_life() -> None:
    plan = _plan(leaky_jobs=1.0, leaky_part=0.5)
    node = next(n for n in NODES if n not in plan.fqdn_nodes | plan.job_only_nodes
                | plan.job_uid_nodes)
    got = _classes(plan, 4242, node)
    missing = got.count(IdClass.JOB_MISSING) / len(got)
    assert 0.4 < missing < 0.6  # about leaky_part of its increments
    assert got.count(IdClass.EXACT) > 0.35 * len(got)  # the rest under its own id
    # spread over its whole life, not one stretch
    assert IdClass.JOB_MISSING in got[:40] and IdClass.JOB_MISSING in got[-40:]


def test_without_leaky_jobs_a_job_loses_its_id_only_in_episodes_and_faults() -> None:
    plan = _plan()
    node = next(n for n in NODES if n not in plan.fqdn_nodes | plan.job_only_nodes
                | plan.job_uid_nodes)
    assert IdClass.JOB_MISSING not in _classes(plan, 4242, node)


def test_the_share_of_leaky_jobs_is_the_plans() -> None:
    plan = _plan(leaky_jobs=0.25, leaky_part=1.0)
    node = next(n for n in NODES if n not in plan.fqdn_nodes | plan.job_only_nodes
                | plan.job_uid_nodes)
    leaky = sum(compute_node_id(plan, t=500.0, node=node, job=j, uid=1000, exe="a",
                                kind="OST")[1] == IdClass.JOB_MISSING for j in range(2000))
    assert 0.2 < leaky / 2000 < 0.3


def test_leaky_draws_nothing_from_the_plan_so_other_scenarios_are_unchanged() -> None:
    assert _plan() == _plan(leaky_jobs=0.0, leaky_part=0.0)
    with_leak = _plan(leaky_jobs=0.3, leaky_part=0.5)
    assert with_leak.episodes == _plan().episodes and with_leak.fqdn_nodes == _plan().fqdn_nodes
    assert SCENARIOS["default"].leaky_jobs == SCENARIOS["dense"].leaky_jobs == 0.0
    assert SCENARIOS["leaky"].leaky_jobs > 0
