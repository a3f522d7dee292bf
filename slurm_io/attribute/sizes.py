"""Request sizes as evidence: a blind delta's bytes per request say how much of it came from
candidates that write in small requests and how much from those that write in large ones.

A user's post-processing task writing 4 KiB records and their simulation writing 4 MiB
checkpoints can share a node; whatever their rates around a blind stretch, the delta's own
bytes B and requests S (Lustre's `*_samples`) hold two equations: B = x_small + x_large and
S = x_small / m_small + x_large / m_large, where m is each class's mean request size, seen by
its own id. Solved, they give each class its amount; the rules of attribute.evidence still
divide within a class. Where the classes do not differ clearly, or the delta's mean size is
not between them, the equations say nothing and nothing changes. And the request count
alone bounds the bytes of candidates of small requests, where another candidate's size no
row shows (`by_requests`). Pure; imports nothing of the project.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

SMALL = 64 * 1024  # a class of candidates whose requests average below this ...
LARGE = 512 * 1024  # ... against one whose requests average at or above this
APART = 4.0  # the two classes' mean sizes differ by at least this factor


def by_size(amount: float, requests: float, weights: Mapping[int, float],
            sizes: Mapping[int, float | None]) -> dict[int, float] | None:
    """Weights that give each size class of candidates the amount the delta's requests
    imply, divided within the class as `weights` divide it; None where sizes say nothing.

    `amount`/`requests`: the delta's bytes and requests of one facet; `sizes`: each
    candidate's mean request size by its own id nearby (None: not seen).
    """
    if amount <= 0 or requests <= 0 or any(sizes.get(j) is None for j in weights):
        return None
    small = [j for j in weights if (sizes[j] or 0.0) < SMALL]
    large = [j for j in weights if (sizes[j] or 0.0) >= LARGE]
    if not small or not large or len(small) + len(large) < len(weights):
        return None
    m_small = _mean(small, weights, sizes)
    m_large = _mean(large, weights, sizes)
    if m_large < APART * m_small or not m_small <= amount / requests <= m_large:
        return None
    # S = xs/ms + (B - xs)/ml  ->  xs = (S - B/ml) / (1/ms - 1/ml)
    x_small = (requests - amount / m_large) / (1.0 / m_small - 1.0 / m_large)
    x_small = min(amount, max(0.0, x_small))
    out: dict[int, float] = {}
    for group, share in ((small, x_small / amount), (large, 1.0 - x_small / amount)):
        total = sum(weights[j] for j in group)
        for j in group:
            out[j] = share * (weights[j] / total if total > 0 else 1.0 / len(group))
    return out


def by_requests(amount: float, requests: float, weights: Mapping[int, float],
                sizes: Mapping[int, float | None], over: Mapping[int, float],
                excluded: Collection[int]) -> dict[int, float] | None:
    """Weights in which the candidates seen making requests by their own id nearby (`sizes`)
    have at most what the delta's request count lets them carry, the rest going to those
    never seen making one (not `excluded`: ruled out by rule 0); None where the count
    binds no one.

    Each request carries one candidate's bytes, so candidates whose requests average at
    most m moved at most `requests` x m of the delta, whatever their rates say. Where the
    delta's bytes per request are APART times the largest size any of them is seen
    making, that bound is far below the delta: the rest is the I/O of a candidate whose
    size no row shows (dense seed 2, node015: a 3.0 GiB blind write in 1,439 requests, 2.2
    MB each, all a task's that printed its id on the MDT only, went to a job writing 5 KB
    requests around it, which could have moved 7.5 MB of it). Within each side, `weights`
    divide; among the unseen with no weight, `over` (each one's time in the delta).
    """
    known = [j for j in weights if sizes.get(j) is not None]
    unseen = [j for j in weights if sizes.get(j) is None and j not in excluded]
    total = sum(weights.values())
    if amount <= 0 or requests <= 0 or not known or not unseen or total <= 0:
        return None
    largest = max(sizes[j] or 0.0 for j in known)
    mine = sum(weights[j] for j in known)
    cap = requests * largest
    if amount / requests < APART * largest or amount * mine / total <= cap:
        return None
    out = {j: 0.0 for j in weights}
    for j in known:
        out[j] = cap * weights[j] / mine
    theirs = sum(weights[j] for j in unseen)
    share = {j: weights[j] for j in unseen} if theirs > 0 else {j: over[j] for j in unseen}
    norm = sum(share.values())
    for j in unseen:
        out[j] = (amount - cap) * share[j] / norm
    return out


def _mean(group: list[int], weights: Mapping[int, float], sizes: Mapping[int, float | None]
          ) -> float:
    """A class's mean request size: the members' sizes, weighted by their expected bytes
    (each byte comes in requests of its member's size: a harmonic mean per byte)."""
    total = sum(weights[j] for j in group)
    if total <= 0:
        return len(group) / sum(1.0 / (sizes[j] or 1.0) for j in group)
    return total / sum(weights[j] / (sizes[j] or 1.0) for j in group)
