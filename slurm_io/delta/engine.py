"""Online deltas of cumulative job_stats counters (pure; state is explicit).

Lustre counters are cumulative since the entry was created on its target, and an entry is
freed after `job_cleanup_interval` of idleness and re-created from zero when the job does I/O
again. A delta for the interval (previous read, this read] is therefore:

* first read of a target: nothing is known about the past -> baseline only, no delta;
* id not in the previous read of the target: it started from zero since then -> the full value
  (flag NEW, plus RESET_ABSENT when it had been seen before and vanished in between);
* `start_time` changed (2.15.2+): freed and re-created -> the full value (RESET_START), even
  when the counters happen to be higher than before;
* a counter went down: freed and re-created -> the full value (RESET_DROP);
* otherwise the difference. Missed reads simply make the interval longer (GAP).

A read whose entries are older than the state's is stale, not a reset: an old capture filed
under a newer name would otherwise look like counters that went down and be counted again
in full. Lustre's own `snapshot_time` (the entry's last update) says so: the newest one of
a real later read is never older than the newest one of an earlier read, since the most
recently active entry is the last to be freed. Only wall-clock times are compared (2.15.0
prints boot-relative ones, which restart at a reboot). A stale target is skipped and its
state kept, so at worst a read is left out and the next one covers its interval.

Rows whose every delta is zero are not emitted. The state is a plain dict of the last read's
entries per target, so persisting it is the caller's business (see delta.state_file).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import compress
from operator import attrgetter, sub
from typing import NamedTuple

from slurm_io.model import ByteStats, Delta, DeltaFlag, Entry


class TargetState(NamedTuple):
    read_time: float
    entries: dict[str, Entry]  # raw id -> entry as last read
    gone: frozenset[str]  # ids present two reads ago and absent from the last read
    # ids carried over a read where they were broken or absent from a damaged block: the time
    # of the read their state comes from (their next interval starts there). Usually empty.
    since: dict[str, float] = {}  # noqa: RUF012 - NamedTuple default, never mutated


State = dict[str, TargetState]

WALL_CLOCK_MIN = 1e9  # snapshot times below this (2001-09-09) are boot-relative (2.15.0)
_SNAP = attrgetter("snapshot_time")


def newest_snapshot(entries: Iterable[Entry]) -> float | None:
    """The newest wall-clock snapshot_time of `entries` (None: none has one)."""
    newest = max(filter(None, map(_SNAP, entries)), default=None)
    return newest if newest is not None and newest >= WALL_CLOCK_MIN else None


class DeltaResult(NamedTuple):
    state: State
    deltas: list[Delta]
    baseline_targets: list[str]  # targets seen for the first time (no deltas yet)
    # targets whose read is not newer than the state (by read time or by the entries' own
    # snapshot_time): skipped, their state kept
    stale_targets: list[str]
    # per target updated by this read: ids whose entry is not the very object of the previous
    # state (a superset of what changed), for a journal of state changes (state_store)
    changed: dict[str, list[str]] = {}  # noqa: RUF012 - NamedTuple default, never mutated


def _full(e: Entry, t0: float, t1: float, flags: int) -> Delta | None:
    samples = {n: v for n, v in zip(e.names, e.samples, strict=True) if v}
    if not samples:
        return None
    stats = {n: s for n, s in e.stats.items() if s.samples or s.sum}
    st = e.start_time
    return Delta(e.target, e.raw_id, e.job_id, t0, t1, e.snapshot_time, samples, stats, flags,
                 st if st is not None and t0 < st < t1 else None)


def _hist_diff(
    cur: tuple[tuple[str, int], ...] | None, prev: tuple[tuple[str, int], ...] | None
) -> tuple[tuple[str, int], ...] | None:
    if cur is None:
        return None
    if not prev:
        return cur
    before = dict(prev)
    out = []
    for k, v in cur:
        d = v - before.get(k, 0)
        if d:
            out.append((k, d))
    return tuple(out)


def _stats_diff(cur: ByteStats, prev: ByteStats) -> ByteStats:
    return ByteStats(
        cur.samples - prev.samples,
        cur.min,
        cur.max,
        cur.sum - prev.sum,
        None if cur.sumsq is None or prev.sumsq is None else cur.sumsq - prev.sumsq,
        _hist_diff(cur.hist, prev.hist),
    )


def _diff(e: Entry, p: Entry, t0: float, t1: float, flags: int) -> Delta | None:
    """Difference of two reads of one entry, or a full value when it was reset."""
    if e.names is p.names or e.names == p.names:
        # C-level: differences, the reset test and the non-zero pairs without Python per counter
        diffs = list(map(sub, e.samples, p.samples))
        if min(diffs, default=0) < 0:
            return _full(e, t0, t1, flags | DeltaFlag.RESET_DROP)
        samples = dict(compress(zip(e.names, diffs, strict=True), diffs))
    else:  # the counter set changed (server upgraded between reads): compare by name
        before = dict(zip(p.names, p.samples, strict=True))
        samples = {}
        for n, c in zip(e.names, e.samples, strict=True):
            o = before.get(n, 0)
            if c < o:
                return _full(e, t0, t1, flags | DeltaFlag.RESET_DROP)
            if c != o:
                samples[n] = c - o
    stats: dict[str, ByteStats] = {}
    # equal statistics (often the very same shared object of an idle counter) need no work
    for n, s in (e.stats.items() if e.stats != p.stats else ()):
        ps = p.stats.get(n)
        if ps is s:
            continue
        if ps is None:
            if s.samples:
                stats[n] = s
            continue
        if s.sum < ps.sum:
            return _full(e, t0, t1, flags | DeltaFlag.RESET_DROP)
        if s.samples != ps.samples or s.sum != ps.sum:
            stats[n] = _stats_diff(s, ps)
    if not samples and not stats:
        return None
    return Delta(e.target, e.raw_id, e.job_id, t0, t1, e.snapshot_time, samples, stats, flags)


def compute(
    state: Mapping[str, TargetState],
    targets: Mapping[str, list[Entry]],
    read_time: float,
    *,
    period: float = 120.0,
    broken_ids: Mapping[str, set[str]] | None = None,
    damaged: Collection[str] = (),
) -> DeltaResult:
    """Deltas of one read (all targets of one server) against the previous state.

    `broken_ids` are ids whose entries were present but unparseable in this read: their
    previous state is carried over so that they are not counted again from zero next time.
    In a `damaged` target block (truncated, interleaved, garbage) an id's absence proves
    nothing, so every absent id keeps its previous state: counting a still-live entry again
    from zero would double its whole history, while keeping a really freed one costs at most
    the part it regrew before its next drop is seen.
    Targets missing from this read keep their state untouched (next read: a longer interval).
    """
    new_state: State = dict(state)
    deltas: list[Delta] = []
    baseline: list[str] = []
    stale: list[str] = []
    changed: dict[str, list[str]] = {}
    broken_ids = broken_ids or {}
    for target, entries in targets.items():
        cur = {e.raw_id: e for e in entries}
        prev = state.get(target)
        if prev is None:
            new_state[target] = TargetState(read_time, cur, frozenset(), {})
            baseline.append(target)
            changed[target] = list(cur)
            continue
        if read_time <= prev.read_time:
            stale.append(target)
            continue
        now = newest_snapshot(entries)
        if now is not None:
            before = newest_snapshot(prev.entries.values())
            if before is not None and now < before:
                stale.append(target)
                continue
        base_flags = (DeltaFlag.GAP if read_time - prev.read_time > 1.5 * period
                      else DeltaFlag.NONE)
        pe = prev.entries
        start_changed = DeltaFlag.RESET_START
        since = prev.since
        shrunk: list[str] = []
        replaced = changed[target] = []
        for rid, e in cur.items():
            p = pe.get(rid)
            if p is e:
                continue  # the parser reused the previous read's entry: unchanged text
            replaced.append(rid)
            if since and rid in since:
                t0 = since[rid]
                flags = DeltaFlag.GAP if read_time - t0 > 1.5 * period else DeltaFlag.NONE
            else:
                t0 = prev.read_time
                flags = base_flags
            if p is None:
                f = flags | DeltaFlag.NEW
                if rid in prev.gone:
                    f |= DeltaFlag.RESET_ABSENT
                d = _full(e, t0, read_time, f)
            elif e.start_time is not None and p.start_time is not None and (
                e.start_time != p.start_time
            ):
                d = _full(e, t0, read_time, flags | start_changed)
            elif e.samples == p.samples and e.names is p.names:
                continue  # idle since the previous read: the common case, decided in C
            elif e.names is not p.names and not set(p.names) <= set(e.names):
                # counters vanished: a cut entry (truncated capture), not a new release; keep
                # the previous state rather than count the missing counters again later
                shrunk.append(rid)
                continue
            else:
                d = _diff(e, p, t0, read_time, flags)
            if d is not None:
                deltas.append(d)
        carried = pe.keys() if target in damaged else broken_ids.get(target, set())
        new_since: dict[str, float] = {}
        for rid in shrunk:
            cur[rid] = pe[rid]
            new_since[rid] = since.get(rid, prev.read_time)
        for rid in carried:
            if rid not in cur and rid in pe:
                cur[rid] = pe[rid]
                new_since[rid] = since.get(rid, prev.read_time)
        gone = frozenset(pe.keys() - cur.keys()) if len(pe) else frozenset()
        new_state[target] = TargetState(read_time, cur, gone, new_since)
    return DeltaResult(new_state, deltas, baseline, stale, changed)
