"""The readings of a blind delta's own interval: what each candidate's own rows say of it.

Rule 1's `beside`, `paced_amounts`, `continuing` (built on `resumed`, which rule 2's
`bordering` reads too), `ended_blind` and `cut_short`, rule 3's `phases`, the candidates
rule 0 must not rule out (`busy_at_edge`) and those it rules out that rule 3 must not feed
(`unseen`): each a question attribute.evidence asks of the Evidence index
(attribute.observed) about the delta's read interval, as opposed to the rates around it;
and the rise of the candidates' activity on the other target kind in it (`surprise`), as
rule 1's last resort and rule 2 read it (`rise_weights`, with the paces of those that
rose: `paced_risers`); and the delta's bytes per request against each candidate's
(`sized_weights`). Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from slurm_io.attribute.observed import (
    MIN_OBSERVED,
    NEAR,
    SLIVER,
    WINDOWS,
    Evidence,
    Interval,
    Row,
    measures,
    merge,
    overlap,
    requests,
    stretch,
    subtract,
    target_kind,
)
from slurm_io.attribute.phases import EDGE, MIN_ROW
from slurm_io.attribute.sizes import by_requests, by_size

if TYPE_CHECKING:
    from slurm_io.attribute.rows import DeltaRow
    from slurm_io.jobs.info import JobWindow


def beside(d: DeltaRow, i: int, active: Sequence[JobWindow], runs: dict[int, Interval],
           over: dict[int, float], evidence: Evidence) -> dict[int, float]:
    """Each candidate's rate of facet `i` by its own id on the delta's own target during
    the delta's read interval (over the part of it the job ran), times its overlap: a job
    whose ids went missing in the middle of the interval (a node-wide stretch that begins
    or ends there, an outage that made the interval 20 minutes long) or whose other
    processes print no id kept printing its own next to the blind bytes, on the target
    they went to. At least as much is its expected part."""
    if i > 1 or d.node is None:
        return {}
    a, b = d.ts_start, d.ts_end
    kind = target_kind(d.target)
    return {c.job: evidence.amount(d.node, c.job, [(a, b)], d.target, kind, i)
            * over[c.job] / max(overlap(a, b, *runs[c.job]), 1.0) for c in active}


def paced_amounts(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
                  blind: Sequence[Interval]) -> dict[int, float]:
    """Each candidate's expected amount of byte facet `i` of an OST delta from its pace on
    the MDT: the metadata operations it made by its own id during the delta times the
    bytes its I/O carried per operation nearby (Evidence.pace), for the candidates whose
    OSTs were blind then (no OST row by their id in the interval) and whose MDT was not.
    An I/O phase that falls wholly in a stretch where the OSTs are blind still opens files
    on an MDT that is not, while the rates around it show only the compute next to it."""
    if i > 1 or d.node is None or target_kind(d.target) != "OST":
        return {}
    a, b = d.ts_start, d.ts_end
    out: dict[int, float] = {}
    for c in active:
        ops = evidence.amount(d.node, c.job, [(a, b)], None, "MDT", 2)
        if ops <= 0:
            continue
        if evidence.seen(d.node, c.job, "OST", a, b):
            continue  # its OSTs were not blind then: its rates say more than its pace
        lo, hi = a - WINDOWS[-1], b + WINDOWS[-1]
        ratio = evidence.pace(d.node, c.job, i, subtract(lo, hi, merge([*blind, (a, b)])))
        if ratio > 0:
            out[c.job] = ops * ratio
    return out


def phases(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
           blind: Sequence[Interval]) -> dict[int, float]:
    """Each candidate's rate in its current phase on the delta's own target, where its rows
    there in the slivers inside the blind stretch around the delta show one
    (Evidence.phase): a rate rule 3 may not hold it below."""
    if d.node is None:
        return {}
    where = stretch(d.ts_start, d.ts_end, blind)
    rates = {c.job: evidence.phase(d.node, c.job, d.target, i, where) for c in active}
    return {j: r for j, r in rates.items() if r is not None}


def continuing(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
               current: dict[int, float]) -> dict[int, float]:
    """The candidates' rates in their current phase (`current`, from `phases`) whose own id
    moved facet `i` on the delta's own target in the read right after the delta (within
    SLIVER of its end): a phase still going when the ids came back was going during it. Rule 1
    expects at least that rate of them. (Only after: a phase shown right before the delta
    may have ended in it, and a task's start-up read, the commonest phase to begin inside
    a blind stretch, shows only after it; reading both edges cost dense seed 3 0.07.)"""
    after = resumed(d, i, [c.job for c in active if c.job in current], evidence)
    return {j: current[j] for j in after}


def ended_blind(d: DeltaRow, runs: dict[int, Interval], blind: Sequence[Interval],
                current: dict[int, float], going: Collection[int], evidence: Evidence
                ) -> dict[int, float]:
    """The candidates' rates in their current phase (`current`, from `phases`) that ended
    inside the blind stretch around the delta, or within a read of its end, after the
    delta: rule 1 expects at least that rate of them where no phase says more. No read after
    can show such a job going on (`continuing`), so its last OST row by its id before the
    delta stands for it, where that row is on the delta's own OST and no OST row by its id
    follows (it did not move on elsewhere). Dense seed 2, node015: a job read OST0000 as the
    ids went missing and ended inside the 960 s stretch; the other candidate, reading
    OST0000 after it, took every blind read of it (truth 0.76-0.87 to the first)."""
    if d.node is None:
        return {}
    h0, h1 = stretch(d.ts_start, d.ts_end, blind)
    out: dict[int, float] = {}
    for j, rate in current.items():
        end = runs[j][1]
        if j in going or not d.ts_end <= end < h1 + SLIVER:
            continue
        rows = _ost_rows_to_end(d.node, j, h0 - SLIVER, end, evidence)
        before = [r for r in rows if r.t0 < d.ts_start]
        if before and all(r.t1 <= d.ts_end for r in rows) and (
                max(before, key=lambda r: r.t1).target == d.target):
            out[j] = rate
    return out


def cut_short(d: DeltaRow, i: int, active: Sequence[JobWindow], runs: dict[int, Interval],
              blind: Sequence[Interval], current: Collection[int], going: Collection[int],
              evidence: Evidence) -> dict[int, float]:
    """The rate of facet `i` in its last read of the candidates with no current phase
    (`current`, from `phases`) whose last OST row by their id is a read of at least
    MIN_OBSERVED / 4 on the delta's own OST ending within NEAR of the blind stretch's start
    (the ids went missing as it read there), and that ended inside the stretch after the
    delta, no OST row by their id since: rule 1 expects at least that rate of them, and so
    does rule 3 where their phases expect nothing; rule 2 gives them the rest of a burst as
    it does a job moving that OST right before the delta. Their phase shows no sliver in the
    stretch (`ended_blind`'s) and ends, as the rows show it, with that read; the job went
    on until it ended. Dense seed 2, node015: job 3482911 read OST0005 at ~10 MB/s until
    the ids went missing and ended 280 s later; a task begun inside the next read,
    reading OST0005 from 420 s after it, took 0.30 of that 1.2 GiB blind read and all of
    the one after, every byte of them the first's."""
    if d.node is None:
        return {}
    h0, h1 = stretch(d.ts_start, d.ts_end, blind)
    out: dict[int, float] = {}
    for c in active:
        end = runs[c.job][1]
        if c.job in current or c.job in going or not d.ts_end <= end < h1 + SLIVER:
            continue
        rows = _ost_rows_to_end(d.node, c.job, h0 - NEAR - SLIVER, end, evidence)
        if not rows or max(r.t1 for r in rows) > d.ts_start:
            continue
        last = max(rows, key=lambda r: r.t1)
        if (last.target == d.target and last.t1 >= h0 - NEAR
                and last.t1 - last.t0 >= MIN_OBSERVED / 4):
            out[c.job] = last.m[i] / (last.t1 - last.t0)
    return out


def _ost_rows_to_end(node: str, job: int, lo: float, end: float, evidence: Evidence
                     ) -> list[Row]:
    """The job's own OST rows on `node` from `lo` to a read past its `end`: what
    `ended_blind` and `cut_short` read of a job that ended inside the stretch."""
    return [r for r in evidence.between(node, job, lo, end + SLIVER) if r.kind == "OST"]


def resumed(d: DeltaRow, i: int, candidates: Collection[int], evidence: Evidence
            ) -> dict[int, float]:
    """What each candidate moved of facet `i` by its own id on the delta's own target in
    the read right after it (within SLIVER of its end), where it moved any: a phase going
    on there as the ids came back was going in the delta, whatever its rate as its rows
    show it (a phase begun inside the stretch shows only its end). Rule 2 gives it the
    burst before any idle job (dense seed 2, node011: a 16.6 GiB blind write on OST0003
    went 0.59 to job 3482896, whose write on two other OSTs had ended by its id 240 s
    before the delta, no blind byte read on them since, and 0.41 to job 3482891,
    writing 8.6 GiB there by its id in the next read: its own, all of it)."""
    if i > 1 or d.node is None:
        return {}
    after = [(d.ts_end, d.ts_end + SLIVER)]
    kind = target_kind(d.target)
    moved = {j: evidence.amount(d.node, j, after, d.target, kind, i) for j in candidates}
    return {j: v for j, v in moved.items() if v > 0}


def bordering(d: DeltaRow, i: int, candidates: Collection[int], evidence: Evidence
              ) -> dict[int, float]:
    """What each candidate moved of facet `i` by its own id on the delta's own target in the
    read right before it or in the read right after it (within SLIVER of its start or its
    end), the larger, where it moved any: `resumed`, and a phase going on there as the ids
    went missing, which went on into the delta as surely as one going on as they came back
    had begun in it. Rule 2 gives it the burst before any idle job (dense seed 2, node005:
    job 3482892 wrote 27.3 GB on OST0003 by its id in the read before an 8.1 GiB blind write
    there, and its rows elsewhere put it at 0.5 GB a read: 0.12 to it, 0.44 to each of two
    jobs idle by their id; leaky seed 7, node014: a 33.1 GiB read, 0.02 to the job reading
    there by its id right before it, truth 1.00)."""
    if i > 1 or d.node is None:
        return {}
    out = resumed(d, i, candidates, evidence)
    before = [(d.ts_start - SLIVER, d.ts_start)]
    kind = target_kind(d.target)
    for j in candidates:
        moved = evidence.amount(d.node, j, before, d.target, kind, i)
        if moved > out.get(j, 0.0):
            out[j] = moved
    return out


def unseen(d: DeltaRow, active: Sequence[JobWindow], evidence: Evidence,
           seen: frozenset[int]) -> frozenset[int]:
    """The candidates rule 0 rules out (others, `seen`, did I/O by their id in the interval; they
    did none) that have no row at all by their id on the node, of either kind, within NEAR
    of the read interval, where a busy candidate moved data by its id on the delta's own
    kind then: a job in an I/O phase on those targets next to one that nothing recorded puts
    near the delta, so rule 3 must not give the silent one what it takes off the busy. A
    row, even without data or just outside the interval, shows a job whose ids were not all
    lost: it stays a possible owner. Where the busy showed only metadata operations, a job
    silent for its whole phase (computing, then writing while blind) is as likely the owner
    (default seed 1: two writes of 80 GiB, the busy paced to 0.1 GiB). Nor in a read
    interval longer than WINDOWS[0] (the 22-minute outage of every server): a job that
    computed all that time and wrote in a burst prints no row either (default seed 6: one 92
    GiB write)."""
    if d.node is None:
        return frozenset()
    a, b = d.ts_start, d.ts_end
    if b - a > WINDOWS[0]:
        return frozenset()  # an outage's interval: silent that long says nothing of a job
    seen = seen & {c.job for c in active}
    if not seen or len(seen) == len(active):
        return frozenset()
    if not any(evidence.seen(d.node, j, target_kind(d.target), a, b) for j in seen):
        return frozenset()  # the busy only opened files: the bytes may be a silent job's
    return frozenset(c.job for c in active if c.job not in seen
                     and not evidence.near(d.node, c.job, a - NEAR, b + NEAR))


EDGE_SHARE = 0.25  # rule 0: an edge row's rate must explain this share of the delta
EDGE_ROW = 2 * SLIVER  # rule 0: a longer row (an outage's read) says little of a moment


def busy_at_edge(d: DeltaRow, i: int, active: Sequence[JobWindow], evidence: Evidence,
                 seen: frozenset[int], going: Collection[int]) -> frozenset[int]:
    """The candidates rule 0 must not rule out though none of their rows falls in the
    delta's read interval (`seen`: those with one): their own id moved byte facet `i` on
    the delta's own OST in a read that ended within EDGE after the delta's start or NEAR
    before it, at a rate that explains EDGE_SHARE of the delta or more. Servers read at
    different moments: a job writing on that OST until two seconds before the delta is as
    busy as one whose server read a sliver nine seconds into it (dense seed 1, node005: a
    37 GiB blind write on the OST the first job had been writing on went whole to the
    second). A row that ends further back than EDGE ended at its entry's last update: the
    job's id stopped moving then, as the ids went missing (dense seed 2, node001: a job
    reading OST0002 by its id until 27 s before a 0.87 GiB blind read there, its own, was
    ruled out for the other, busy on OST0005), unless a task of the others began since
    (from EDGE before that row's end to the delta's end): its start-up read is the likelier
    owner (leaky seed 5, node032: an 18.4 GB read of a task begun 40 s before the delta).
    Not a trickle (a log beside compute), not a row longer than EDGE_ROW (an outage's
    read), not another OST's row (it says nothing of this one), not where a busy
    candidate's own id moved the facet on the delta's OST in the read right after it
    (`going`: the candidates `continuing` names; its phase ran through the delta; leaky
    seed 3, node021), and only where rule 0 applies (`seen`)."""
    if (i > 1 or not seen or d.node is None or target_kind(d.target) != "OST"
            or seen & set(going)):
        return frozenset()
    a, b = d.ts_start, d.ts_end
    floor = EDGE_SHARE * measures(d.counters)[i] / max(b - a, 1.0)  # bytes/s
    starts = [(c.job, c.start) for c in active if c.start is not None]

    def at_edge(job: int, r: Row) -> bool:
        if r.target != d.target or not a - NEAR <= r.t1 <= a + EDGE:
            return False
        if r.t1 - r.t0 > EDGE_ROW or r.m[i] / max(r.t1 - r.t0, MIN_ROW) < floor:
            return False
        return r.t1 >= a - EDGE or not any(
            other != job and r.t1 - EDGE < s0 < b for other, s0 in starts)

    return frozenset(
        c.job for c in active if c.job not in seen and any(
            at_edge(c.job, r) for r in evidence.between(d.node, c.job, a - NEAR, a + EDGE)))


def rise_weights(d: DeltaRow, rise: dict[int, float], jobs: Collection[int]
                 ) -> dict[int, float]:
    """The weights rule 1's last resort reads from `rise`, how much more each candidate did
    on the other target kind during the delta than around it (`surprise`), where no
    candidate's rate tells them apart. Where every candidate in `jobs` (those not ruled out)
    rose, each entered an I/O phase the OST rows do not show, and the size of its rise says
    nothing of the bytes it moved (a job's metadata rate and its byte rate are not tied):
    each counts alike and the time overlap divides the delta (dense seed 1, node029: two
    farm tasks reading their input while blind, 83.8 and 51.6 GiB, went three quarters to
    the one opening three times as many files, which read less). Elsewhere the size: it
    tells the ones that rose from those that did not; and in an outage's long interval
    (over WINDOWS[0]) who was active longer (dense seed 4, node009: a 127 GiB write across
    24 minutes, whose owner's MDT rose most)."""
    if rise and len(rise) == len(jobs) and d.ts_end - d.ts_start <= WINDOWS[0]:
        return {j: 1.0 for j in rise}
    return rise


def paced_risers(amount: float, weights: dict[int, float], paces: dict[int, float]
                 ) -> dict[int, float]:
    """Rule 1's last resort once the paces have spoken: each candidate that rose and has a
    pace (`paces`: phases.loose_paces, its MDT operations during the delta times the bytes
    its I/O carried per operation nearby) keeps at most that of the share its rise gives
    it, and what it gives up goes to those that rose without a pace, in proportion to
    their share. A rise on the MDT says a job entered an I/O phase, not how much it moved;
    its pace says that, where it has one. A task begun inside the delta has none (no
    earlier I/O to learn it from): the bytes beyond the others' paces are its start-up
    read (dense seed 2, node025: a 25.2 GiB read, all job 3483175's, begun inside it, went
    0.35 to two tasks whose file operations rose more, paced at 0.7 and 1.0 GB).
    Unchanged where no candidate with a pace rose, or none without one did.
    `amount`: the delta's facet; `weights`: the rise's weights (rise x overlap)."""
    held = {j: paces[j] for j, w in weights.items() if w > 0 and paces.get(j, 0.0) > 0}
    bare = [j for j, w in weights.items() if w > 0 and j not in held]
    if not held or not bare or amount <= 0:
        return weights
    norm = sum(weights.values())
    share = {j: amount * w / norm for j, w in weights.items()}
    kept = {j: min(share[j], pace) for j, pace in held.items()}
    excess = sum(share[j] - kept[j] for j in held)
    if excess <= 0:
        return weights
    base = sum(share[j] for j in bare)
    out = {j: 0.0 for j in weights}
    out.update(kept)
    for j in bare:
        out[j] = share[j] + excess * share[j] / base
    return out


def surprise(d: DeltaRow, active: Sequence[JobWindow], evidence: Evidence,
             excluded: frozenset[int]) -> dict[int, float]:
    """How much more each candidate did by its own id on the other target kind during the
    delta's read interval than around it (operations per second): a job whose MDT activity
    jumps while the OSTs are blind has entered an I/O phase the OST rows do not show."""
    if d.node is None:
        return {}
    a, b = d.ts_start, d.ts_end
    other = "OST" if target_kind(d.target) == "MDT" else "MDT"
    out = {}
    for c in active:
        if c.job in excluded:
            continue
        during = evidence.amount(d.node, c.job, [(a, b)], None, other, 2) / max(b - a, 1.0)
        around = evidence.amount(d.node, c.job, [(a - WINDOWS[0], a), (b, b + WINDOWS[0])],
                                 None, other, 2) / (2 * WINDOWS[0])
        if during > around:
            out[c.job] = during - around
    return out


def sized_weights(d: DeltaRow, i: int, weights: dict[int, float], evidence: Evidence,
                  over: dict[int, float], excluded: Collection[int]
                  ) -> dict[int, float] | None:
    """The weights once the delta's bytes per request have divided it between candidates
    of small and of large requests (attribute.sizes.by_size), or, where some candidate's
    size no row shows, bound those whose size they show (by_requests); None where sizes
    say nothing."""
    assert d.node is not None
    amount, count = measures(d.counters)[i], requests(d.counters)[i]
    if amount <= 0 or count <= 0:
        return None  # nothing to weigh: spare the scans of every candidate's rows
    kind = target_kind(d.target)
    sizes = {j: evidence.request_size(d.node, j, kind, i, d.ts_start - WINDOWS[-1],
                                      d.ts_end + WINDOWS[-1]) for j in weights}
    return (by_size(amount, count, weights, sizes)
            or by_requests(amount, count, weights, sizes, over, excluded))
