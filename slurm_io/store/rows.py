"""Turning deltas into jobstats_delta rows (pure: no I/O, testable without a server).

The column order here is the COPY column list, so it is defined once, from the counter lists
of slurm_io.model, and the writer and the tests both use it. Zero values become NULL: most
of the ~30 operation counters of a row did not move, and a NULL costs one bit of the null
bitmap instead of 8 bytes -- that is most of the difference between a ~160-byte and a
~400-byte row.

`to_row` says what a row holds, in plain Python values; `copy_rows` makes the same rows in
the form the writer's binary COPY sends fastest (see the comment above it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from operator import itemgetter
from typing import Any

from slurm_io.model import BYTE_COUNTERS, OP_COUNTERS, ByteStats, Delta, JobId

_BASE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("ts_start", "timestamptz"),
    ("ts_end", "timestamptz"),
    ("last_update", "timestamptz"),
    ("target_id", "int4"),
    ("id_class", "int2"),
    ("job", "int8"),
    ("uid", "int4"),
    ("host_id", "int4"),
    ("flags", "int2"),
    ("raw_id", "text"),
)
_BYTE_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("", "int8"),  # sum: bytes moved
    ("_samples", "int8"),
    ("_sumsq", "float8"),  # can exceed bigint (sum of squared request sizes)
    ("_min", "int8"),
    ("_max", "int8"),
    ("_hist", "jsonb"),
)
_COLUMNS: tuple[tuple[str, str], ...] = (
    _BASE_COLUMNS
    + tuple((b + suffix, t) for b in BYTE_COUNTERS for suffix, t in _BYTE_SUFFIXES)
    + tuple((f"op_{name}", "int8") for name in OP_COUNTERS)
    + (("extra", "jsonb"), ("entry_start", "timestamptz"))
)

# Absolute column positions: where a counter's samples go, and where a byte counter's
# six-column group starts.
_N_BASE = len(_BASE_COLUMNS)
_BYTE_POS = {name: _N_BASE + i * len(_BYTE_SUFFIXES) for i, name in enumerate(BYTE_COUNTERS)}
_SAMPLES_POS = {name: pos + 1 for name, pos in _BYTE_POS.items()} | {
    name: _N_BASE + len(BYTE_COUNTERS) * len(_BYTE_SUFFIXES) + i
    for i, name in enumerate(OP_COUNTERS)
}
_EXTRA_POS = len(_COLUMNS) - 2
_ENTRY_START_POS = len(_COLUMNS) - 1
_EMPTY_ROW: list[Any] = [None] * len(_COLUMNS)


def delta_columns() -> list[str]:
    """jobstats_delta columns in the order `to_row` fills them (the COPY column list)."""
    return [name for name, _ in _COLUMNS]


def delta_column_types() -> list[str]:
    """PostgreSQL type names of `delta_columns()`, for binary COPY's `set_types`."""
    return [pg_type for _, pg_type in _COLUMNS]


@lru_cache(maxsize=1024)
def _utc(ts: float) -> datetime:
    # A batch repeats the same few t0/t1 values thousands of times: cache the conversion.
    return datetime.fromtimestamp(ts, UTC)


def to_row(delta: Delta, jid: JobId, target_id: int, host_id: int | None) -> tuple[Any, ...]:
    """One COPY row (in `delta_columns()` order) for one delta and its classified id.

    Counters outside the model's KNOWN_COUNTERS go to `extra` as {name: samples} so that a
    Lustre release adding a counter loses nothing before the schema learns a column for it.
    A byte counter's min/max are extremes, not deltas, so they are kept as printed (a 0
    minimum is a real zero-length request); when the counter did not move in the interval
    its whole group is NULL. Histogram buckets that did not move are left out.

    This is the readable definition of a row; the writer sends `copy_rows`, which makes the
    same rows in the form binary COPY takes fastest, and is tested against this.
    """
    row = _EMPTY_ROW.copy()
    last = delta.last_update
    row[0] = _utc(delta.t0)
    row[1] = _utc(delta.t1)
    # Not through the cache: snapshot times differ from entry to entry.
    row[2] = datetime.fromtimestamp(last, UTC) if last is not None else None
    row[3] = target_id
    row[4] = int(jid.id_class)
    row[5] = jid.job
    row[6] = jid.uid
    row[7] = host_id
    row[8] = int(delta.flags)
    row[9] = delta.raw_id
    if delta.entry_start is not None:
        row[_ENTRY_START_POS] = datetime.fromtimestamp(delta.entry_start, UTC)
    extra: dict[str, int] | None = None
    for name, value in delta.samples.items():
        if value:
            pos = _SAMPLES_POS.get(name)
            if pos is not None:
                row[pos] = value
            elif extra is None:
                extra = {name: value}
            else:
                extra[name] = value
    row[_EXTRA_POS] = extra
    for name, stats in delta.stats.items():
        pos = _BYTE_POS.get(name)
        if pos is None:
            continue
        if not stats.samples:
            row[pos + 1] = None  # no movement: the whole group stays NULL
            continue
        row[pos] = stats.sum or None
        row[pos + 1] = stats.samples
        row[pos + 2] = float(stats.sumsq) if stats.sumsq else None
        row[pos + 3] = stats.min
        row[pos + 4] = stats.max
        if stats.hist:
            row[pos + 5] = {label: count for label, count in stats.hist if count} or None
    return tuple(row)


# --- Rows for the binary COPY ----------------------------------------------------------------
#
# `to_row` gives each column its natural Python value (datetime, dict); psycopg then adapts
# them one by one. At the ingest target (>= 150k rows/s, on the same two cores as the
# server) that path cost ~6 us of client CPU per row. `copy_rows` makes the same rows with
# values that psycopg's C dumpers write without calling back into Python: binary COPY
# fields carry no type, the server decodes each one with its column's binary input
# function, so a value only has to be sent in that type's binary format:
#   timestamptz: int8, microseconds since 2000-01-01 UTC (integer datetimes, PostgreSQL >= 10)
#   jsonb:       bytes, version byte 1 + the JSON text (what jsonb_send/jsonb_recv use)
# The stored rows are identical to those of `to_row` (tests/store/test_rows.py).

_PG_EPOCH_US = 946_684_800 * 1_000_000  # 2000-01-01T00:00:00Z in Unix microseconds
_WIRE_TYPE = {"timestamptz": "int8", "jsonb": "bytea"}


def copy_wire_types() -> list[str]:
    """Types to `set_types` for the rows of `copy_rows` (in `delta_columns()` order)."""
    return [_WIRE_TYPE.get(pg_type, pg_type) for _, pg_type in _COLUMNS]


def pg_microseconds(ts: float) -> int:
    """Unix time -> timestamptz wire value, rounded exactly as `datetime.fromtimestamp`.

    fromtimestamp splits the float with modf and rounds the fraction's microseconds half to
    even; `ts - int(ts)` is that exact fraction, and Python's round() is half-even too, so
    the stored value is the same as through a datetime (a plain round(ts * 1e6) would differ
    by 1 us for some values: the product is rounded to 0.25 us first).
    """
    whole = int(ts)
    return whole * 1_000_000 + round((ts - whole) * 1e6) - _PG_EPOCH_US


# JSON object keys known not to need escaping (histogram labels, counter names): checked once.
_PLAIN_KEYS: set[str] = set()
_MAX_CACHED = 10_000
# Histogram label tuple -> '\x01{"4K":%s,...}': a histogram is one %-format of its counts.
_HIST_FORMATS: dict[tuple[str, ...], str] = {}


def _plain_key(key: object) -> bool:
    if not isinstance(key, str) or len(_PLAIN_KEYS) >= _MAX_CACHED:
        return False
    if key.isascii() and key.isprintable() and '"' not in key and "\\" not in key:
        _PLAIN_KEYS.add(key)
        return True
    return False


def json_object(obj: dict[str, Any]) -> str:
    """json.dumps for the {str: int} objects of hist/extra, ~2x faster (0.7 vs 1.8 us).

    Anything but a dict of plain keys to exact ints goes to json.dumps.
    """
    parts = []
    for key, value in obj.items():
        if type(value) is not int or (key not in _PLAIN_KEYS and not _plain_key(key)):
            return json.dumps(obj)
        parts.append(f'"{key}":{value}')
    return "{" + ",".join(parts) + "}"


def _jsonb(obj: dict[str, Any]) -> bytes:
    return ("\x01" + json_object(obj)).encode()


def _hist_format(labels: tuple[str, ...]) -> str:
    keys = (json.dumps(label).replace("%", "%%") for label in labels)
    fmt = "\x01{" + ",".join(key + ":%s" for key in keys) + "}"
    if len(_HIST_FORMATS) < _MAX_CACHED:
        _HIST_FORMATS[labels] = fmt
    return fmt


def _hist_jsonb(hist: tuple[tuple[str, int], ...]) -> bytes | None:
    """jsonb wire value of a histogram, None when no bucket moved (as in `to_row`).

    The common case -- every bucket moved -- is one cached format string applied to the
    counts (ints, as ByteStats says); the rest goes through the dict path of `to_row`.
    """
    labels, counts = zip(*hist, strict=True)
    if all(counts):
        fmt = _HIST_FORMATS.get(labels) or _hist_format(labels)
        return (fmt % counts).encode()
    moved = {label: count for label, count in hist if count}
    return _jsonb(moved) if moved else None


_EMPTY_TAIL: list[Any] = [None] * (len(_COLUMNS) - _N_BASE)
_SAMPLES_POS_GET = _SAMPLES_POS.get
# ByteStats fields in the order copy_rows unpacks them, by name (model.py may grow fields).
_STATS_FIELDS = itemgetter(
    *(ByteStats._fields.index(name) for name in ("samples", "min", "max", "sum", "sumsq", "hist"))
)


def copy_rows(
    pairs: Iterable[tuple[Delta, JobId]],
    target_ids: dict[str, int],
    host_ids: dict[str, int],
    unknown: list[tuple[Delta, JobId]],
) -> list[list[Any]]:
    """`to_row` of each (delta, id), as binary COPY values for `copy_wire_types()`.

    A pair whose target is missing from `target_ids`, or whose host is missing from
    `host_ids`, is appended to `unknown` instead: the writer learns new names in the same
    pass (see writer._write). An id without host gives NULL. Written for speed, like
    `to_row`, but for a whole chunk of rows at once: locals instead of globals, the t0/t1
    conversion reused while they repeat (all rows of one target read share them).
    """
    out: list[list[Any]] = []
    append = out.append
    target_id = target_ids.get
    host_id = host_ids.get
    samples_pos = _SAMPLES_POS_GET
    byte_pos = _BYTE_POS
    stats_fields = _STATS_FIELDS
    tail = _EMPTY_TAIL
    epoch = _PG_EPOCH_US
    extra_pos = _EXTRA_POS
    prev_t0 = prev_t1 = None
    us0 = us1 = 0
    for delta, jid in pairs:
        target = target_id(delta.target)
        host = jid.host
        host_key = host_id(host)
        if target is None or (host_key is None and host):
            unknown.append((delta, jid))
            continue
        t0, t1, last = delta.t0, delta.t1, delta.last_update
        if t1 != prev_t1 or t0 != prev_t0:
            us0, us1, prev_t0, prev_t1 = pg_microseconds(t0), pg_microseconds(t1), t0, t1
        if last is not None:  # pg_microseconds, inlined: this one differs on every row
            whole = int(last)
            last = whole * 1_000_000 + round((last - whole) * 1e6) - epoch
        row = [us0, us1, last, target, jid.id_class, jid.job, jid.uid, host_key, delta.flags,
               delta.raw_id, *tail]
        extra: dict[str, int] | None = None
        for name, value in delta.samples.items():
            if value:
                pos = samples_pos(name)
                if pos is not None:
                    row[pos] = value
                elif extra is None:
                    extra = {name: value}
                else:
                    extra[name] = value
        if extra is not None:
            row[extra_pos] = _jsonb(extra)
        started = delta.entry_start
        if started is not None:
            row[-1] = pg_microseconds(started)
        stats = delta.stats
        if stats:
            for name, st in stats.items():
                pos = byte_pos.get(name)
                if pos is None:
                    continue
                samples, low, high, total, sumsq, hist = stats_fields(st)
                if not samples:
                    row[pos + 1] = None  # no movement: the whole group stays NULL
                    continue
                row[pos] = total or None
                row[pos + 1] = samples
                row[pos + 2] = sumsq or None  # the float8 dumper converts as float() does
                row[pos + 3] = low
                row[pos + 4] = high
                if hist:
                    row[pos + 5] = _hist_jsonb(hist)
        append(row)
    return out


_TARGET_RE = re.compile(r"(?:(?P<fs>.+)-)?(?P<kind>MDT|OST)(?P<idx>[0-9a-fA-F]{4,8})")


def parse_target_name(name: str) -> tuple[str, str, int | None]:
    """(fs, kind, index) of a Lustre target name, for the fs_target dimension.

    "scratch-OST0003" -> ("scratch", "OST", 3); the index is hexadecimal ("OST000a" is 10).
    A bare "OST0001" has no file system name (""). Anything else (MGS, client-side names,
    garbage) is kind "OTHER" with fs "" and no index: storage must accept every name it is
    handed, and guessing a file system from an unknown layout would be worse than none.
    """
    match = _TARGET_RE.fullmatch(name)
    if not match:
        return "", "OTHER", None
    return match.group("fs") or "", match.group("kind"), int(match.group("idx"), 16)

