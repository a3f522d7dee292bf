"""The model oracle: how a split does that knows every job's true phases but not the dice.

The ceilings of `bench/accuracy_breakdown.py` make a split perfect, which no rule reading the
collectors' data can do: the simulator draws each 40-second increment's OST among the phase's
OSTs and its size with a jitter of 0.5-1.5, so two jobs' shares of one blind delta vary from
interval to interval around what their phases lead one to expect. This oracle knows more than
any data can tell (each job's phases on the node: span, read and write rates, OSTs; when its
OSTs were blind: the node-wide episodes, and its share of leaked increments) and splits each
blind delta by each candidate's expected blind bytes there, then counts what that split gets
wrong. A target above what it reaches asks a rule to guess the dice. Bench only.

Restricted forms (`Known`) replace parts of that knowledge by what the collectors' rows show
of each phase: its OSTs only where it printed bytes by its id on them, its rates as the
bytes it printed by its id tell them, its span as the first and last time it printed
anything by its id. With all three it is an estimate from the data (generous still: it
knows how a job's activity splits into phases, their modes, the episodes and leak shares);
a target above what that reaches is above what a split by the phases the data shows can do.

The no-information bound (`indistinct`, `shared_by_time`) asks the converse: how much of the
placeable error no rule reading the data can avoid. Where several candidates' phases read or
wrote at a data mode's rate and printed nothing by their id but MDT operations, the data
holds nothing of which OSTs they used or how fast (the simulator draws both apart from the
MDT rate and mix, which are those of either way); a rule can only share such a delta among
them by what it knows of them, their seconds in it. Every other split perfect, that is the
best a rule can expect: a target above it is above what the data holds.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

MIB = 1 << 20
DATA_RATE = 100 * MIB  # the simulator's reading and writing modes draw 140-1040 MiB/s, the
# others 20 MiB/s at most (slurm_io.simulate.phases)
EDGE = 20.0  # seconds around a printed span: half the simulator's 40 s between increments


class ModelPhase(NamedTuple):
    t0: float
    t1: float
    rates: tuple[float, float]  # read, write bytes/s
    osts: frozenset[str]
    leak: float
    index: int  # the phase's index in the oracle's rows


class Printed(NamedTuple):
    """What one phase printed under ids naming its job: what the data shows of it."""

    ost_bytes: float
    mdt_ops: float
    first: float  # time of the first and last increment printed by its id, any kind
    last: float
    osts: frozenset[str] = frozenset()  # the OSTs it printed bytes on by its id


class Model(NamedTuple):
    # (node, uid) -> job -> its phases on that node
    phases: dict[tuple[str, int], dict[int, list[ModelPhase]]]
    # node -> the episodes' spans that include it (every OST increment blind)
    episodes: dict[str, list[tuple[float, float]]]
    n_osts: int
    printed: dict[int, Printed]  # phase -> what it printed by its id (absent: nothing)


class Known(NamedTuple):
    """What a restricted oracle knows in place of the truth; None: the truth."""

    osts: frozenset[int] | None = None  # phases whose OSTs it knows; others use any OST
    rates: dict[int, tuple[float, float]] | None = None  # phase -> read, write bytes/s
    spans: dict[int, tuple[float, float]] | None = None  # phase -> span; absent: none
    leak: float | None = None  # every job's share of leaked increments
    # phase -> the OSTs it printed bytes on by its id, taken as all of its OSTs (a phase
    # absent: any OST); with `osts` the phase's true OSTs are known where it printed any
    shown_osts: dict[int, frozenset[str]] | None = None


TRUTH = Known()  # the unrestricted oracle


def load_model(path: Path) -> Model:
    """The phases and episodes `simulate(oracle=True)` wrote next to the oracle's rows."""
    phases: dict[tuple[str, int], dict[int, list[ModelPhase]]] = defaultdict(
        lambda: defaultdict(list))
    episodes: dict[str, list[tuple[float, float]]] = defaultdict(list)
    printed: dict[int, Printed] = {}
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
        elif "phase" in row:
            printed[row["phase"]] = Printed(row["ost_bytes"], row["mdt_ops"],
                                            row.get("first", 0.0), row.get("last", 0.0),
                                            frozenset(row.get("osts", ())))
    n_osts = len({o for by_job in phases.values() for ps in by_job.values() for p in ps
                  for o in p.osts})
    return Model(phases, episodes, n_osts, printed)


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
             facet: int, known: Known = TRUTH) -> dict[int, float]:
    """Each job's expected blind bytes of `facet` on `target` in (a, b]: per phase, its rate
    on that OST (the rate spread over its OSTs) times the seconds it ran there blind (inside
    an episode every increment; outside, its leaked share). `known` restricts what it knows:
    a phase whose OSTs it does not know is taken to use any OST (the data never said which),
    or those it printed bytes on (`shown_osts`), and rates, spans and the leak share are
    taken from it where it gives them."""
    out: dict[int, float] = {}
    spans = model.episodes.get(node, [])
    for job, phases in model.phases.get((node, uid), {}).items():
        amount = 0.0
        for p in phases:
            osts: frozenset[str] | None  # None: any OST
            if known.shown_osts is not None:
                osts = known.shown_osts.get(p.index)
            else:
                osts = p.osts if known.osts is None or p.index in known.osts else None
            rate = (p.rates if known.rates is None else known.rates[p.index])[facet]
            if (osts is not None and target not in osts) or rate <= 0:
                continue
            spread = len(osts) if osts is not None else model.n_osts
            t0, t1 = ((p.t0, p.t1) if known.spans is None
                      else known.spans.get(p.index, (0.0, 0.0)))
            lo, hi = max(a, t0), min(b, t1)
            if hi <= lo:
                continue
            blind = blind_seconds(lo, hi, spans)
            leak = p.leak if known.leak is None else known.leak
            amount += rate / spread * (blind + leak * (hi - lo - blind))
        if amount > 0:
            out[job] = amount
    return out


def from_the_data(model: Model, leak: bool = True) -> Known:
    """What the rows show of each phase (`Model.printed`): its OSTs where it printed bytes
    by its id, its rates as those bytes tell them (`printed_rates`), its span from the first
    to the last increment it printed by its id (± EDGE); without `leak`, every job's leak
    share the scenario's mean (the data does not say which job leaks)."""
    return Known(
        osts=frozenset(i for i, p in model.printed.items() if p.ost_bytes > 0),
        rates=printed_rates(model),
        spans={i: (p.first - EDGE, p.last + EDGE) for i, p in model.printed.items()},
        leak=None if leak else mean_leak(model))


def shown_osts(model: Model) -> dict[int, frozenset[str]]:
    """Each phase's OSTs as the data shows them: those it printed bytes on by its id, not
    all it used (`from_the_data` knows them all where it printed any: a phase striped over
    two OSTs whose id the data shows on one is known on both there, on one here)."""
    return {i: p.osts for i, p in model.printed.items() if p.osts}


def printed_rates(model: Model) -> dict[int, tuple[float, float]]:
    """Each phase's rates as far as the data tells them: the OST bytes it printed by its id
    over the seconds it printed them (its span outside the node's episodes, less its leaked
    share), split between reading and writing as its mode does (the rows say which); a
    phase that printed no bytes by its id gets its mode's mean. The data never shows a
    phase's own draw of 200-800 MiB/s (times 0.7-1.3 per job and node)."""
    out: dict[int, tuple[float, float]] = {}
    for (node, _uid), by_job in model.phases.items():
        episodes = model.episodes.get(node, [])
        for phases in by_job.values():
            for p in phases:
                seconds = (p.t1 - p.t0 - blind_seconds(p.t0, p.t1, episodes)) * (1 - p.leak)
                total = p.rates[0] + p.rates[1]
                got = model.printed.get(p.index)
                if got is not None and got.ost_bytes > 0 and seconds > 0 and total > 0:
                    scale = got.ost_bytes / seconds / total
                    out[p.index] = (p.rates[0] * scale, p.rates[1] * scale)
                else:
                    out[p.index] = mode_mean(p.rates)
    return out


def mode_mean(rates: tuple[float, float]) -> tuple[float, float]:
    """The simulator's mean rates of a phase's mode (slurm_io.simulate.phases): reading or
    writing 500 MiB/s, a metadata storm 0.2 MiB/s each way, small or light I/O about 9 and
    8 MiB/s."""
    read, write = rates
    if read > 0 and write <= 0:
        return (500.0 * MIB, 0.0)
    if write > 0 and read <= 0:
        return (0.0, 500.0 * MIB)
    if read == write == 0.2 * MIB:
        return rates
    return (9.0 * MIB, 8.0 * MIB) if read > 0 else (0.0, 0.0)


def mean_leak(model: Model) -> float:
    """The scenario's leak share, over every job phase's seconds."""
    phases = [p for by_job in model.phases.values() for ps in by_job.values() for p in ps]
    seconds = sum(p.t1 - p.t0 for p in phases)
    return sum(p.leak * (p.t1 - p.t0) for p in phases) / seconds if seconds > 0 else 0.0


def model_split(model: Model, node: str, target: str, uid: int, a: float, b: float,
                facet: int, candidates: Any, known: Known = TRUTH
                ) -> dict[int, float] | None:
    """The oracle's fractions over the rules' candidates, None where it expects nothing
    blind from any of them (the delta came from a fault outside its model)."""
    exp = expected(model, node, target, uid, a, b, facet, known)
    weights = {j: exp.get(j, 0.0) for j in candidates}
    total = sum(weights.values())
    if total <= 0:
        return None
    return {j: w / total for j, w in weights.items()}


def indistinct(model: Model, node: str, uid: int, a: float, b: float,
               candidates: Any) -> dict[int, float]:
    """The candidates the data cannot tell apart in (a, b], each with its seconds there:
    those whose phases meeting it all read or wrote at a data mode's rate (`DATA_RATE`) and
    printed by their id MDT operations and no OST byte. Empty with fewer than two."""
    out: dict[int, float] = {}
    by_job = model.phases.get((node, uid), {})
    for job in candidates:
        meet = [p for p in by_job.get(job, []) if p.t0 < b and p.t1 > a]
        if not meet or any(max(p.rates) < DATA_RATE for p in meet):
            continue
        shown = [model.printed.get(p.index) for p in meet]
        if all(s is not None and s.ost_bytes == 0 and s.mdt_ops > 0 for s in shown):
            out[job] = sum(min(b, p.t1) - max(a, p.t0) for p in meet)
    return out if len(out) >= 2 and sum(out.values()) > 0 else {}


def shared_by_time(true: dict[int, float], group: dict[int, float]) -> dict[int, float]:
    """Each job's bytes as the no-information bound gives them: its true bytes, but inside
    `group` (job -> seconds, from `indistinct`) the group's true bytes by its seconds."""
    out = dict(true)
    together = sum(true.get(j, 0.0) for j in group)
    seconds = sum(group.values())
    for j, s in group.items():
        out[j] = together * s / seconds
    return out
