"""Parser for `lctl get_param mdt.*.job_stats obdfilter.*.job_stats` of Lustre 2.10 .. 2.17.

Why not YAML: several releases do not print valid YAML (2.15.0's unindented time lines,
2.15.2's escapes, glued `max:16777216`, hard-wrapped lines), YAML 1.1 mangles ids such as
`12345:30`, and a YAML loader runs at ~1 MB/s where an OSS prints hundreds of MB per read.

This is the fast parser behind the public names (`parse`, `parse_stream`, `Parser`); what
the output means is stated by the reference parser (jobstats_reference), and the two are
tested to agree (tests/parse/test_reference.py). Per chunk of ~1 MiB of entries:

* unchanged entries are taken from the previous read by the digest of their text (`reuse`);
* the fast passes (_jobstats_fast) parse the chunk in C-speed steps: ONE compiled `findall`
  over the chunk, matches transposed into columns; they only accept a chunk when every line
  was matched by exactly one pattern branch and every byte-counter line carried its full
  statistics;
* otherwise the chunk goes to the reference's line reader, which rejoins hard-wrapped lines,
  tolerates odd spacing and tabs, keeps unknown counters, and isolates a broken entry
  (counted as a ParseProblem) without losing its neighbours.

The parser is incremental (`Parser.feed`) so a collector can parse lctl's output while it is
being read, keeping memory bounded by the chunk size rather than the output size.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import attrgetter, is_

from slurm_io.model import Entry, ParseProblem, ParseResult
from slurm_io.parse import _jobstats_fast as fast
from slurm_io.parse._jobstats_base import (
    HEADER,
    MAX_TIME,
    UNKNOWN_TARGET,
    clean_id,
    decode_bytes,
    decode_job_id,
    target_of_param,
)
from slurm_io.parse.jobstats_reference import read_entries

__all__ = ["MAX_TIME", "UNKNOWN_TARGET", "Parser", "clean_id", "decode_job_id", "parse",
           "parse_stream", "target_of_param"]

CHUNK_CHARS = 1 << 20  # bytes of entries per fast-path chunk
_DIGEST = attrgetter("digest")
# the shape of a chunk's first entry (a module name, so a test can turn the shaped pass off)
_shape_of = fast.shape_of


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
            m = HEADER.fullmatch(buf, line_start, _line_end(buf, h, end))
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
                                 decode_bytes(s[:200]))
                )

    def _lineno(self, buf: bytes, pos: int) -> int:
        return self._line + buf.count(b"\n", 0, pos)

    def _problem(self, raw_id: str | None, buf: bytes, start: int, end: int, msg: str) -> None:
        self._problems.append(
            ParseProblem(self._target, self._lineno(buf, start), raw_id, msg,
                         decode_bytes(buf[start:end][:200]))
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
        compact = chunk.translate(None, fast.SQUEEZE)
        if ids is None:
            # ids from the unsqueezed text (an id may hold spaces)
            ids = fast.IDS.findall(chunk)
        if not ids or len(ids) != compact.count(b"\n-job_id:"):
            return False
        if not fast.only_grammar_bytes(compact, ids):
            return False  # a stray byte in a counter line: the reference says what it is
        shape = _shape_of(compact)
        if shape is not None:
            out = fast.shaped(self._target, shape, compact, ids, digests)
            if out is not None:
                self._emit(out)
                return True
        try:
            return self._generic(compact, ids, digests)
        except ValueError:
            return False  # a number int() refuses (thousands of digits): the robust path

    def _generic(self, compact: bytes, ids: list[bytes], digests: list[int] | None) -> bool:
        """Entries of mixed layouts, one match per line (_jobstats_fast.generic)."""
        out = fast.generic(self._target, self._blayouts, compact, ids, digests)
        if out is None:
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

    # -- the reference's line reader --------------------------------------------------------
    def _robust(self, buf: bytes, start: int, end: int) -> None:
        found = read_entries(self._target, self._lineno(buf, start),
                             decode_bytes(buf[start:end]))
        self._problems.extend(found.problems)
        if found.broken:
            self._broken.setdefault(self._target, set()).update(found.broken)
        if found.damaged:
            self._damaged.add(self._target)
        self._emit(found.entries)


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
