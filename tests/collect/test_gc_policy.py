"""The collector's GC policy: paused during a cycle, survivors frozen, cycles reclaimed."""

from __future__ import annotations

import gc
import weakref

from slurm_io.collect.gc_policy import CycleGC


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_a_cycle_runs_without_collections_and_leaves_the_collector_as_it_was():
    policy = CycleGC(full_every=1000)
    assert gc.isenabled()
    with policy.cycle():
        assert not gc.isenabled()
        kept = [(i, str(i)) for i in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() >= len(kept)
    gc.unfreeze()


def test_garbage_cycles_frozen_in_a_cycle_are_reclaimed_at_the_full_collection():
    policy = CycleGC(full_every=3)
    with policy.cycle():
        node = _Node()
        ref = weakref.ref(node)
        del node  # garbage now, but its cycle keeps it alive until a collection
    assert ref() is not None  # frozen with the survivors
    with policy.cycle():
        pass
    assert ref() is not None
    with policy.cycle():  # the third cycle: unfreeze + full collection
        pass
    assert ref() is None
    gc.unfreeze()


def test_an_exception_in_a_cycle_still_restores_the_collector():
    policy = CycleGC()
    try:
        with policy.cycle():
            raise RuntimeError("lctl failed")
    except RuntimeError:
        pass
    assert gc.isenabled()
    gc.unfreeze()
