"""Splitting a `:uid:host` delta between the jobs of one user on one node, from evidence.

When two or more jobs of a uid run on a node, a delta of the node's `:uid:host` entry could be
any of theirs. Time overlap alone gives each the same rate, which is wrong whenever the jobs
differ (a streaming job next to a post-processing task of the same user gets the same share).
What the data does say is what each job did by its own id on that node just before and just
after the blind stretch: the collectors keep reading the jobs' own entries whenever the id is
intact. The rule, per delta and per facet (read bytes, write bytes, other operations):

0. When some candidates did I/O by their id on that node during the delta's interval (on
   either target kind: a job in an I/O phase opens and closes files on the MDT while the
   OSTs are blind) and others did none, the delta goes to the busy. That a candidate
   printed its id on the delta's own kind then does not rule it out: its other processes
   may have lost theirs (ranks started outside srun), and a node-wide stretch of missing
   ids that begins or ends inside the interval shows its owner printing too. Nor is a job
   idle whose own id moved the facet on the delta's OST until the delta began, or until
   its id stopped moving up to NEAR before it with no task begun since (servers read at
   different moments: readings.busy_at_edge); nor busy one whose phase moves only the
   other facet while another's phase moves this one (phases.not_busy).
1. Window: the intervals around the delta, [a - W, b + W], minus every stretch in which the
   uid's activity on that node and target kind was itself blind (its `:uid:host` deltas),
   for the first W of WINDOWS at which every candidate was observed >= MIN_OBSERVED seconds
   (if one never is, because it ran almost only while blind, there is no evidence).
   Rows are aligned by time (their interval's overlap with the window), not by read.
2. A candidate's rate is what its own rows on that node show in the window, per second of
   its run that the window observed: first on the delta's own target, else on any target of
   the same kind (MDT or OST), else on the same kind over the widest window. A candidate
   observed doing nothing there has rate 0: that is evidence too.
   Two readings of the delta's own interval come before the rates around it, where they
   say more (an OST delta's bytes only):
   - pace: a candidate whose OSTs were blind then (no OST row by its id in the interval)
     but whose MDT was not is expected to have moved its MDT operations during the delta
     times the bytes its I/O carried per operation nearby (blind stretches taken out);
     an I/O phase that falls wholly in a stretch of blind OSTs still opens files on an
     MDT that is not blind, while its rates around show only the compute next to it;
     not where the candidate's phases meeting the delta show OST bytes and none of the
     facet (phases.moving_none: reading then, it was not writing); where its phase begun
     in the delta shows the delta's OST at a known rate, the higher of the two
     (phases.rated_here: a task just begun opened its files, moved little yet);
   - beside: what a candidate moved by its own id on the delta's own target in the
     delta's read interval (ids lost mid-interval, the outage's long interval, processes
     that never had the id) is at least its expected part.
   - continuing: a candidate whose own id moved the facet on the delta's own target in the
     read right after the delta, in a visible sliver of the blind stretch around it, is
     expected at least its rate in that row (any length) over the delta: a phase still
     going when the ids came back was going during it (the ±10 min rate dilutes it); so
     is one that ended inside the stretch after the delta, its last OST row by its id
     before it on the delta's own target and none since (readings.ended_blind); one whose
     read there was cut short by the ids going missing, at its rate (readings.cut_short).
   Before all of these, the candidates' phases (attribute.phases, issue 21): where one of
   them has a phase with a known rate meeting a blind OST delta (a run of its own rows,
   bridged over the blind stretch where its rows on both sides, its MDT rows inside, or
   its start say it was active; its rate and OSTs from its OST rows near the stretch) and
   none a phase shown on the MDT only, each is expected rate / its OSTs x the overlap
   of its phase with the delta (0 on an OST it did not move bytes on), at least its
   continuing rate; the rates around it take over elsewhere. The rates around a blind
   stretch average a phase with the compute next to it and with time they cannot see.
   Where no candidate's phase shows the delta's OST, what the OSTs each one's phase shows
   moved in the same read (blind or by its id) weighs it, and rule 0 counts busy a
   candidate whose OSTs moved a quarter of the delta so (attribute.striped: rule 10, a
   phase striped over OSTs its rows showed in part).
3. Weight = rate x the candidate's overlap with the delta's interval (its expected amount);
   the delta is divided by weight (all of it: see split()). A delta above twice what the
   weights predict holds a burst no rate shows: beyond_rates() (attribute.bursts) gives it to
   the candidates idle around it, after each candidate with a rate has what it can explain; a
   job that began inside the delta's read interval can explain up to its phase's rate (on all
   its OSTs together, from its rows after) x its overlap, on whichever OST (phases.reach_of: a
   task begun while the ids were missing shows only the OSTs it went on using); a paced
   candidate whose phases began at or after the delta's start, up to twice its pace only
   (bursts.paced_later: its edge rate is a later phase's); no edge rate for a candidate whose
   phases there moved none of the delta's facet (moving none: the edge rows' bytes are of the
   other facet); a paced candidate whose phase is shown on the MDT only, up to its loose pace
   (as in step 4) where so the rates explain the whole delta and no task began a collector
   period before it or later (bursts.loosened: the burst is a job's with no rate only where
   the rates cannot explain it, or a new task's start-up read); not to a candidate whose phase
   there moved none of the delta's facet where the others' phases can have moved half of it
   (bursts.busy_elsewhere); a candidate whose phase moves the facet on other OSTs can explain
   up to its rate x its overlap (bursts.phase_bounds). The rest goes first to the candidates
   that moved a quarter of it on the delta's OST by their id in the read right before or
   right after, rate or none (readings.bordering), then, of a read, to the idle begun inside
   the blind stretch that showed no row by their id since (bursts.unshown_starts). Where a
   candidate was never observed (its run lies wholly in blind time) or no candidate moved
   that facet in the window, a rise of the candidates' activity on the other target kind
   during the delta divides it (readings.surprise; where every one rose, by time overlap:
   readings.rise_weights; one that rose with a pace keeps at most it:
   readings.paced_risers), else time overlap. Where no candidate's phase shows the delta's
   OST, the OST's blind bytes read after read, fitted on the candidates' MDT operations read
   after read, divide it where the fit explains them (attribute.mdt_course: rule 11).
4. capped() (attribute.caps): no candidate keeps more than CAP_SLACK x its highest rate
   by its own id within an hour (its sole deltas, the `:uid:host` deltas no other job of
   the uid can have made, count as its own rows: attribute.core.sole_deltas), or its
   pace (LOOSE_PACE x it for a phase shown on the MDT only: phases.loose_paces), or what
   its phase is expected to move in the delta (attribute.phases), or its rate in its
   current phase on the delta's own target when higher (`phases`: its rows in the visible
   slivers of the blind stretch, any length), or, when higher, all that its reach (rule 3)
   allows a job begun inside the read interval. Not the one candidate whose phase
   meeting the delta is shown on the MDT only and has no pace (phases.unbounded): its
   peaks are its other phases'.
   What that takes off never goes to a candidate rule 0 ruled out with no row by its id
   near the interval while a busy one moved data on the delta's kind (`unseen`): its cap,
   having no peak, is infinite (a busy job was held to a sixth of a 71 GiB write it owned).
5. attribute.leaks: where the node's reads around the delta show a candidate whose
   processes print no id (its own bytes on an OST come with `:uid:host` bytes there, read
   after read), its ratio x its own bytes in the delta come first; the rest goes as above.
   In an outage's long read, what the candidates printed on the delta's OST in that read
   divides the delta first (leaks.in_long_read): ids lost inside it went for all at once.

Every function here is pure; attribute.core calls them and records which rule gave what
(split through attribute.sole_owner: rule 9, crumbs next to a clear owner go to the others).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.attribute.around import rates_around
from slurm_io.attribute.bursts import UNMEASURED as _UNMEASURED
from slurm_io.attribute.bursts import (
    began_near,
    beyond_rates,
    busy_elsewhere,
    edge_rates,
    loosened,
    paced_later,
    phase_bounds,
    unshown_starts,
)
from slurm_io.attribute.caps import capped
from slurm_io.attribute.joint import filled
from slurm_io.attribute.leaks import NodeBlind, in_long_read, leaks_first
from slurm_io.attribute.mdt_course import by_operations
from slurm_io.attribute.observed import (  # re-exported: the rule's vocabulary
    CAP_SLACK,
    FACETS,
    MIN_OBSERVED,
    WINDOWS,
    Evidence,
    Interval,
    Row,
    effective,
    facet,
    measures,
    merge,
    overlap,
    run_of,
    stretch,
    subtract,
    target_kind,
)
from slurm_io.attribute.phases import (
    Meeting,
    expected_of,
    loose_paces,
    meeting,
    moving_none,
    not_busy,
    rated_here,
    reach_of,
    unbounded,
)
from slurm_io.attribute.readings import (  # re-exported too
    beside,
    bordering,
    busy_at_edge,
    continuing,
    cut_short,
    ended_blind,
    paced_amounts,
    paced_risers,
    phases,
    rise_weights,
    sized_weights,
    surprise,
    unseen,
)
from slurm_io.attribute.striped import striped, striping

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow
    from slurm_io.jobs.info import JobWindow

SINGLE, EVIDENCE, TIME = "single", "evidence", "time"

__all__ = ["CAP_SLACK", "EVIDENCE", "FACETS", "MIN_OBSERVED", "SINGLE", "TIME", "WINDOWS",
           "Evidence", "Interval", "Row", "Split", "beside", "beyond_rates", "capped", "continuing",
           "effective", "facet", "measures", "merge", "overlap", "paced_amounts", "phases",
           "run_of", "split", "stretch", "subtract", "target_kind", "unseen"]

class Split(NamedTuple):
    fractions: dict[int, float]  # job -> part of the facet it gets (their sum <= 1)
    rule: str  # SINGLE (one candidate), EVIDENCE, or TIME (no usable evidence)


def split(d: DeltaRow, i: int, candidates: Sequence[JobWindow], evidence: Evidence,
          blind: Sequence[Interval], now: float, leaks: NodeBlind | None = None,
          others: Sequence[Interval] = ()) -> Split:
    """How facet `i` of `:uid:host` delta `d` divides among `candidates` (jobs of the uid on
    d's node). `blind`: sorted disjoint stretches in which the uid's activity of d's kind on
    that node went to `:uid:host` entries (d's own interval included or not). `leaks`: the
    uid's blind OST reads on the node; `others`: the runs of its other jobs there (the
    candidates that do not meet the delta count as such too)."""
    runs = {c.job: run_of(c, now) for c in candidates}
    active: list[JobWindow] = []
    for created in (True, False):
        a, b = effective(d, created)
        length = b - a
        if length <= 0:  # an instant: the jobs running then, each as if for a second
            active = [c for c in candidates if runs[c.job][0] <= b and runs[c.job][1] >= a]
            over = {c.job: 1.0 for c in active}
        else:
            over = {j: overlap(a, b, *r) for j, r in runs.items()}
            active = [c for c in candidates if over[c.job] > 0]
        if len(active) < 2:
            break
    # A compute node runs a user's processes only inside their jobs (pam_slurm_adopt): the
    # part of the interval no job of the uid covers is a job's start-up or wind-down, or no
    # I/O at all; so the jobs that overlap the interval share the whole delta.
    part = 1.0
    if not active:
        return Split({}, SINGLE)
    if len(active) == 1:
        return Split({active[0].job: part}, SINGLE)
    # read once for rules 0, 1 and 3: who did I/O by id then; rates in current phases
    seen = frozenset(c.job for c in active if d.node is not None
                     and evidence.seen(d.node, c.job, None, d.ts_start, d.ts_end))
    current = phases(d, i, active, evidence, blind)
    going = continuing(d, i, active, evidence, current)  # rules 0 and 1: still going after
    seen |= busy_at_edge(d, i, active, evidence, seen, going)  # rule 0: servers apart
    jobs = [c.job for c in active]
    met = meeting(d, i, active, runs, evidence, blind)  # each one's phase (rules 1, 3)
    none = moving_none(met)  # a phase that shows reading moves no writes: no pace for it
    paced = paced_amounts(d, i, [c for c in active if c.job not in none], evidence, blind)
    phased = expected_of(d, met, jobs)
    reach = reach_of(d, met, runs)  # rules 2 and 3: what a job begun inside it can explain
    free = unbounded(met, paced)  # rule 3: a phase shown on the MDT only is not held to peaks
    loose = loose_paces(met, paced)  # nor its pace, learnt from other phases, closely
    others = [*others, *(runs[c.job] for c in candidates if c not in active)]
    shown = met  # as the rows show them (rule 2: busy_elsewhere, phase_bounds)
    met = filled(d, i, met, runs, leaks, blind, others)  # MDT-only phases: the OST's course
    stripe = striped(d, i, met, leaks, jobs, evidence, blind)  # rule 10: an OST none shows
    amount = measures(d.counters)[i]
    ruling = seen - not_busy(met, seen, none, amount) | striping(d, i, stripe)  # rule 0's busy
    ended = ended_blind(d, runs, blind, current, going, evidence)  # rule 1: no read after
    cut = cut_short(d, i, active, runs, blind, current, going, evidence)  # rules 1, 3: nor phase
    found = _evidence_weights(d, i, active, runs, over, evidence, blind, paced, ruling,
                              going, met, stripe, ended, cut)
    rule = EVIDENCE
    if found is None or _UNMEASURED & found[1]:
        # no rate tells them apart: a rise of their activity on the other kind, else time
        ruled = found[1] - _UNMEASURED if found is not None else frozenset()
        rise = rise_weights(d, surprise(d, active, evidence, ruled),
                            [c.job for c in active if c.job not in ruled])
        if sum(rise.values()) > 0:  # held to the paces of those that rose (paced_risers)
            weights = paced_risers(amount, {c.job: rise.get(c.job, 0.0) * over[c.job]
                                            for c in active}, loose)
        elif found is not None:
            weights = found[0]
        else:
            weights, rule = {c.job: over[c.job] for c in active}, TIME
    else:
        weights, excluded = found
        if amount > CAP_SLACK * sum(weights.values()) > 0:
            later = frozenset() if phased else paced_later(d, met, paced, reach)
            edged = {j: w for j, w in weights.items() if j not in later and j not in none}
            edge = edge_rates(d, i, edged, over, evidence, blind)
            near = began_near(d, [runs[c.job][0] for c in active])
            bounds = phase_bounds(shown, later,
                                  loosened(amount, weights, edge, reach, loose, paced, near))
            busy = busy_elsewhere(amount, shown, none, excluded)
            starts = unshown_starts(d, runs, blind, evidence) if i == 0 else ()
            weights = beyond_rates(amount, weights, excluded | busy, over, edge,
                                   surprise(d, active, evidence, excluded), bounds, starts,
                                   {**{j: r * over[j] for j, r in cut.items()},
                                    **bordering(d, i, weights, evidence)})
    fitted = by_operations(d, i, weights, met, evidence, leaks, blind, others)  # rule 11
    if fitted is not None:
        weights = fitted
    if i < 2 and d.node is not None:
        ruled_out = found[1] if found is not None else frozenset()
        sized = sized_weights(d, i, weights, evidence, over, ruled_out)
        if sized is not None:
            weights, rule = sized, EVIDENCE
    weights = in_long_read(d, i, jobs, evidence) or weights  # rule 8 (attribute.leaks)
    total = sum(weights.values())
    fractions = {j: part * w / total for j, w in weights.items()}
    # caps compare rates over read intervals, as the peaks are measured
    over_read = {c.job: overlap(d.ts_start, d.ts_end, *runs[c.job]) for c in active}
    lift = {j: max(loose.get(j, 0.0), phased.get(j, 0.0)) for j in {*loose, *phased}}
    out = capped(d, i, fractions, over_read, evidence, lift, current,
                 unseen(d, active, evidence, seen), reach, free)
    if rule == TIME and any(abs(out[j] - fractions[j]) > 1e-9 for j in out):
        rule = EVIDENCE  # the peaks moved part of it: that is evidence too
    first = leaks_first(d, i, jobs, leaks, evidence, out)
    if first is not None:  # a job whose processes print no id did it (attribute.leaks)
        out, rule = first, EVIDENCE
    return Split(out, rule)


Weights = tuple[dict[int, float], frozenset[int]]  # expected amounts; jobs ruled out


def _evidence_weights(d: DeltaRow, i: int, active: Sequence[JobWindow],
                      runs: dict[int, Interval], over: dict[int, float], evidence: Evidence,
                      blind: Sequence[Interval], paced: dict[int, float],
                      seen: frozenset[int], going: dict[int, float],
                      met: Meeting | None, stripe: dict[int, float],
                      ended: dict[int, float], cut: dict[int, float]) -> Weights | None:
    """Each candidate's expected amount of facet `i` (its rate x its overlap), and the
    candidates rule 0 rules out (not in `seen`, who did I/O by their id in the read
    interval); None where there is no evidence. `going`: readings.continuing of all the
    candidates (each one's entry reads its own rows only, so rule 0's subset of busy ones
    reuses it); `met`: the candidates' phases meeting the delta (attribute.phases.meeting);
    `stripe`: rule 10's weights (attribute.striped), used where those phases expect nothing;
    `ended` and `cut`: readings.ended_blind and cut_short, floors under the rates as
    `going` is; `cut` under the phases' too, where they expect nothing."""
    if d.node is None:
        return None
    busy = [c for c in active if c.job in seen]
    if busy and len(busy) < len(active):
        # the others did no I/O at all by their id then (on the other kind, not blind)
        idle = [c for c in active if c not in busy]
        inner = _evidence_weights(d, i, busy, runs, over, evidence, blind, paced, seen,
                                  going, met, stripe, ended, cut)
        return _ruled_out(idle, busy, inner, over)
    going = {c.job: going[c.job] for c in active if c.job in going}
    phased = expected_of(d, met, [c.job for c in active])
    if not phased and sum(stripe.get(c.job, 0.0) for c in active) > 0:  # rule 10
        phased = {c.job: stripe.get(c.job, 0.0) for c in active}
    if phased:  # the phases the candidates' own rows show say what each moved in it
        cut = {j: r for j, r in cut.items() if phased.get(j, 0.0) <= 0}  # where they expect 0
        return {j: max(v, max(going.get(j, 0.0), cut.get(j, 0.0)) * over[j])
                for j, v in phased.items()}, frozenset()
    rates = rates_around(d, i, active, runs, over, evidence, blind)
    floors = {**cut, **ended}  # jobs that ended inside the stretch: their last rate there
    going = {**{c.job: floors[c.job] for c in active if c.job in floors}, **going}
    if rates is not None and going:  # at least the rate of a phase still going after it
        rates = {c.job: max(rates[0].get(c.job, 0.0), going.get(c.job, 0.0) * over[c.job])
                 for c in active}, frozenset()
    printed = beside(d, i, active, runs, over, evidence)
    if sum(printed.values()) > 0:
        found = rates[0] if rates is not None else {}
        rates = {j: max(found.get(j, 0.0), v) for j, v in printed.items()}, frozenset()
    paced = {c.job: paced[c.job] for c in active if c.job in paced}
    if not paced:
        return rates
    if rates is None and len(paced) < len(active):
        return None
    base = rates[0] if rates is not None else {}
    here = rated_here(d, met)  # a task just begun: its pace reads the files it opened
    paced = {j: max(v, base.get(j, 0.0)) if j in here else v for j, v in paced.items()}
    weights = {c.job: paced.get(c.job, base.get(c.job, 0.0)) for c in active}
    if sum(weights.values()) <= 0:
        return rates
    return weights, frozenset()


def _ruled_out(out: Sequence[JobWindow], rest: Sequence[JobWindow], inner: Weights | None,
               over: dict[int, float]) -> Weights:
    """Rule 0's result: `out` get nothing, `rest` share by `inner` (by time without it)."""
    weights, excluded = inner if inner is not None else (
        {c.job: over[c.job] for c in rest}, frozenset())
    # without rates among the rest, their time overlaps are not expected amounts: the
    # later steps must not read them as such (beyond_rates needs a measured rate)
    gone = frozenset(c.job for c in out) | excluded
    if inner is None:
        gone |= _UNMEASURED
    return {**{c.job: 0.0 for c in out}, **weights}, gone
