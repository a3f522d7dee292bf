"""The fast job_stats parser's passes: whole chunks of entries in a few C-speed steps.

Split from slurm_io.parse.jobstats (the public Parser, which segments lctl's output and
decides per chunk) so that the tricks live apart from the rules: every function here either
returns the entries of a whole chunk or None, "not for me", and the chunk is then read by the
reference parser (jobstats_reference.read_entries), which says what went wrong.

* `shaped`: all entries of a chunk have the counter layout of its first; one regex built for
  that layout (a `_Shape`, cached by the layout's digit-free text) matches one entry each,
  and the matches are transposed into columns converted a column at a time;
* `generic`: mixed layouts; one findall match per line, sliced per entry, with coverage
  checks (every line taken by exactly one branch, every counter line complete).

Idle statistics (counters that never moved) are shared objects, since a collector keeps
~100k entries per target in its state.
"""

from __future__ import annotations

import re
from itertools import compress, repeat
from operator import itemgetter
from typing import NamedTuple

from slurm_io.model import ByteStats, Entry, counts
from slurm_io.parse._jobstats_base import I64_MAX, MAX_TIME, U64_MAX, decode_job_id, layout

# The fast path works on the chunk's bytes with every space removed (bytes.translate runs at
# GB/s and halves what the regex must walk on the space-padded columns of every release). One
# branch takes an entry's id line with its time lines, one a counter line (with the whole
# statistics of byte counters). Ids are taken from the unsqueezed text, since an id may
# contain spaces.
_FAST = re.compile(
    rb"\n(?:(-job_id:)[^\n]*"
    rb"(?:\nsnapshot_time:(\d+(?:\.\d+)?)(?:secs\.nsecs)?)?"
    rb"(?:\nstart_time:(\d+(?:\.\d+)?)(?:secs\.nsecs)?)?"
    rb"(?:\nelapsed_time:(\d+(?:\.\d+)?)(?:secs\.nsecs)?)?(?=\n|$)"
    rb"|(\w+):\{samples:(\d+),(?:unit:(?:bytes|reqs),min:(\d+),max:(\d+),sum:(\d+)"
    rb"(?:,sumsq:(\d+))?(?:,hist:(\{[^}\n]*\}))?\})?)"
)
SQUEEZE = b" "
# every byte a well-formed entry prints outside its id, once spaces are squeezed out
_GRAMMAR = b"".join(bytes((c,)) for c in range(128) if chr(c).isalnum()) + b"_:,{}.-\n"
_DIGITS = b"0123456789"
IDS = re.compile(rb"\n- job_id:([^\n]*)")
_COL_ID, _COL_NAME, _COL_SAMPLES = (itemgetter(i) for i in (0, 4, 5))


class _Labels(dict[bytes, str]):
    """Histogram bucket labels (`4K`, `1M`, ...): a tiny vocabulary, decoded and stored once."""

    def __missing__(self, key: bytes) -> str:
        value = key.decode()
        if len(self) < 4096:
            self[key] = value
        return value


_LABEL = _Labels().__getitem__


def _hist_bytes(inner: bytes) -> tuple[tuple[str, int], ...]:
    """`4K:35,1M:2` (spaces already removed) -> (("4K", 35), ("1M", 2)); `` -> ()."""
    if not inner:
        return ()
    if b"," not in inner:  # the common case: one bucket
        label, value = inner.split(b":")
        count = int(value)
        if count > U64_MAX:
            raise ValueError("histogram count beyond 64 bits")
        return ((_LABEL(label), count),)
    if inner.count(b":") != inner.count(b",") + 1:
        raise ValueError(f"damaged histogram {inner[:80]!r}")
    parts = inner.replace(b",", b":").split(b":")
    values = list(map(int, parts[1::2]))
    if max(values) > U64_MAX:
        raise ValueError("histogram count beyond 64 bits")
    return tuple(zip(map(_LABEL, parts[::2]), values, strict=True))


class _Shape(NamedTuple):
    """One regex for whole entries of one counter layout, and where its groups go.

    Built from the first entry of a chunk; a findall with it yields one tuple per entry,
    so the per-counter work (and the per-counter tuples of the generic pattern) disappears.
    """

    regex: re.Pattern[bytes]
    names: tuple[str, ...]
    i_snap: int  # group index of snapshot_time, -1 when the layout has none
    i_start: int
    sample_idx: tuple[int, ...]  # group of each counter's samples, in `names` order
    # per byte counter: name, groups of (samples, min, max, sum, sumsq) (-1: not printed), and
    # of its histogram (-1: not printed)
    byte_counters: tuple[tuple[str, tuple[int, int, int, int, int], int], ...]


_SHAPE_TIME = re.compile(rb"(snapshot_time|start_time|elapsed_time):\d+(?:\.\d+)?(secs\.nsecs)?")
_SHAPE_COUNTER = re.compile(rb"(\w+):\{samples:\d+(,.*)?\}")
_SHAPE_BYTES = re.compile(
    rb",unit:(bytes|reqs),min:\d+,max:\d+,sum:\d+(,sumsq:\d+)?(,hist:\{[^{}\n]*\})?")
# the rest of an operation counter (unit, timing statistics): only samples is kept, so one
# character class (a C loop in the regex engine) checks it instead of field-by-field groups
_SHAPE_OP_REST = re.compile(rb"(?:,[\w:,]*)?")
_SHAPES: dict[bytes, _Shape | None] = {}
_MAX_SHAPES = 256


def _build_shape(body: bytes) -> _Shape | None:
    """The shape of an entry's squeezed lines after its id line, or None if it has none."""
    parts = [rb"\n-job_id:[^\n]*"]
    n_groups = 0
    i_snap = i_start = -1
    names: list[str] = []
    sample_idx: list[int] = []
    byte_counters = []
    for line in body.split(b"\n")[1:]:
        m = _SHAPE_TIME.fullmatch(line)
        if m:
            name = m.group(1)
            if name == b"elapsed_time":
                parts.append(rb"\nelapsed_time:\d+(?:\.\d+)?")
            else:
                parts.append(rb"\n" + name + rb":(\d+(?:\.\d+)?)")
                if name == b"snapshot_time":
                    i_snap = n_groups
                else:
                    i_start = n_groups
                n_groups += 1
            if m.group(2):
                parts.append(rb"secs\.nsecs")
            continue
        m = _SHAPE_COUNTER.fullmatch(line)
        if m is None:
            return None
        name, rest = m.group(1), m.group(2) or b""
        if name.decode() in names:
            return None
        names.append(name.decode())
        sample_idx.append(n_groups)
        if name.endswith(b"_bytes"):
            fm = _SHAPE_BYTES.fullmatch(rest)
            if fm is None:
                return None
            p = (rb"\n" + name + rb":\{samples:(\d+),unit:" + fm.group(1)
                 + rb",min:(\d+),max:(\d+),sum:(\d+)")
            idx = [n_groups, n_groups + 1, n_groups + 2, n_groups + 3, -1]
            n_groups += 4
            if fm.group(2):
                p += rb",sumsq:(\d+)"
                idx[4] = n_groups
                n_groups += 1
            i_hist = -1
            if fm.group(3):
                p += rb",hist:\{([^{}\n]*)\}"
                i_hist = n_groups
                n_groups += 1
            parts.append(p + rb"\}")
            byte_counters.append((name.decode(), (idx[0], idx[1], idx[2], idx[3], idx[4]), i_hist))
        else:
            if _SHAPE_OP_REST.fullmatch(rest) is None:
                return None
            # `[^}]*+`: a possessive run of one negated character is a fast C loop in the
            # regex engine (twice as fast as a class here); it cannot hide a damaged line,
            # since a match that ran into the next line or entry fails on what follows,
            # and a chunk is only taken when every entry matched
            parts.append(rb"\n" + name + rb":\{samples:(\d+)(?:,[^}]*+)?\}")
            n_groups += 1
    if not names or n_groups < 2:
        return None  # fewer than two groups: findall would not return tuples
    lay_names = layout(tuple(names))[0]
    return _Shape(re.compile(b"".join(parts) + rb"(?=\n-job_id:|\Z)"), lay_names, i_snap,
                  i_start, tuple(sample_idx), tuple(byte_counters))


def only_grammar_bytes(compact: bytes, ids: list[bytes]) -> bool:
    """Whether every byte outside the ids belongs to the grammar (C-speed translates).

    The passes below match counter lines by their structure, and an operation counter's
    tail by a character run, so a control byte or stray punctuation there would pass
    unnoticed; such a chunk is left to the reference, which reports the line.
    """
    stray = compact.translate(None, _GRAMMAR)
    joined = b"".join(ids)
    if stray and stray != joined.translate(None, _GRAMMAR + SQUEEZE):
        return False
    # an opening brace inside a counter line hides nothing from the closing-brace count
    return compact.count(b"{") - joined.count(b"{") == compact.count(b"}") - joined.count(b"}")


def shape_of(compact: bytes) -> _Shape | None:
    """The (cached) shape of the chunk's first entry."""
    nxt = compact.find(b"\n-job_id:", 1)
    first = compact[:nxt] if nxt > 0 else compact
    nl = first.find(b"\n", 1)
    if nl < 0:
        return None
    body = first[nl:]
    key = body.translate(None, _DIGITS)
    try:
        return _SHAPES[key]
    except KeyError:
        shape = _build_shape(body)
        if len(_SHAPES) < _MAX_SHAPES:
            _SHAPES[key] = shape
        return shape


_IDLE: dict[ByteStats, ByteStats] = {}


def _idle(stats: ByteStats) -> ByteStats:
    """One shared object per distinct statistics of a counter that never moved.

    Most entries read or write, not both: the other byte counter prints zeros, and sharing
    those saves ~100 bytes per entry of a state that holds 100k entries per target.
    """
    shared = _IDLE.get(stats)
    if shared is None:
        if len(_IDLE) < 256:
            _IDLE[stats] = stats
        return stats
    return shared


_IDLE_PAIRS: dict[tuple, dict[str, ByteStats]] = {}


def _idle_pair(b0: str, x: ByteStats, b1: str, y: ByteStats) -> dict[str, ByteStats]:
    """One shared stats dict for entries whose two byte counters never moved.

    Nothing in the pipeline changes an entry's stats after parsing (deltas get new dicts), so
    sharing saves a dict per idle entry (~180 bytes, and one object for the collector's GC).
    """
    key = (b0, x, b1, y)
    shared = _IDLE_PAIRS.get(key)
    if shared is None:
        shared = {b0: x, b1: y}
        if len(_IDLE_PAIRS) < 256:
            _IDLE_PAIRS[key] = shared
    return shared


def shaped(target: str, shape: _Shape, compact: bytes, ids: list[bytes],
           digests: list[int] | None) -> list[Entry] | None:
    """Entries of a chunk whose entries all have the layout of its first: one match each.

    Complete coverage follows from the count: every match starts at an entry's id line
    and ends where the next entry (or the chunk) begins, so as many matches as entries
    means every line of every entry was matched.
    """
    rows = shape.regex.findall(compact)
    n = len(rows)
    if n != len(ids) or (digests is not None and len(digests) != n):
        return None
    # Transpose to one column per group and convert whole columns at a time: the
    # per-entry tuples are then built by zip/map in C, not by Python code per counter.
    cols = list(zip(*rows, strict=True))
    try:
        return _build_shaped(target, shape, compact, rows, cols, ids, digests)
    except ValueError:
        return None  # a number int() refuses (thousands of digits): damage, robust path

def _build_shaped(target: str, shape: _Shape, compact: bytes, rows: list, cols: list,
                  ids: list[bytes], digests: list[int] | None) -> list[Entry] | None:
    n = len(rows)
    ints: dict[int, list[int]] = {}

    def col(i: int) -> list[int]:
        c = ints.get(i)
        if c is None:
            c = ints[i] = list(map(int, cols[i]))
        return c

    none = [None] * n
    per_counter: list[list[ByteStats]] = []
    for _, (i_smp, i_min, i_max, i_sum, i_sumsq), i_hist in shape.byte_counters:
        if max(max(col(i_min)), max(col(i_max)), max(col(i_sum))) > I64_MAX or (
                i_sumsq >= 0 and max(col(i_sumsq)) > U64_MAX):
            return None  # beyond what Lustre and bigint hold: the robust path reports it
        try:
            hists = list(map(_hist_bytes, cols[i_hist])) if i_hist >= 0 else none
        except ValueError:
            return None  # a damaged histogram: the robust path reports it
        per_counter.append([x if x[0] else _idle(x) for x in map(
            ByteStats, col(i_smp), col(i_min), col(i_max), col(i_sum),
            col(i_sumsq) if i_sumsq >= 0 else none, hists)])
    bnames = [b[0] for b in shape.byte_counters]
    if len(bnames) == 2:
        b0, b1 = bnames
        stats = [{b0: x, b1: y} if x[0] or y[0] else _idle_pair(b0, x, b1, y)
                 for x, y in zip(*per_counter, strict=True)]
    else:
        stats = [dict(zip(bnames, xs, strict=True)) for xs in zip(*per_counter, strict=True)]
        if not bnames:
            stats = [{} for _ in range(n)]
    try:
        samples = list(map(counts, zip(*map(col, shape.sample_idx), strict=True)))
    except OverflowError:
        return None  # a value beyond bigint: the robust path reports it
    raws = list(map(bytes.decode, map(bytes.strip, ids)))
    # with nothing to decode, job_id is the very same string as raw_id
    decode = b'"' in compact or b"\\x" in compact
    job_ids = list(map(decode_job_id, raws)) if decode else raws
    snaps = list(map(float, cols[shape.i_snap])) if shape.i_snap >= 0 else none
    starts = list(map(float, cols[shape.i_start])) if shape.i_start >= 0 else none
    if (snaps is not none and max(snaps) > MAX_TIME) or (
            starts is not none and max(starts) > MAX_TIME):
        return None  # a damaged time: the robust path reports it
    return list(map(Entry, repeat(target, n), raws, job_ids, snaps, starts,
                    repeat(shape.names, n), samples, stats,
                    digests if digests is not None else repeat(0, n)))

def generic(target: str, layouts: dict[tuple[bytes, ...], tuple[tuple[str, ...], tuple[int, ...]]],
            compact: bytes, ids: list[bytes], digests: list[int] | None) -> list[Entry] | None:
    """Entries of mixed layouts: one findall match per line, sliced per entry.

    `layouts`: the caller's cache of counter layouts by their names as bytes.
    """
    rows = _FAST.findall(compact)
    n = len(rows)
    if n == 0:
        return None
    starts = list(compress(range(n), map(_COL_ID, rows)))
    if not starts or starts[0] != 0 or len(ids) != len(starts):
        return None
    n_time_lines = n_hists = 0
    starts.append(n)
    out: list[Entry] = []
    last_nm: tuple[bytes, ...] = ()
    last_lay: tuple[tuple[str, ...], tuple[int, ...]] = ((), ())
    for e in range(len(starts) - 1):
        a, b = starts[e], starts[e + 1]
        _, snap_s, start_s, elapsed_s = rows[a][:4]
        n_time_lines += (snap_s != b"") + (start_s != b"") + (elapsed_s != b"")
        rws = rows[a + 1 : b]
        if not rws:
            return None  # an entry without counters: truncated or interleaved
        bnm = tuple(map(_COL_NAME, rws))
        if bnm == last_nm:
            lay = last_lay
        else:
            lay = layouts.get(bnm)
            if lay is None:
                if b"" in bnm or len(set(bnm)) != len(bnm):
                    return None  # a counter printed twice: the reference reports it
                lay = layouts[bnm] = layout(tuple(x.decode() for x in bnm))
            last_nm, last_lay = bnm, lay
        nm, bidx = lay
        stats: dict[str, ByteStats] = {}
        for i in bidx:
            _, _, _, _, _, smp, mn, mx, sm, sq, h = rws[i]
            if not sm:
                return None  # a byte counter without its statistics: damaged
            if h:
                n_hists += 1
            try:
                hist = _hist_bytes(h[1:-1]) if h else None
            except ValueError:
                return None  # a damaged histogram: the robust path reports it
            bs = ByteStats(
                int(smp), int(mn), int(mx), int(sm), int(sq) if sq else None, hist)
            if max(bs[:4]) > I64_MAX or (bs.sumsq or 0) > U64_MAX:
                return None  # beyond what Lustre and bigint hold: the robust path
            stats[nm[i]] = bs
        raw = ids[e].strip().decode("ascii")
        snap_t = float(snap_s) if snap_s else None
        start_t = float(start_s) if start_s else None
        if (snap_t or 0.0) > MAX_TIME or (start_t or 0.0) > MAX_TIME:
            return None  # a damaged time: the robust path reports it
        try:
            values = counts(map(int, map(_COL_SAMPLES, rws)))
        except OverflowError:
            return None  # a value beyond bigint: the robust path reports it
        out.append(
            Entry(target, raw, decode_job_id(raw), snap_t, start_t, nm, values, stats,
                  digests[e] if digests is not None else 0)
        )
    # every line must have been taken by exactly one branch and every counter line must
    # be complete (a cut line still matches the branch's prefix: its closing brace is
    # missing), else the robust path decides
    if n + n_time_lines != compact.count(b"\n"):
        return None
    if n - len(out) + n_hists != compact.count(b"}"):
        return None
    if digests is not None and len(digests) != len(out):
        return None
    return out
