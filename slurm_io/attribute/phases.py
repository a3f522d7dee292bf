"""Each candidate's current I/O phase on a node, rebuilt from its own rows (issue 21).

A blind OST delta (`:uid:host`) of a node where several jobs of the uid run holds the I/O of
whichever of them was in an I/O phase on that OST then. The rates around the delta (rule 1)
average a phase with the compute next to it and with the blind time they cannot see; a
split that knew each candidate's phase (its span, its rate, its OSTs) and divided the delta
by the bytes each phase was expected to move in it places most of the placeable bytes (the
model oracle of bench/accuracy_model.py: dense 98.8-99.6 % over placeable bytes on seeds
1-4 with each phase known only as its own rows show it, against the rules' 98.3-98.9 %).
This module rebuilds that phase from what attribution already holds (the candidates' rows
by their own id on the node, and the node's blind stretches); attribute.evidence decides
where it is used.

A phase is a run of the job's own rows (OST rows with bytes, MDT rows with operations:
either kind, a job in an I/O phase opens and closes files on the MDT while its OSTs are
blind) with no gap longer than GAP: a job's compute shows as no row by its id on any kind.
A gap the node's blind stretches cover (all but GAP of it) is bridged: rows on both sides
say the job was active, and the ids, not the job, went missing in between; the job's start
counts as such a side (a task begun inside a blind stretch whose first rows come as the ids
come back read from its start: the start-up read the rules called unplaceable). Its rate per
byte facet is what its OST rows in the run moved per second they cover (its OSTs together;
a row cut short counts at least MIN_ROW seconds: one 40-second increment in a 2-second row
is not a rate), and its OSTs those it moved bytes on in the run. A phase shown for at most
a collector period whose rows end as a blind stretch begins was cut by it, not ended: it
goes on a collector period into it (`cut_young`); one whose rows begin as the stretch
ends began inside it, a collector period back (`begun_inside`). Its expected part of the
delta is rate / its OSTs x the overlap of the delta's read interval with the run's span
(± EDGE: servers read at different moments), 0 on an OST it moved no bytes on; at least
its rate in a phase shown right after the delta (attribute.evidence: continuing).
(Measured on bench/accuracy.py's twelve scenario-seeds and not kept: the rate and OSTs
from the rows near the stretch only, within 120-360 s of it, or a GAP of 60 s, cost dense
seed 1's per-job p90 0.1-0.3 points; without the continuing floor leaky seed 1 lost 0.008.)

No phase weighs a delta (`expected` is empty, and the rules around it decide) where none
of the candidates has a phase with a known rate meeting it; where one of them has a phase
shown on the MDT only (its OSTs blind: its rate is unknown, and giving it the others' mean
rate cost dense seeds 1-3 up to 0.3 points); in an outage's long interval (the rows beside
it say more); and where no blind stretch is given around it (a delta weighed alone).

Rule 2 of attribute.evidence, which reads a phase's rate at the edges of a blind stretch
and bounds a burst beyond the rates, is in attribute.bursts.

Pure: every function reads its arguments only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

from slurm_io.attribute.observed import (
    CAP_SLACK,
    NEAR,
    SLIVER,
    WINDOWS,
    Evidence,
    Interval,
    Row,
    overlap,
    stretch,
    target_kind,
)

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow
    from slurm_io.jobs.info import JobWindow

GAP = 90.0  # 3/4 of a collector period: a longer stretch without any row is compute
EDGE = 20.0  # the span's margin: servers read at different moments
MIN_ROW = 30.0  # a row cut short by the ids going missing counts at least this long


class Phase(NamedTuple):
    """A run of a job's own rows on a node: its span, rate and OSTs."""

    t0: float
    t1: float
    rate: float | None  # bytes/s of the facet on its OSTs together; None: no OST bytes shown
    osts: frozenset[str]  # the OSTs it moved bytes on


def _blind_in(a: float, b: float, blind: Sequence[Interval]) -> float:
    """Seconds of (a, b) the blind stretches cover: a gap in a job's rows they explain."""
    return sum(overlap(a, b, h0, h1) for h0, h1 in blind)


def _covered(rows: Sequence[Row]) -> float:
    """Seconds the rows cover together, each at least MIN_ROW long (back from its end)."""
    total, end = 0.0, float("-inf")
    for t0, t1 in sorted((min(r.t0, r.t1 - MIN_ROW), r.t1) for r in rows):
        if t1 <= end:
            continue
        total += t1 - max(t0, end)
        end = t1
    return total


def runs(rows: Sequence[Row], i: int, blind: Sequence[Interval], start: float | None
         ) -> list[Phase]:
    """The job's phases from its own `rows` on one node (sorted by start), for byte facet
    `i`; `blind`: the node's blind stretches (sorted, disjoint); `start`: the job's start
    on the node, a side that says active (None: before the rows)."""
    groups: list[list[Row]] = []
    spans: list[list[float]] = []
    if start is not None:
        groups.append([])
        spans.append([start, start])
    for r in rows:
        if not any(r.m):
            continue
        if spans:
            gap = r.t0 - spans[-1][1]
            if gap <= GAP or gap - _blind_in(spans[-1][1], r.t0, blind) <= GAP:
                groups[-1].append(r)
                spans[-1][1] = max(spans[-1][1], r.t1)
                continue
        groups.append([r])
        spans.append([r.t0, r.t1])
    out = []
    for group, (t0, t1) in zip(groups, spans, strict=True):
        if not group:
            continue
        ost = [r for r in group if r.kind == "OST" and (r.m[0] or r.m[1])]
        moving = [r for r in ost if r.m[i]]
        rate = (sum(r.m[i] for r in moving) / max(_covered(moving), 1.0) if moving
                else 0.0 if ost else None)
        out.append(Phase(t0, t1, rate, frozenset(r.target for r in ost)))
    return out


Meeting = dict[int, list[tuple[Phase, float]]]  # job -> its phases meeting a delta, overlaps


def meeting(d: DeltaRow, i: int, active: Sequence[JobWindow], runs_of: dict[int, Interval],
            evidence: Evidence, blind: Sequence[Interval]) -> Meeting | None:
    """Each candidate's phases around OST delta `d` (rows within WINDOWS[0] of the blind
    stretch around it) that meet its read interval, with their overlaps; None where the
    phases do not weigh the delta whoever the candidates (the module's docstring). Each
    job's entry reads only its own rows, so rule 0's subset of busy candidates reuses it
    (`expected_of`) instead of rebuilding their phases. `runs_of`: each one's run."""
    if i > 1 or d.node is None or target_kind(d.target) != "OST":
        return None
    a, b = d.ts_start, d.ts_end
    if b - a > WINDOWS[0]:
        return None  # an outage's interval: the rows beside it say more (rule 1's beside)
    if not any(y > a and x < b for x, y in blind):
        return None  # no blind stretch given around it (a delta weighed alone): none to bridge
    h0, h1 = stretch(a, b, blind)
    lo, hi = h0 - WINDOWS[0], h1 + WINDOWS[0]
    found: Meeting = {}
    for c in active:
        rows = evidence.between(d.node, c.job, lo, hi)
        s0, s1 = runs_of[c.job]
        start = s0 if lo <= s0 <= b else None
        mine = []
        for p in runs(rows, i, blind, start):
            p = begun_inside(cut_young(p, h0), h1, s0)
            ov = overlap(a, b, *span(p, (s0, s1)))
            if ov > 0:
                mine.append((p, ov))
        if mine:
            found[c.job] = mine
    return found


YOUNG = SLIVER  # a phase its rows show for at most a collector period has just begun


def cut_young(p: Phase, begun: float) -> Phase:
    """The phase as a delta meets it: one with OST bytes whose rows span at most YOUNG s and
    end as the blind stretch around the delta begins (`begun`, within EDGE before its last
    row or NEAR after) was cut by the stretch, not ended, and is taken to go on YOUNG s
    into it. The ids went missing as the phase began; a phase so young has not had time
    to end (dense seed 3, node003: a job whose new entry wrote 12.7 GiB on an OST 29 s
    before the ids of the node went missing was given 0.05 of the 39.9 GiB that OST moved
    blind in the next read, all its own, the rest going to a job whose phase had ended
    and, by rule 2, to three no rate showed). The stretch is the delta's, chained
    through slivers (observed.stretch): a stretch that merely resumes after a sliver, as
    the leaks of processes that print no id make them, cut nothing (leaky seed 7, node014:
    a task's read that ended 108 s before the node's ids went missing was given 0.87 of a
    27.7 GiB read that was not its own, in a form that took any stretch's start). Not a
    phase shown on the MDT only (its rate is unknown: the rules around weigh it)."""
    if p.rate is None or p.t1 - p.t0 > YOUNG:
        return p
    if p.t1 - EDGE <= begun <= p.t1 + NEAR:
        return p._replace(t1=p.t1 + YOUNG)
    return p


def begun_inside(p: Phase, ended: float, start: float) -> Phase:
    """The phase as a delta meets it: one with OST bytes whose rows begin as the blind
    stretch around the delta ends (`ended`, up to NEAR before its first row or EDGE after)
    began inside the stretch, and is taken to have gone on YOUNG s back into it: the ids
    came back, not the phase (dense seed 3, node025: a job whose id wrote 12.7 GiB on
    OST0001 in the first read after the stretch, the two blind reads before it 25.0 and
    35.1 GiB, was given 0.04 of the first of them, all its own; a job with no row near it
    took the rest by rule 2). Not a phase that began with the job (`start`: its start already
    counts as a side, `runs`), nor one shown on the MDT only. The read right after the delta
    says more where it shows the phase (evidence: continuing); this reaches one read
    further, to the delta the stretch ends in or the one before it."""
    if p.rate is None or p.t0 <= start + EDGE:
        return p
    if p.t0 - NEAR <= ended <= p.t0 + EDGE:
        return p._replace(t0=p.t0 - YOUNG)
    return p


def span(p: Phase, run: Interval) -> Interval:
    """The phase's span as a delta's overlap with it counts: ± EDGE (servers read at
    different moments), inside the job's run."""
    return max(p.t0 - EDGE, run[0]), min(p.t1 + EDGE, run[1])


def rate_on(p: Phase, target: str) -> float:
    """The phase's rate on one OST (its rate shared evenly by its OSTs); 0 where it moved
    nothing there or its rate is unknown."""
    return p.rate / len(p.osts) if p.rate and target in p.osts else 0.0


def expected_of(d: DeltaRow, found: Meeting | None, jobs: Sequence[int]) -> dict[int, float]:
    """What the phases of `jobs` (of `meeting`) expect each to have moved in `d`; empty where
    they do not weigh it: then the rules around it do."""
    if found is None:
        return {}
    mine = [(j, found[j]) for j in jobs if j in found]
    if any(p.rate is None for _, v in mine for p, _ in v):
        return {}  # a phase shown on the MDT only: its rate is unknown, the rules weigh it
    out = {j: 0.0 for j in jobs}
    for j, phases in mine:
        for p, ov in phases:
            out[j] += rate_on(p, d.target) * ov
    return out if sum(out.values()) > 0 else {}


def moving_none(found: Meeting | None) -> frozenset[int]:
    """The candidates whose phases meeting the delta all show OST bytes by their id and none
    of the delta's facet: a job reading then was not writing. A pace (bytes per metadata
    operation, attribute.readings.paced_amounts) is learnt from any of the job's phases
    within an hour; these jobs' own rows say it does not hold now (leaky seed 2: a task
    begun inside the delta, reading on two other OSTs after it, was paced at 22 GB of the
    41 GiB another job wrote)."""
    if not found:
        return frozenset()
    return frozenset(j for j, phases in found.items() if all(p.rate == 0.0 for p, _ in phases))


def rated_here(d: DeltaRow, found: Meeting | None) -> frozenset[int]:
    """The candidates with a phase meeting `d` that began at or after its start and whose
    rows show the delta's own OST at a known rate: rule 1 weighs them by the higher of
    that rate x their overlap and their pace. A pace reads the metadata operations made in
    the delta at the bytes per operation of the job's phases nearby, and a task just begun
    has opened its files but moved little yet (dense seed 1, node029: a task begun 68 s
    into a blind read, reading on that OST at 3 MB/s after it, was paced at 57 MB, a third
    of a job's pace whose phase had ended 10 s into the read on another OST; it had 0.27 of
    the read, all of which was its own)."""
    if not found:
        return frozenset()
    return frozenset(j for j, phases in found.items()
                     if any(p.t0 >= d.ts_start and rate_on(p, d.target) for p, _ in phases))


LOOSE_PACE = 2.0  # rule 3: an MDT-only phase may reach LOOSE_PACE x CAP_SLACK x its pace


def can_move(found: Meeting, jobs: Collection[int]) -> float:
    """What the phases of `jobs` meeting the delta (of `meeting`) can have moved in it at
    the rates their rows show, on their OSTs together, over their overlaps (0 for a phase
    shown on the MDT only): how much of a delta they can explain, on whichever OST."""
    return sum((p.rate or 0.0) * ov for j in jobs for p, ov in found.get(j, ()))


def not_busy(found: Meeting | None, seen: Collection[int], none: frozenset[int],
             amount: float) -> frozenset[int]:
    """The candidates seen by their id in the delta's read (`seen`) that rule 0 does not
    count busy: those whose phases move only the other facet (`none`: moving_none), where
    the phases of candidates not seen, meeting the delta, can have moved the facet's
    `amount` at their known rates on their OSTs together, within CAP_SLACK (leaky seed 6,
    node021: a 33.2 GiB blind read went whole to a job writing by its id then, beside a
    job whose phase, begun 16 s into the read, read 490 MB/s from the next read on; not
    beside a trickle, dense seed 5, node008: a phase writing 24 MB/s is no sign that the
    job reading by its id then did not write 75 GiB blind as well). The rules weigh them
    all."""
    if not none or not found:
        return frozenset()
    can = can_move(found, [j for j in found if j not in seen])
    return none & frozenset(seen) if CAP_SLACK * can >= amount > 0 else frozenset()


def mdt_only(found: Meeting | None) -> frozenset[int]:
    """The candidates with a phase meeting the delta that is shown on the MDT only (an I/O
    phase while their OSTs were blind: its rate there is unknown)."""
    if not found:
        return frozenset()
    return frozenset(j for j, phases in found.items() if any(p.rate is None for p, _ in phases))


def unbounded(found: Meeting | None, paced: Collection[int]) -> frozenset[int]:
    """The candidate rule 3 does not hold to its peaks: the one whose phase meeting the delta
    is shown on the MDT only (`mdt_only`) and that has no pace (`paced`: the candidates that
    have one). Its peaks are those of its other phases, not of this one (dense seed 1,
    node007: a task begun 60 s before a 38.6 GiB blind read, its start-up read, was held to
    its peaks and 28 GiB went to a job rule 0 found idle). Where two or more candidates are
    such, their peaks are all that tells them apart: none is freed (dense seed 6, node005).
    One with a pace is held to LOOSE_PACE x CAP_SLACK x its pace (`loose_paces`)."""
    unknown = mdt_only(found) - frozenset(paced)
    return unknown if len(unknown) == 1 else frozenset()


def loose_paces(found: Meeting | None, paced: dict[int, float]) -> dict[int, float]:
    """What rule 3 lifts each paced candidate's cap to: its pace, or LOOSE_PACE x its pace
    where its phase meeting the delta is shown on the MDT only. Such a pace is the bytes per
    operation of the job's other phases, and those of an I/O phase no OST row shows differ:
    on dense seeds 1 and 3 and leaky seed 2, a candidate so paced owned 10 of the 12 blind
    deltas of 2-4 times its pace (347 of 349 GiB) and 5 of 5 of 4-8 times, 5 of 13 above."""
    loose = mdt_only(found)
    return {j: v * (LOOSE_PACE if j in loose else 1.0) for j, v in paced.items()}


def reach_of(d: DeltaRow, found: Meeting | None, runs_of: dict[int, Interval]
             ) -> dict[int, float]:
    """The most the phase of each job that began inside `d`'s read interval can have moved
    in it: the rate its rows show after, on its OSTs together, times its overlap, on
    whichever OST. A task that begins while the ids are missing shows only the OSTs it
    went on using: which ones its start-up read used, no row says."""
    if found is None:
        return {}
    a, b = d.ts_start, d.ts_end
    out = {}
    for j, phases in found.items():
        s0 = runs_of[j][0]
        if a <= s0 <= b:
            out[j] = sum((p.rate or 0.0) * ov for p, ov in phases if p.t0 == s0)
    return out


def expected(d: DeltaRow, i: int, active: Sequence[JobWindow], runs_of: dict[int, Interval],
             evidence: Evidence, blind: Sequence[Interval]) -> dict[int, float]:
    """Each candidate's expected part of byte facet `i` of OST delta `d` from its phases
    around it; empty where the phases do not weigh the delta (the module's docstring)."""
    return expected_of(d, meeting(d, i, active, runs_of, evidence, blind),
                       [c.job for c in active])
