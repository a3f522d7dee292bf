"""What both job_stats parsers share: limits, id decoding, counter layouts.

The reference parser (jobstats_reference) and the fast one (jobstats, _jobstats_fast) must
agree byte for byte, so every rule they both apply lives here once: the limits beyond which
a value is damage, how an id's quotes and `\\xHH` escapes are resolved, how a header names
its target, and the process-wide cache that makes equal counter layouts the same tuple.
A leaf module: it imports only the one text rule (slurm_io.text).
"""

from __future__ import annotations

import re

from slurm_io.text import clean

MAX_DIGITS = 20  # a u64 has at most 20 decimal digits
U64_MAX = (1 << 64) - 1
# counters, sums and extremes are stored as PostgreSQL bigint: a larger value is damage
# (Lustre would need ~9 EB on one target); a sum of squares (float8 there) may use all 64 bits
I64_MAX = (1 << 63) - 1
# a snapshot/start time beyond 9999-12-31 is damage (PostgreSQL's timestamptz, and Python's
# datetime, stop near there); such a time is dropped from the entry and reported
MAX_TIME = 253_402_300_799.0
UNKNOWN_TARGET = "unknown"

# `mdt.scratch-MDT0000.job_stats=` (bytes: the header line as lctl printed it)
HEADER = re.compile(rb"([A-Za-z0-9_.\-]+)\.job_stats=(.*)")
_ESCAPE = re.compile(rb"\\x([0-9A-Fa-f]{2})")


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


# counter layouts shared by every parser of the process, so that consecutive reads hand the
# delta engine the same tuple object (an identity test instead of a comparison)
LAYOUTS: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[int, ...]]] = {}
_MAX_LAYOUTS = 4096


def layout(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The shared (names, indexes of byte counters) of a counter layout."""
    lay = LAYOUTS.get(names)
    if lay is None:
        lay = (names, tuple(i for i, x in enumerate(names) if x.endswith("_bytes")))
        if len(LAYOUTS) < _MAX_LAYOUTS:
            LAYOUTS[names] = lay
    return lay


def decode_bytes(b: bytes) -> str:
    """Text of what lctl printed, losslessly: bytes that are not UTF-8 are carried as
    surrogates (`surrogateescape`) until `clean()` turns them into `\\xHH` where an id is
    taken; no other field can hold them (numbers and names are matched as such)."""
    return b.decode("utf-8", "surrogateescape")
