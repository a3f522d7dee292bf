"""The model oracle: how a split does that knows every job's true phases but not the dice.

The ceilings of `bench/accuracy_breakdown.py` make a split perfect, which no rule reading the
collectors' data can do: the simulator draws each 40-second increment's OST among the phase's
OSTs and its size with a jitter of 0.5-1.5, so two jobs' shares of one blind delta vary from
interval to interval around what their phases lead one to expect. This oracle knows more than
any data can tell (each job's phases on the node: span, read and write rates, OSTs; when its
OSTs were blind: the node-wide episodes, and its share of leaked increments) and splits each
blind delta by each candidate's expected blind bytes there, then counts what that split gets
wrong. A target above what it reaches asks a rule to guess the dice. Bench only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple


class ModelPhase(NamedTuple):
    t0: float
    t1: float
    rates: tuple[float, float]  # read, write bytes/s
    osts: frozenset[str]
    leak: float
    index: int  # the phase's index in the oracle's rows


class Model(NamedTuple):
    # (node, uid) -> job -> its phases on that node
    phases: dict[tuple[str, int], dict[int, list[ModelPhase]]]
    # node -> the episodes' spans that include it (every OST increment blind)
    episodes: dict[str, list[tuple[float, float]]]
    n_osts: int


def load_model(path: Path) -> Model:
    """The phases and episodes `simulate(oracle=True)` wrote next to the oracle's rows."""
    phases: dict[tuple[str, int], dict[int, list[ModelPhase]]] = defaultdict(
        lambda: defaultdict(list))
    episodes: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if "model_phase" in row:
            phases[(row["node"], row["uid"])][row["job"]].append(ModelPhase(
                row["t0"], row["t1"], (row["read_rate"], row["write_rate"]),
                frozenset(row["osts"]), row["leak"], row["model_phase"]))
        elif "episode" in row:
            for node in row["nodes"]:
                episodes[node].append(tuple(row["episode"]))
    n_osts = len({o for by_job in phases.values() for ps in by_job.values() for p in ps
                  for o in p.osts})
    return Model(phases, episodes, n_osts)


def blind_seconds(a: float, b: float, spans: list[tuple[float, float]]) -> float:
    """Seconds of (a, b] inside the (non-overlapping or overlapping) spans."""
    cuts = sorted((max(a, s), min(b, e)) for s, e in spans if e > a and s < b)
    total, end = 0.0, a
    for s, e in cuts:
        s = max(s, end)
        if e > s:
            total += e - s
            end = e
    return total


def expected(model: Model, node: str, target: str, uid: int, a: float, b: float,
             facet: int, shown: frozenset[int] | None = None) -> dict[int, float]:
    """Each job's expected blind bytes of `facet` on `target` in (a, b]: per phase, its rate
    on that OST (the rate spread over its OSTs) times the seconds it ran there blind (inside
    an episode every increment; outside, its leaked share). With `shown` (the phases that
    printed bytes by their id on some OST), a phase not in it is taken to use any OST: the
    data never said which."""
    out: dict[int, float] = {}
    spans = model.episodes.get(node, [])
    for job, phases in model.phases.get((node, uid), {}).items():
        amount = 0.0
        for p in phases:
            known = shown is None or p.index in shown
            if (known and target not in p.osts) or p.rates[facet] <= 0:
                continue
            spread = len(p.osts) if known else model.n_osts
            lo, hi = max(a, p.t0), min(b, p.t1)
            if hi <= lo:
                continue
            blind = blind_seconds(lo, hi, spans)
            amount += p.rates[facet] / spread * (blind + p.leak * (hi - lo - blind))
        if amount > 0:
            out[job] = amount
    return out


def model_split(model: Model, node: str, target: str, uid: int, a: float, b: float,
                facet: int, candidates: Any, shown: frozenset[int] | None = None
                ) -> dict[int, float] | None:
    """The oracle's fractions over the rules' candidates, None where it expects nothing
    blind from any of them (the delta came from a fault outside its model)."""
    exp = expected(model, node, target, uid, a, b, facet, shown)
    weights = {j: exp.get(j, 0.0) for j in candidates}
    total = sum(weights.values())
    if total <= 0:
        return None
    return {j: w / total for j, w in weights.items()}
