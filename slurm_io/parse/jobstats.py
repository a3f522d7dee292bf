"""Parser for `lctl get_param mdt.*.job_stats obdfilter.*.job_stats` of Lustre 2.10 .. 2.17.

Why not YAML: several releases do not print valid YAML (2.15.0's unindented time lines,
2.15.2's escapes, glued `max:16777216`, hard-wrapped lines), YAML 1.1 mangles ids such as
`12345:30`, and a YAML loader runs at ~1 MB/s where an OSS prints hundreds of MB per read.

Two paths produce identical results:

* the fast path runs ONE compiled `findall` over a ~1 MiB chunk of entries, transposes the
  matches into columns with `zip(*...)` and slices them per entry: all per-character work
  happens in C. It only accepts a chunk when every line was matched by exactly one pattern
  branch and every byte-counter line carried its full statistics;
* otherwise the chunk goes through the line-based robust path, which rejoins hard-wrapped
  lines, tolerates odd spacing and tabs, keeps unknown counters, and isolates a broken entry
  (counted as a ParseProblem) without losing its neighbours.

The parser is incremental (`Parser.feed`) so a collector can parse lctl's output while it is
being read, keeping memory bounded by the chunk size rather than the output size.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import attrgetter, is_, itemgetter
from typing import NamedTuple

from slurm_io.model import ByteStats, Entry, ParseProblem, ParseResult, counts
from slurm_io.text import clean

_MAX_DIGITS = 20  # a u64 has at most 20 decimal digits
_U64_MAX = (1 << 64) - 1
# counters, sums and extremes are stored as PostgreSQL bigint: a larger value is damage
# (Lustre would need ~9 EB on one target); a sum of squares (float8 there) may use all 64 bits
_I64_MAX = (1 << 63) - 1
# a snapshot/start time beyond 9999-12-31 is damage (PostgreSQL's timestamptz, and Python's
# datetime, stop near there); such a time is dropped from the entry and reported
MAX_TIME = 253_402_300_799.0
CHUNK_CHARS = 1 << 20  # bytes of entries per fast-path chunk
UNKNOWN_TARGET = "unknown"

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
_SQUEEZE = b" "
_DIGEST = attrgetter("digest")
_DIGITS = b"0123456789"
_IDS = re.compile(rb"\n- job_id:([^\n]*)")
_COL_ID, _COL_NAME, _COL_SAMPLES = (itemgetter(i) for i in (0, 4, 5))
_HEADER = re.compile(rb"([A-Za-z0-9_.\-]+)\.job_stats=(.*)")
_ESCAPE = re.compile(rb"\\x([0-9A-Fa-f]{2})")
_HIST_ITEM = re.compile(r"([^\s:,{}]+)\s*:\s*([0-9]+)")

# robust path
_R_JOBID = re.compile(r"^\s*-\s*job_id:\s*(.*?)\s*$")
_R_TIME = re.compile(r"^\s*(\w+_time)\s*:\s*([0-9]+(?:\.[0-9]+)?)(?:\s+secs\.nsecs)?\s*$")
_R_COUNTER = re.compile(r"^\s*(\w+)\s*:\s*\{(.*)\}\s*$")
_R_FIELD = re.compile(r"^\s*(\w+)\s*:\s*(\S+)\s*$")
_R_HIST = re.compile(r"hist\s*:\s*\{([^}]*)\}")
_R_SCALAR = re.compile(r"^\s*(\w+)\s*:\s*(.*)$")
# lines that start something new and therefore never continue a hard-wrapped line
_R_LINE_START = re.compile(r"^\s*(?:-\s*job_id\s*:|\w+\s*:\s*\{|\w+_time\s*:|job_stats:)")


def _unescape(m: re.Match[bytes]) -> bytes:
    return bytes((int(m.group(1), 16),))


def decode_job_id(raw: str) -> str:
    """The job id as the process set it: surrounding quotes removed, `\\xHH` resolved.

    2.15.2+ escape every byte outside `[A-Za-z0-9.@_-]`; 2.16+ print ':' literally but quote.
    Escapes stand for bytes, so the resolved bytes are read as UTF-8 under the one text rule
    (slurm_io.text.clean): `\\xc3\\xa9` is `é`, while a NUL or a byte that is not UTF-8
    stays written as `\\xHH`. The result is always storable text.
    """
    s = raw
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        s = s[1:-1]
    if "\\x" in s:
        # ':' is by far the most common escape (2.15.2 escapes the separators of %j:%u:%H);
        # resolving it by replace keeps the fast path as fast as before
        s = s.replace("\\x3A", ":")
        if "\\x" in s:
            s = clean(_ESCAPE.sub(_unescape, s.encode("utf-8", "surrogatepass")))
    return s


def clean_id(raw: str) -> str:
    """An id as printed, made storable (only ids that carry a NUL or raw bytes change)."""
    return raw if raw.isascii() and "\x00" not in raw else clean(raw)


def target_of_param(param: str) -> str:
    """`mdt.scratch-MDT0000` -> `scratch-MDT0000`; `obdfilter.x-OST0001` -> `x-OST0001`."""
    return param.split(".", 1)[1] if "." in param else param


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
        if count > _U64_MAX:
            raise ValueError("histogram count beyond 64 bits")
        return ((_LABEL(label), count),)
    if inner.count(b":") != inner.count(b",") + 1:
        raise ValueError(f"damaged histogram {inner[:80]!r}")
    parts = inner.replace(b",", b":").split(b":")
    values = list(map(int, parts[1::2]))
    if max(values) > _U64_MAX:
        raise ValueError("histogram count beyond 64 bits")
    return tuple(zip(map(_LABEL, parts[::2]), values, strict=True))


def _hist(text: str) -> tuple[tuple[str, int], ...]:
    """`{ 4K: 35, 1M: 2 }` -> (("4K", 35), ("1M", 2)); `{  }` -> ()."""
    inner = text.strip("{} ")
    if not inner:
        return ()
    try:
        items = tuple((k.strip(), int(v)) for k, v in (p.split(":") for p in inner.split(",")))
    except ValueError:
        # items that read as label: count; a count too long for a u64 is damage, dropped
        items = tuple((k, int(v)) for k, v in _HIST_ITEM.findall(text) if len(v) <= _MAX_DIGITS)
    # labels are JSON keys in PostgreSQL (jsonb refuses NUL and lone surrogates)
    return tuple((clean(k), v) for k, v in items)


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
# counter layouts shared by every parser of the process, so that consecutive reads hand the
# delta engine the same tuple object (an identity test instead of a comparison)
_LAYOUTS: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[int, ...]]] = {}
_MAX_LAYOUTS = 4096


def _layout(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The shared (names, indexes of byte counters) of a counter layout."""
    lay = _LAYOUTS.get(names)
    if lay is None:
        lay = (names, tuple(i for i, x in enumerate(names) if x.endswith("_bytes")))
        if len(_LAYOUTS) < _MAX_LAYOUTS:
            _LAYOUTS[names] = lay
    return lay


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
    lay_names = _layout(tuple(names))[0]
    return _Shape(re.compile(b"".join(parts) + rb"(?=\n-job_id:|\Z)"), lay_names, i_snap,
                  i_start, tuple(sample_idx), tuple(byte_counters))


def _shape_of(compact: bytes) -> _Shape | None:
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


def _decode_bytes(b: bytes) -> str:
    """Text of what lctl printed, losslessly: bytes that are not UTF-8 are carried as
    surrogates (`surrogateescape`) until `clean()` turns them into `\\xHH` where an id is
    taken; no other field can hold them (numbers and names are matched as such)."""
    return b.decode("utf-8", "surrogateescape")


class Parser:
    """Incremental job_stats parser: `feed()` output as it arrives, then `finish()`."""

    def __init__(self, default_target: str = UNKNOWN_TARGET,
                 previous: Mapping[str, Mapping[str, Entry]] | None = None) -> None:
        """`previous` (target -> raw id -> Entry of the last read) turns on reuse: an entry
        whose text is unchanged since then is not parsed again but taken from there."""
        self._previous = previous
        self._buf = b""
        self._target = default_target
        self._line = 1  # line number of the first byte of _buf
        self._targets: dict[str, list[Entry]] = {}
        self._seen: dict[str, set[str]] = {}
        self._broken: dict[str, set[str]] = {}
        self._damaged: set[str] = set()
        self._problems: list[ParseProblem] = []
        self._digests: dict[str, dict[int, Entry]] = {}
        self._blayouts: dict[tuple[bytes, ...], tuple[tuple[str, ...], tuple[int, ...]]] = {}

    # -- public API ------------------------------------------------------------------------
    def feed(self, text: str | bytes) -> Parser:
        """Add output (bytes as read from lctl, or text); complete entries are parsed now,
        the incomplete tail is kept."""
        if isinstance(text, str):
            text = text.encode("utf-8", "surrogatepass")
        self._buf += text
        if len(self._buf) >= 2 * CHUNK_CHARS:
            self._consume(final=False)
        return self

    def finish(self) -> ParseResult:
        self._consume(final=True)
        return ParseResult(self._targets, self._problems, self._broken,
                           frozenset(self._damaged))

    # -- segmentation ------------------------------------------------------------------------
    def _consume(self, final: bool) -> None:
        """Split the buffer at target headers and entry boundaries, parse what is complete."""
        buf = self._buf
        if not final:
            # keep the last (possibly incomplete) entry or header line in the buffer
            cut = buf.rfind(b"\n- job_id:")
            # a header after the last entry start (searched in that tail only: a backward
            # search of the whole buffer for a header that is rarely there costs a full scan)
            cut = max(cut, buf.find(b".job_stats=", max(cut, 0)))
            if cut <= 0:
                return
            cut = buf.rfind(b"\n", 0, cut + 1)
            if cut <= 0:
                return
        else:
            cut = len(buf)
        self._segment(buf, cut)
        self._line += buf.count(b"\n", 0, cut)
        self._buf = buf[cut:]

    def _segment(self, buf: bytes, end: int) -> None:
        pos = 0
        while pos < end:
            h = buf.find(b".job_stats=", pos, end)
            if h < 0:
                self._block(buf, pos, end)
                return
            line_start = buf.rfind(b"\n", pos, h) + 1 if h > pos else pos
            if line_start < pos:
                line_start = pos
            m = _HEADER.fullmatch(buf, line_start, _line_end(buf, h, end))
            if m is None:
                # `.job_stats=` inside something else (an odd id?): not a header
                nl = _line_end(buf, h, end)
                self._block(buf, pos, min(nl + 1, end))
                pos = nl + 1
                continue
            if line_start > pos:
                self._block(buf, pos, line_start)
            self._target = target_of_param(m.group(1).decode("ascii"))
            self._targets.setdefault(self._target, [])
            rest = m.group(2).strip()
            body_start = m.end()
            if rest and rest != b"job_stats:":
                self._problem(None, buf, line_start, m.end(), "unexpected text after header")
            pos = body_start

    def _block(self, buf: bytes, start: int, end: int) -> None:
        """Parse entries of the current target in buf[start:end], chunk by chunk."""
        first = buf.find(b"- job_id:", start, end)
        while first > start and buf[first - 1] != 10:  # not at a line start
            first = buf.find(b"- job_id:", first + 1, end)
        if first < 0:
            self._preamble(buf, start, end)
            return
        if first > start:
            self._preamble(buf, start, first)
        pos = first - 1 if first > 0 else first  # include the newline that starts the entry
        pos = max(pos, start)
        while pos < end:
            nxt = -1
            if end - pos > CHUNK_CHARS:
                nxt = buf.find(b"\n- job_id:", pos + CHUNK_CHARS, end)
            stop = end if nxt < 0 else nxt
            self._chunk(buf, pos, stop)
            pos = stop

    def _preamble(self, buf: bytes, start: int, end: int) -> None:
        """Text of a target before its first entry: `job_stats:` or blank is expected."""
        for i, line in enumerate(buf[start:end].split(b"\n")):
            s = line.strip()
            if s and s != b"job_stats:":
                self._damaged.add(self._target)
                lineno = self._lineno(buf, start) + i
                self._problems.append(
                    ParseProblem(self._target, lineno, None, "text outside any entry",
                                 _decode_bytes(s[:200]))
                )

    def _lineno(self, buf: bytes, pos: int) -> int:
        return self._line + buf.count(b"\n", 0, pos)

    def _problem(self, raw_id: str | None, buf: bytes, start: int, end: int, msg: str) -> None:
        self._problems.append(
            ParseProblem(self._target, self._lineno(buf, start), raw_id, msg,
                         _decode_bytes(buf[start:end][:200]))
        )

    # -- fast paths --------------------------------------------------------------------------
    def _chunk(self, buf: bytes, start: int, end: int) -> None:
        # Python's cyclic GC is held off while a chunk's objects are made: they are tuples,
        # dicts and numbers without cycles, and a collection every 700 allocations would walk
        # them (and, as they survive, every entry parsed so far) again and again; once per
        # chunk it walks them once. (The collector pauses the GC for its whole cycle anyway.)
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._parse_chunk(buf, start, end)
        finally:
            if enabled:
                gc.enable()

    def _parse_chunk(self, buf: bytes, start: int, end: int) -> None:
        # normalise: chunk must start with "\n- job_id:" so every line begins with "\n"
        while end > start and buf[end - 1] in b" \t\r\n":
            end -= 1
        chunk = buf[start:end] if buf[start] == 10 else b"\n" + buf[start:end]
        if self._previous is not None and self._reuse(chunk):
            return
        if self._fast(chunk):
            return
        self._robust(buf, start, end)

    def _by_digest(self) -> dict[int, Entry]:
        """The previous read's entries of the current target by the digest of their text."""
        index = self._digests.get(self._target)
        if index is None:
            prev = self._previous.get(self._target, {}) if self._previous is not None else {}
            entries = list(prev.values())
            index = self._digests[self._target] = dict(
                zip(map(_DIGEST, entries), entries, strict=True))
            index.pop(0, None)  # entries parsed without a digest are never reused
        return index

    def _reuse(self, chunk: bytes) -> bool:
        """Digest every entry; take unchanged ones from the previous read, parse the rest.

        An entry is looked up by the digest of its whole text, id line included: equal
        digests mean the same id with the same counters, so no id needs to be decoded, and
        every step is a C-level map over the chunk's entries.
        """
        pieces = chunk.split(b"\n- job_id:")
        if pieces[0]:
            return False
        del pieces[0]
        hashes = list(map(hash, pieces))
        before = list(map(self._by_digest().get, hashes))
        fresh = list(map(is_, before, repeat(None)))
        if any(fresh):
            changed = list(compress(pieces, fresh))
            ids = [p[:nl] if (nl := p.find(b"\n")) >= 0 else p for p in changed]
            if not self._fast(b"\n- job_id:" + b"\n- job_id:".join(changed),
                              list(compress(hashes, fresh)), ids):
                return False
        self._emit(list(filter(None, before)))
        return True

    def _fast(self, chunk: bytes, digests: list[int] | None = None,
              ids: list[bytes] | None = None) -> bool:
        """Parse a chunk of well-formed ASCII entries in C-speed passes; False: not for us.

        `ids`: the text after `- job_id:` of each entry, when the caller has it already.
        """
        if not chunk.isascii() or b"\x00" in chunk:
            return False  # non-ASCII or NUL in ids: the robust path cleans them
        compact = chunk.translate(None, _SQUEEZE)
        if ids is None:
            # ids from the unsqueezed text (an id may hold spaces)
            ids = _IDS.findall(chunk)
        if not ids or len(ids) != compact.count(b"\n-job_id:"):
            return False
        shape = _shape_of(compact)
        if shape is not None:
            out = self._shaped(shape, compact, ids, digests)
            if out is not None:
                self._emit(out)
                return True
        try:
            return self._generic(compact, ids, digests)
        except ValueError:
            return False  # a number int() refuses (thousands of digits): the robust path

    def _shaped(self, shape: _Shape, compact: bytes, ids: list[bytes],
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
            return self._build_shaped(shape, compact, rows, cols, ids, digests)
        except ValueError:
            return None  # a number int() refuses (thousands of digits): damage, robust path

    def _build_shaped(self, shape: _Shape, compact: bytes, rows: list, cols: list,
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
            if max(max(col(i_min)), max(col(i_max)), max(col(i_sum))) > _I64_MAX or (
                    i_sumsq >= 0 and max(col(i_sumsq)) > _U64_MAX):
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
        return list(map(Entry, repeat(self._target, n), raws, job_ids, snaps, starts,
                        repeat(shape.names, n), samples, stats,
                        digests if digests is not None else repeat(0, n)))

    def _generic(self, compact: bytes, ids: list[bytes], digests: list[int] | None) -> bool:
        """Entries of mixed layouts: one findall match per line, sliced per entry."""
        rows = _FAST.findall(compact)
        n = len(rows)
        if n == 0:
            return False
        starts = list(compress(range(n), map(_COL_ID, rows)))
        if not starts or starts[0] != 0 or len(ids) != len(starts):
            return False
        n_time_lines = n_hists = 0
        starts.append(n)
        target = self._target
        out: list[Entry] = []
        layouts = self._blayouts
        last_nm: tuple[bytes, ...] = ()
        last_lay: tuple[tuple[str, ...], tuple[int, ...]] = ((), ())
        for e in range(len(starts) - 1):
            a, b = starts[e], starts[e + 1]
            _, snap_s, start_s, elapsed_s = rows[a][:4]
            n_time_lines += (snap_s != b"") + (start_s != b"") + (elapsed_s != b"")
            rws = rows[a + 1 : b]
            if not rws:
                return False  # an entry without counters: truncated or interleaved
            bnm = tuple(map(_COL_NAME, rws))
            if bnm == last_nm:
                lay = last_lay
            else:
                lay = layouts.get(bnm)
                if lay is None:
                    if b"" in bnm:
                        return False
                    lay = layouts[bnm] = _layout(tuple(x.decode() for x in bnm))
                last_nm, last_lay = bnm, lay
            nm, bidx = lay
            stats: dict[str, ByteStats] = {}
            for i in bidx:
                _, _, _, _, _, smp, mn, mx, sm, sq, h = rws[i]
                if not sm:
                    return False  # a byte counter without its statistics: damaged
                if h:
                    n_hists += 1
                try:
                    hist = _hist_bytes(h[1:-1]) if h else None
                except ValueError:
                    return False  # a damaged histogram: the robust path reports it
                bs = ByteStats(
                    int(smp), int(mn), int(mx), int(sm), int(sq) if sq else None, hist)
                if max(bs[:4]) > _I64_MAX or (bs.sumsq or 0) > _U64_MAX:
                    return False  # beyond what Lustre and bigint hold: the robust path
                stats[nm[i]] = bs
            raw = ids[e].strip().decode("ascii")
            snap_t = float(snap_s) if snap_s else None
            start_t = float(start_s) if start_s else None
            if (snap_t or 0.0) > MAX_TIME or (start_t or 0.0) > MAX_TIME:
                return False  # a damaged time: the robust path reports it
            try:
                values = counts(map(int, map(_COL_SAMPLES, rws)))
            except OverflowError:
                return False  # a value beyond bigint: the robust path reports it
            out.append(
                Entry(target, raw, decode_job_id(raw), snap_t, start_t, nm, values, stats,
                      digests[e] if digests is not None else 0)
            )
        # every line must have been taken by exactly one branch and every counter line must
        # be complete (a cut line still matches the branch's prefix: its closing brace is
        # missing), else the robust path decides
        if n + n_time_lines != compact.count(b"\n"):
            return False
        if n - len(out) + n_hists != compact.count(b"}"):
            return False
        if digests is not None and len(digests) != len(out):
            return False
        self._emit(out)
        return True

    def _emit(self, entries: list[Entry]) -> None:
        dst = self._targets.setdefault(self._target, [])
        seen = self._seen.setdefault(self._target, set())
        ids = [e.raw_id for e in entries]
        fresh = set(ids)
        if len(fresh) == len(ids) and seen.isdisjoint(fresh):
            seen |= fresh
            dst.extend(entries)
            return
        # duplicates (interleaved reads, or ids that 2.12 printed alike): keep the first
        self._damaged.add(self._target)
        for e in entries:
            if e.raw_id in seen:
                self._problems.append(
                    ParseProblem(self._target, 0, e.raw_id, "duplicate job_id in target", "")
                )
                continue
            seen.add(e.raw_id)
            dst.append(e)

    # -- robust path -------------------------------------------------------------------------
    def _robust(self, buf: bytes, start: int, end: int) -> None:
        base = self._lineno(buf, start)
        lines = _decode_bytes(buf[start:end]).split("\n")
        # rejoin hard-wrapped lines: a line continuing an unbalanced `{`
        logical: list[tuple[int, str]] = []
        for i, line in enumerate(lines):
            if (logical and logical[-1][1].count("{") > logical[-1][1].count("}")
                    and not _R_LINE_START.match(line)):
                ln, prev = logical[-1]
                logical[-1] = (ln, prev.rstrip() + " " + line.strip())
            else:
                logical.append((base + i, line))
        out: list[Entry] = []
        cur: dict | None = None

        def close() -> None:
            nonlocal cur
            if cur is None:
                return
            if not cur["names"] and not cur["broken"]:
                self._problems.append(ParseProblem(self._target, cur["line"], cur["raw"],
                                                   "entry without counters", ""))
                cur["broken"] = True
            if cur["broken"]:
                self._broken.setdefault(self._target, set()).add(cur["raw"])
                self._damaged.add(self._target)
            else:
                lay = _layout(tuple(cur["names"]))
                try:
                    values = counts(cur["samples"])
                except OverflowError:
                    self._problems.append(ParseProblem(
                        self._target, cur["line"], cur["raw"],
                        "counter value beyond the bigint range", ""))
                    self._broken.setdefault(self._target, set()).add(cur["raw"])
                    self._damaged.add(self._target)
                else:
                    out.append(
                        Entry(self._target, cur["raw"], decode_job_id(cur["raw"]), cur["snap"],
                              cur["start"], lay[0], values, cur["stats"]))
            cur = None

        def problem(lineno: int, text: str, msg: str) -> None:
            raw = cur["raw"] if cur is not None else None
            self._problems.append(ParseProblem(self._target, lineno, raw, msg, text.strip()[:200]))

        for lineno, line in logical:
            if not line.strip() or line.strip() == "job_stats:":
                continue
            m = _R_JOBID.match(line)
            if m:
                close()
                cur = {"raw": clean_id(m.group(1)), "line": lineno, "snap": None,
                       "start": None, "names": [], "samples": [], "stats": {},
                       "broken": False}
                continue
            if cur is None:
                if line.strip() != "job_stats:":
                    self._damaged.add(self._target)
                    self._problems.append(ParseProblem(self._target, lineno, None,
                                                       "text outside any entry", line[:200]))
                continue
            m = _R_TIME.match(line)
            if m:
                value = float(m.group(2))
                if value > MAX_TIME and m.group(1) in ("snapshot_time", "start_time"):
                    problem(lineno, line, f"{m.group(1)} beyond year 9999 ignored")
                elif m.group(1) == "snapshot_time":
                    cur["snap"] = value
                elif m.group(1) == "start_time":
                    cur["start"] = value
                continue
            m = _R_COUNTER.match(line)
            if m:
                name, fields = m.group(1), _counter_fields(m.group(2))
                if fields is None or "samples" not in fields:
                    problem(lineno, line, f"malformed counter {name!r}")
                    cur["broken"] = True
                    continue
                if "out_of_range" in fields:
                    problem(lineno, line, f"counter {name!r}: {fields['out_of_range']} beyond "
                            "the bigint range")
                    cur["broken"] = True
                    continue
                if name in cur["names"]:
                    problem(lineno, line, f"counter {name!r} printed twice")
                    cur["broken"] = True
                    continue
                cur["names"].append(name)
                cur["samples"].append(fields["samples"])
                if name.endswith("_bytes"):
                    if "sum" not in fields:
                        problem(lineno, line, f"byte counter {name!r} without sum")
                        cur["broken"] = True
                        continue
                    cur["stats"][name] = ByteStats(
                        fields["samples"], fields.get("min"), fields.get("max"), fields["sum"],
                        fields.get("sumsq"), fields.get("hist"),
                    )
                continue
            if _R_SCALAR.match(line) and "{" not in line and "}" not in line:
                # an unknown scalar field of a future release: harmless, but say so
                problem(lineno, line, "unknown field ignored")
                continue
            problem(lineno, line, "unparseable line")
            cur["broken"] = True
        close()
        self._emit(out)


def _counter_fields(inner: str) -> dict | None:
    """`samples: 5, unit: bytes, min: 1, ..., hist: { 4K: 3 }` -> dict, or None if broken."""
    fields: dict = {}
    h = _R_HIST.search(inner)
    if h:
        fields["hist"] = _hist(h.group(1))
        if len(fields["hist"]) < h.group(1).count(":") or any(
                v > _U64_MAX for _, v in fields["hist"]):
            return None  # a bucket that could not be read: damage, not silently dropped
        inner = inner[: h.start()] + inner[h.end():]
    elif "hist" in inner:
        return None
    for part in inner.split(","):
        part = part.strip()
        if not part:
            continue
        m = _R_FIELD.match(part)
        if not m:
            # glued `max:16777216` is handled by \s*; anything else is damage
            return None
        key, val = m.group(1), m.group(2)
        if key in fields or key == "hist":
            return None  # a field printed twice (or a second histogram): damage
        if key == "unit":
            fields["unit"] = val
            continue
        if not (val.isascii() and val.isdigit()) or len(val) > _MAX_DIGITS:
            return None  # not a number, or longer than any u64 (and int()'s digit limit)
        value = int(val)
        if value > (_U64_MAX if key == "sumsq" else _I64_MAX):
            fields["out_of_range"] = key
        fields[key] = value
    return fields


def _line_end(buf: bytes, pos: int, end: int) -> int:
    nl = buf.find(b"\n", pos, end)
    return end if nl < 0 else nl


def parse(text: str | bytes, default_target: str = UNKNOWN_TARGET,
          previous: Mapping[str, Mapping[str, Entry]] | None = None) -> ParseResult:
    """Parse one complete lctl output (or one job_stats file when `default_target` is given)."""
    return Parser(default_target, previous).feed(text).finish()


def parse_stream(pieces: Iterable[str | bytes], default_target: str = UNKNOWN_TARGET,
                 previous: Mapping[str, Mapping[str, Entry]] | None = None) -> ParseResult:
    """Parse output that arrives in pieces (a pipe), keeping memory bounded."""
    p = Parser(default_target, previous)
    for piece in pieces:
        p.feed(piece)
    return p.finish()
