"""Rule 2 of attribute.evidence: a burst beyond what the candidates' rates explain (issue 21).

A blind delta far above what the candidates' phases (attribute.phases) expect holds I/O none
of their measured rates shows: a burst of a job idle by its id around the blind stretch.
`beyond_rates` holds each candidate with a rate to what it can explain (`explainable`: its
expected amount, or its rate right at the edges of the blind stretch, `edge_rates`, or a
bound of its own, `reach`) and gives the rest to those with none. What bounds it, each
found by a measured delta named in its docstring: `paced_later` (a phase begun after the
delta's start), `busy_elsewhere` (a job whose rows show only the other facet), `loosened`
with `began_near` (a phase shown on the MDT only may explain more, unless a task began
near the delta and may be doing its start-up read), `phase_bounds` (a phase moving the
facet on other OSTs may explain its rate there); and to whom the rest goes first,
`readings.bordering` (a job moving the facet by its id on the delta's OST as the ids went
missing or came back), then `unshown_starts` (a task begun in the stretch whose start-up
read no row showed).

Pure: every function reads its arguments only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.observed import (
    CAP_SLACK,
    MIN_OBSERVED,
    Evidence,
    Interval,
    stretch,
    target_kind,
)
from slurm_io.attribute.phases import Meeting, can_move, mdt_only

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow


def edge_rates(d: DeltaRow, i: int, weights: dict[int, float], over: dict[int, float],
               evidence: Evidence, blind: Sequence[Interval]) -> dict[int, float]:
    """What each candidate's highest rate right at the edges of the blind stretch around the
    delta predicts for it (a job's rate is smooth within a phase: one that was writing when
    the ids went missing, or again when they came back, was writing in between; its rate
    over a wider window dilutes that phase with the compute around it). Rule 2's reading,
    for the candidates of `weights`."""
    if d.node is None:
        return {}
    a, b = d.ts_start, d.ts_end
    for h0, h1 in blind:
        if h0 <= a and b <= h1:
            a, b = h0, h1
            break
    kind = target_kind(d.target)
    out = {}
    for j in weights:
        peak = evidence.peak(d.node, j, kind, i, a - 2 * MIN_OBSERVED, b + 2 * MIN_OBSERVED,
                             sole=False)
        if peak:
            out[j] = peak * over[j]
    return out


def paced_later(d: DeltaRow, found: Meeting | None, paced: Collection[int],
                reach: Collection[int]) -> frozenset[int]:
    """The paced candidates (`paced`) whose phases meeting `d` all began at or after its
    start, not having begun inside it themselves (`reach`): rule 2 holds them to their pace,
    which reads the delta's own interval, and not to their rate at the edges of the blind
    stretch, which is that of a phase not yet going when the delta began (leaky seed 2,
    node006: a job opening a few files during a 67.6 GiB blind write, paced at 0.8 GB, was
    given 45 GiB by the rate of the phase it began as the ids came back)."""
    if not found:
        return frozenset()
    return frozenset(j for j, phases in found.items() if j in paced and j not in reach
                     and all(p.t0 >= d.ts_start for p, _ in phases))


def busy_elsewhere(amount: float, found: Meeting | None, none: frozenset[int],
                   excluded: Collection[int]) -> frozenset[int]:
    """The candidates rule 2 does not give a burst no rate shows: those whose phases meeting
    the delta show OST bytes by their id and none of its facet (`none`: moving_none, a job
    reading then was not writing), where the phases of the other candidates (not in
    `excluded`) can have moved the whole `amount` at the rates their rows show, on all
    their OSTs together, over their overlaps (leaky seed 3, node015: a 22.8 GiB blind
    write went to a task reading then, beside a job writing 451 MB/s on another OST, whose
    processes left part of its writes without its id). Where they cannot (dense seed 1,
    node005: a 29.7 GiB read by a job writing on another OST, beside phases reading at
    7 MB/s), the burst goes to the candidates with no rate as before, whatever their rows
    show."""
    if not none or not found:
        return frozenset()
    can = can_move(found, [j for j in found if j not in none and j not in excluded])
    return none if CAP_SLACK * can >= amount else frozenset()


def phase_bounds(found: Meeting | None, later: Collection[int], bounds: dict[int, float]
                 ) -> dict[int, float]:
    """`bounds` (rule 2's `reach`, `loosened`) with each candidate whose phases meeting the
    delta move its facet at a known rate lifted to that rate x their overlap, on whichever
    OST: a phase its rows show moving the facet on other OSTs can have moved it on the
    delta's as well, by processes that print no id or a stripe its rows did not show
    (leaky seed 3, node004: a 56.2 GiB blind write on OST0001, beside a job writing
    448 MB/s on OST0004, went 0.89 to a job with no row near it once rule 0 no longer gave
    it to a job reading there, phases.not_busy). Not for a candidate held to its pace
    (`later`: paced_later, its phase not yet going when the delta began); not where the
    phase of another candidate, going as the delta began, is shown on the MDT only: a job
    in an I/O phase at a rate no row shows is the burst's likelier owner (dense seed 6,
    node021: a 40.4 GiB blind write, whole to such a job before, went 0.17 to a job writing
    63 MB/s on OST0006)."""
    if not found or mdt_only(found) - frozenset(later):
        return bounds
    out = dict(bounds)
    for j in found.keys() - later:
        can = can_move(found, [j])
        if can > out.get(j, 0.0):
            out[j] = can
    return out


FRESH = MIN_OBSERVED / 2  # rule 2: a task begun up to a collector period before a delta
# may be doing its start-up read in it


def loosened(amount: float, expected: dict[int, float], edge: dict[int, float],
             reach: dict[int, float], loose: dict[int, float], paced: dict[int, float],
             fresh: bool) -> dict[int, float]:
    """The bounds rule 2 gives `beyond_rates` as `reach`: each paced candidate whose phase
    meeting the delta is shown on the MDT only may explain CAP_SLACK x its loose pace
    (`loose_paces`, as rule 3 holds it), where together the candidates' rates so loosened
    explain the whole `amount` and no candidate began less than FRESH s before the delta's
    start or after it (`fresh`: began_near); else `reach` as it is. A burst is given to a
    job no rate shows only where the rates cannot explain it (dense seed 3, node027: a
    70.8 GiB blind write of a job whose write phase showed on the MDT only, paced at
    18.5 GiB, went half to a job ending 41 s into it); where they cannot, or where a
    task begun then may be doing its start-up read (dense seed 2, node029: a 55 GiB read,
    the task's, begun 22 s into it), the tighter bound stands."""
    if fresh:
        return reach
    lifted = dict(reach)
    for j, v in loose.items():
        if v > paced.get(j, v) and expected.get(j, 0.0) > 0:
            lifted[j] = max(lifted.get(j, 0.0), CAP_SLACK * v)
    return lifted if amount <= sum(explainable(expected, edge, lifted).values()) else reach


def began_near(d: DeltaRow, starts: Collection[float]) -> bool:
    """Whether a candidate began (its run's start in `starts`) less than FRESH s before
    `d`'s start, or after it: its start-up read may be in the delta (leaky seed 5, node032:
    an 85 GiB read of two tasks begun 88 and 91 s before it)."""
    return any(s0 >= d.ts_start - FRESH for s0 in starts)


def unshown_starts(d: DeltaRow, runs: dict[int, Interval], blind: Sequence[Interval],
                   evidence: Evidence) -> frozenset[int]:
    """The candidates (`runs`: each one's run) that began inside the blind stretch around
    `d`, before its end, and showed no row by their id between their start and its: a
    task's start-up read, the commonest phase to begin while the ids are missing, is yet
    to be seen of them, where a job that began before the stretch showed its start-up in
    sight and is likelier computing between its phases. Rule 2 gives a read burst no rate
    shows to these first (dense seed 3, node007: a 75.4 GiB blind read went a third to a
    job whose read phase had shown by its id and ended 160 s before it, beside a task begun
    53 s before it, printing nothing, its owner). A task begun inside the delta's read is
    one of them: holding only the earlier ones cost dense seed 7 a 65.1 GiB read of a task
    begun 24 s into it."""
    if d.node is None:
        return frozenset()
    lo = stretch(d.ts_start, d.ts_end, blind)[0]
    return frozenset(j for j, (s0, _) in runs.items() if lo <= s0 < d.ts_end
                     and not evidence.seen(d.node, j, None, s0, d.ts_start))


RESUMED_SHARE = 0.25  # what a job moved right before or after the delta, of the rest it takes


UNMEASURED = frozenset({-1})  # marker: the weights are time overlaps, not measured rates


def explainable(expected: dict[int, float], edge: dict[int, float],
                reach: dict[int, float] | None) -> dict[int, float]:
    """What rule 2 lets each candidate explain: CAP_SLACK x its expected amount or its
    `edge` rate's, or its `reach` when higher; nothing for a candidate with no rate (0
    expected), which only a burst can make busy. One measure for `beyond_rates` and for
    `loosened`, which asks whether the lifted bounds explain the delta."""
    return {j: max(CAP_SLACK * max(w, edge.get(j, 0.0)), (reach or {}).get(j, 0.0))
            if w > 0 else 0.0 for j, w in expected.items()}


def beyond_rates(amount: float, expected: dict[int, float], excluded: frozenset[int],
                 over: dict[int, float], edge: dict[int, float], surprise: dict[int, float],
                 reach: dict[int, float] | None = None, first: Collection[int] = (),
                 back: dict[int, float] | None = None) -> dict[int, float]:
    """Weights once each candidate's rate has been held to what it can explain.

    `expected` is what each candidate's own rate around the delta predicts for it. A delta
    far above what the rates predict holds I/O none of the measured rates shows: a burst
    of a job that was idle (by its id) around the blind stretch. Each candidate with a rate
    is given at most CAP_SLACK x its expected amount (or what its rate at the edges of the
    blind stretch predicts, `edge`, when higher), or its `reach` (`reach_of`: a bound, not
    doubled) when higher still; the rest goes to the candidates that showed no rate there
    (and were not ruled out by rule 0), in proportion to how much their activity on the
    other target kind rose during the delta (`surprise`), else by time overlap; to those
    of them in `first` alone (unshown_starts: their start-up read unseen), by time overlap,
    where there are some. Before all of that, the rest goes to the candidates in `back`
    (readings.bordering: what each moved on the delta's OST right before and right after
    it; readings.cut_short's rate x overlap of those whose read there the stretch cut
    short) that moved at least RESUMED_SHARE of it there, in proportion, where some
    candidate did not: those, rate or none, were moving it as the ids went missing or came
    back.
    Where every candidate has a rate, the weights stay as they are.
    """
    if UNMEASURED & excluded or amount <= 0:
        return expected
    total = sum(expected.values())
    if total <= 0 or amount <= CAP_SLACK * total:
        return expected
    can = explainable(expected, edge, reach)
    idle = [j for j, w in can.items() if w <= 0 and j not in excluded]
    if not idle or amount <= sum(can.values()):
        return expected
    rest = amount - sum(can.values())
    out = dict(can)
    going = {j: v for j, v in (back or {}).items()
             if j in out and j not in excluded and v >= RESUMED_SHARE * rest}
    if going and len(going) < len(out):
        moved = sum(going.values())
        for j, v in going.items():
            out[j] += rest * v / moved
        return out
    fresh = {j: over[j] for j in idle if j in first}
    hint = {j: surprise.get(j, 0.0) for j in idle}
    basis = (fresh if sum(fresh.values()) > 0 and len(fresh) < len(idle) else
             hint if sum(hint.values()) > 0 else {j: over[j] for j in idle})
    norm = sum(basis.values())
    for j, w in basis.items():
        out[j] += rest * w / norm
    return out
