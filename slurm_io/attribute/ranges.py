"""How sure a job's figure is: the least and the most the job can have done (pure).

attribute.core gives a job one figure per counter: its own deltas whole, and a share of
each `:uid:host` delta it may own. Where the delta had one candidate (the only job of the
uid on that node then) the share is certain as far as the rules' premise goes (a compute
node runs a user's processes only inside their jobs, pam_slurm_adopt). Where it had
several, the split is the rules' best guess (attribute.evidence), and what the data can
defend is only:

- **least**: nothing of the shared delta. Any other candidate could have done all of it:
  a process that lost its id prints nothing else, so no rule proves a candidate idle.
- **most**: all of the shared delta, when the job was among the candidates the split
  weighed (its run overlaps the delta's effective interval; a candidate the split gave
  0, rule 0's "idle", included) or its run meets that interval at an edge (`touches`);
  nothing when its run does not meet it.

A delta the split gives one job whole (one candidate overlaps its interval) is that job's
for certain, unless another job's run meets the interval at an edge: Lustre's times are
whole seconds, and an entry last updated in the second a job started may hold that job's
first I/O (seen on the leaky simulation, where it put the truth outside the range); then
the delta counts as shared (least nothing of it, most all of it) for both.

So `least <= figure <= most`, and the job's true I/O lies inside whenever its own deltas
were read whole and the owner of every `:uid:host` byte was among the delta's candidates
(what the rules assume). The bounds are computed from the candidate sets and the splits'
rules, never by re-running the split: a change of the splitting rules changes the figure,
not the range. Kept per facet the way the figures are: read bytes, written bytes and
metadata operations (the `metadata_ops` of `jobio show`).
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_io.counter_names import METADATA_OPS

# the figures a range is kept for; their facet index in attribute.evidence.FACETS
RANGED = ("read_bytes", "write_bytes", "metadata_ops")
SINGLE_RULE = "single"  # attribute.evidence.SINGLE (not imported: a leaf of the rules)

Range = tuple[int, int]  # (least, most)


def amounts(counters: dict[str, int]) -> tuple[int, int, int]:
    """A delta's read bytes, written bytes and metadata operations."""
    return (int(counters.get("read_bytes", 0)), int(counters.get("write_bytes", 0)),
            sum(v for k, v in counters.items() if k in METADATA_OPS))


class Bounds:
    """Accumulates a job's least and most over the deltas attribution gives it."""

    __slots__ = ("least", "most")

    def __init__(self) -> None:
        self.least = [0.0, 0.0, 0.0]
        self.most = [0.0, 0.0, 0.0]

    def own(self, counters: dict[str, int]) -> None:
        """A delta naming the job: wholly its own, certain."""
        for i, x in enumerate(amounts(counters)):
            self.least[i] += x
            self.most[i] += x

    def shared(self, counters: dict[str, int], fractions: Sequence[float],
               rules: Sequence[str], candidate: Sequence[bool], alone: bool = True) -> None:
        """A `:uid:host` delta: per facet the job's fraction, the rule that gave it and
        whether the job was among the split's candidates; `alone`: no other job's run
        meets the delta's interval, edges included (module docstring)."""
        for i, x in enumerate(amounts(counters)):
            if not x:
                continue
            if rules[i] == SINGLE_RULE and fractions[i] > 0 and alone:  # the job's alone
                self.least[i] += x * fractions[i]
                self.most[i] += x * fractions[i]
            elif candidate[i]:
                self.most[i] += x

    def ranges(self, figures: Sequence[int]) -> dict[str, Range]:
        """`{read_bytes: (least, most), ...}`, widened to hold the figures (rounding)."""
        return {name: bound(lo, hi, fig) for name, lo, hi, fig
                in zip(RANGED, self.least, self.most, figures, strict=True)}


def touches(interval: tuple[float, float], run: tuple[float, float]) -> bool:
    """Whether a job's run meets a delta's effective interval, its edges included: an
    entry last updated in the very second the job started (Lustre's times are whole
    seconds) may hold the job's first I/O, though the split, which weighs overlaps, gives
    the job none of it."""
    return run[0] <= interval[1] and run[1] >= interval[0]


def bound(least: float, most: float, figure: int) -> Range:
    """Whole numbers with least <= figure <= most (the figure is rounded separately)."""
    return (min(int(least), figure), max(-int(-most // 1), figure))


def wide(figure: float, r: Range | None, share: float = 0.01) -> bool:
    """Whether a range is worth showing: wider than `share` of the figure (1 %)."""
    if r is None:
        return False
    return r[1] - r[0] > share * figure


def any_wide(totals: dict[str, int], metadata_ops: int,
             ranges: dict[str, Range]) -> bool:
    """Whether a job's view shows any of its figures with a range (then it says what the
    brackets mean)."""
    return any(wide(fig, ranges.get(k)) for k, fig in (
        ("read_bytes", totals.get("read_bytes", 0)), ("write_bytes", totals.get("write_bytes", 0)),
        ("metadata_ops", metadata_ops)))


def covers(r: Range, truth: float) -> bool:
    """Whether `truth` lies inside the range (bench and tests: the range's honesty)."""
    return r[0] <= truth <= r[1]
