"""One collector cycle as a pure function: parsed read + state -> new state + batch.

parse -> repair (classify ids) -> delta -> Batch. No I/O here: the daemon wraps it with the
lctl/replay source, the spool, the state file and PostgreSQL.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from operator import attrgetter
from typing import NamedTuple

from slurm_io.delta.engine import State, compute
from slurm_io.model import Batch, IdClass, ParseResult
from slurm_io.repair.jobid import ClassifyCache

_JOB_ID = attrgetter("job_id")
UNATTRIBUTABLE = frozenset(
    {IdClass.EXE, IdClass.SYSTEM, IdClass.UNRECOVERABLE, IdClass.EMPTY}
)


class CycleResult(NamedTuple):
    state: State
    batch: Batch
    by_class: Counter[str]  # entries read, by id class
    baseline_targets: list[str]
    stale_targets: list[str]
    changed: dict[str, list[str]]  # target -> ids whose entry was replaced (for the journal)


def run_cycle(
    state: State,
    parsed: ParseResult,
    read_time: float,
    *,
    collector: str,
    seq: int,
    classify: ClassifyCache,
    period: float,
) -> CycleResult:
    by_class: Counter[str] = Counter()
    n_repaired = n_unattr = 0
    classify.rotate()  # ids of jobs long gone leave the cache (repair/jobid.py)
    entries = chain.from_iterable(parsed.targets.values())
    jids = Counter(classify.many(map(_JOB_ID, entries)))
    for jid, n in jids.items():
        by_class[jid.id_class.label] += n
        n_repaired += n * jid.repaired
        n_unattr += n * (jid.id_class in UNATTRIBUTABLE)
    res = compute(state, parsed.targets, read_time, period=period,
                  broken_ids=parsed.broken_ids, damaged=parsed.damaged)
    deltas = list(zip(res.deltas, classify.many(d.job_id for d in res.deltas), strict=True))
    batch = Batch(
        collector=collector,
        seq=seq,
        read_time=read_time,
        targets=tuple(sorted(parsed.targets)),
        deltas=deltas,
        n_entries=parsed.n_entries,
        n_problems=len(parsed.problems),
        n_repaired=n_repaired,
        n_unattributable=n_unattr,
    )
    return CycleResult(res.state, batch, by_class, res.baseline_targets, res.stale_targets,
                       res.changed)
