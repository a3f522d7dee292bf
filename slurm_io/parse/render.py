"""Render Entries back into the exact `lctl get_param ...job_stats` text of a Lustre release.

Why a renderer in the parse stage: the parser has to accept every release's quirks (column
widths, `max:16777216` glued to its label, unindented boot-relative 2.15.0 time lines, three
job_id quoting rules, `hist`, empty targets). Real captures of each quirk are few, so tests and
the simulator produce their input with this module, and a parser test can then assert
`parse(render(entries)) == entries` for every release. It is pure: text in, text out.

The formats follow the print code of each release (see shared LUSTRE-JOBSTATS.md) and the
SYNTH_* samples: `samples: %11llu`, `unit: %5s`, `min:%8llu`/`max:%8llu`/`sum:%16llu` (no space
after the colon up to 2.14, so an 8-digit value is glued to its label), `min: %8llu` ... with a
space from 2.15, `sumsq: %18llu` from 2.14, `hist: { 4K: n, ... }` on byte counters from 2.16.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from slurm_io.model import BYTE_COUNTERS, ByteStats, Entry

RELEASES: tuple[str, ...] = ("2.10", "2.12", "2.14", "2.15.0", "2.15.2", "2.16", "2.17")
KINDS: tuple[str, ...] = ("MDT", "OST")

_MDT_BASE: tuple[str, ...] = (
    "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr",
    "setattr", "getxattr", "setxattr", "statfs", "sync", "samedir_rename", "crossdir_rename",
)
# 2.16 inserts the parallel rename counters between samedir_rename and crossdir_rename.
_MDT_216_BASE: tuple[str, ...] = (
    *_MDT_BASE[:15], "parallel_rename_file", "parallel_rename_dir", "crossdir_rename",
)
_MDT_215_TAIL: tuple[str, ...] = (
    "read_bytes", "write_bytes", "read", "write", "punch", "migrate", "fallocate",
)
_OST_OLD: tuple[str, ...] = (
    "read_bytes", "write_bytes", "getattr", "setattr", "punch", "sync", "destroy", "create",
    "statfs", "get_info", "set_info", "quotactl",
)
_OST_NEW: tuple[str, ...] = (
    "read_bytes", "write_bytes", "read", "write", "getattr", "setattr", "punch", "sync",
    "destroy", "create", "statfs", "get_info", "set_info", "quotactl", "prealloc",
)

_COUNTERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("2.10", "MDT"): _MDT_BASE,
    ("2.12", "MDT"): (*_MDT_BASE, "read_bytes", "write_bytes", "punch"),
    ("2.14", "MDT"): (*_MDT_BASE, "read_bytes", "write_bytes", "punch", "migrate"),
    ("2.15.0", "MDT"): (*_MDT_BASE, *_MDT_215_TAIL),
    ("2.15.2", "MDT"): (*_MDT_BASE, *_MDT_215_TAIL),
    ("2.16", "MDT"): (*_MDT_216_BASE, *_MDT_215_TAIL),
    # Where 2.17 prints rename_trylocks is not in any capture we have: new counters are appended
    # to the MDT enum, so it is printed last.
    ("2.17", "MDT"): (*_MDT_216_BASE, *_MDT_215_TAIL, "rename_trylocks"),
    ("2.10", "OST"): _OST_OLD,
    ("2.12", "OST"): _OST_OLD,
    **{(r, "OST"): _OST_NEW for r in ("2.14", "2.15.0", "2.15.2", "2.16", "2.17")},
}

# Typical service times (usecs) used to derive the min/max/sum/sumsq of operation counters in
# the `usecs` releases when the caller has no real ones: the parser keeps only `samples` of ops,
# so any self-consistent values do (sumsq >= sum^2/samples, min <= mean <= max).
_LATENCY_US: dict[str, int] = {
    "open": 150, "close": 40, "mknod": 120, "link": 90, "unlink": 110, "mkdir": 180,
    "rmdir": 140, "rename": 200, "getattr": 25, "setattr": 60, "getxattr": 20, "setxattr": 70,
    "statfs": 15, "sync": 900, "read": 450, "write": 600, "punch": 52, "create": 300,
    "destroy": 250,
}
_DEFAULT_LATENCY_US = 60

_SAFE_ID_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.@-_")
_SAFE_ID_CHARS_216 = _SAFE_ID_CHARS | {ord(":")}


def _check(release: str, kind: str) -> None:
    if release not in RELEASES:
        raise ValueError(f"unknown Lustre release {release!r}; expected one of {RELEASES}")
    if kind not in KINDS:
        raise ValueError(f"unknown target kind {kind!r}; expected 'MDT' or 'OST'")


def counter_names(release: str, kind: str) -> tuple[str, ...]:
    """The counters a target of `kind` ("MDT"/"OST") prints for each entry, in print order."""
    _check(release, kind)
    return _COUNTERS[(release, kind)]


def param_name(target: str, kind: str) -> str:
    """`mdt.<target>.job_stats` or `obdfilter.<target>.job_stats`: what lctl prints before `=`."""
    return f"{'mdt' if kind == 'MDT' else 'obdfilter'}.{target}.job_stats"


def _uses_usecs(release: str) -> bool:
    return release not in ("2.10", "2.12")


def _glued(release: str) -> bool:
    # Up to 2.14 the format is `min:%8llu`: the padding is the only space after the colon.
    return release in ("2.10", "2.12", "2.14")


def _has_hist(release: str) -> bool:
    return release in ("2.16", "2.17")


def format_job_id(job_id: str, release: str) -> str:
    """The job_id as `release` prints it (quotes and escapes included).

    <= 2.15.0 print it raw with non-printable bytes as '?'; 2.15.2 escapes every byte that is
    not alnum and not in `.@-_` as \\xHH and then quotes the id; 2.16+ leaves ':' literal,
    escapes the other odd bytes and quotes when the id has a ':' or an escape, or when it
    starts with a non-alphanumeric character (`"@odd.0"` in the 2.16 sample) so that the
    YAML-like line stays a plain string.
    """
    data = job_id.encode("utf-8", "surrogateescape")
    if release in ("2.10", "2.12", "2.14", "2.15.0"):
        return "".join(chr(b) if 0x20 <= b < 0x7F else "?" for b in data)
    safe = _SAFE_ID_CHARS if release == "2.15.2" else _SAFE_ID_CHARS_216
    escaped = any(b not in safe for b in data)
    text = "".join(chr(b) if b in safe else f"\\x{b:02X}" for b in data)
    quote = escaped
    if release != "2.15.2" and data:
        quote = quote or b":" in data or not chr(data[0]).isalnum()
    return f'"{text}"' if quote else text


def _secs_nsecs(t: float) -> int:
    """Nanoseconds of `t`, split so that the fraction keeps its own float precision."""
    secs = math.floor(t)
    return secs * 1_000_000_000 + round((t - secs) * 1e9)


def _fmt_ns(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    return f"{secs}.{frac:09d}"


def _time_lines(entry: Entry, release: str, boot_time: float) -> list[str]:
    snap = entry.snapshot_time if entry.snapshot_time is not None else 0.0
    if release in ("2.10", "2.12", "2.14"):
        return [f"  {'snapshot_time:':<16} {math.floor(snap)}\n"]
    start = entry.start_time if entry.start_time is not None else snap
    if release == "2.15.0":
        # 2.15.0/2.15.1 print seconds since boot, unindented, with the colon after the padding.
        snap_ns = _secs_nsecs(snap - boot_time)
        start_ns = _secs_nsecs(start - boot_time)
        return [
            f"{'snapshot_time':<16}: {_fmt_ns(snap_ns)} secs.nsecs\n",
            f"{'start_time':<16}: {_fmt_ns(start_ns)} secs.nsecs\n",
            f"{'elapsed_time':<16}: {_fmt_ns(snap_ns - start_ns)} secs.nsecs\n",
        ]
    snap_ns = _secs_nsecs(snap)
    start_ns = _secs_nsecs(start)
    return [
        f"  {'snapshot_time:':<16} {_fmt_ns(snap_ns)} secs.nsecs\n",
        f"  {'start_time:':<16} {_fmt_ns(start_ns)} secs.nsecs\n",
        f"  {'elapsed_time:':<16} {_fmt_ns(snap_ns - start_ns)} secs.nsecs\n",
    ]


def hist_text(hist: Sequence[tuple[str, int]] | None) -> str:
    """`{ 4K: 35, 1M: 2045 }`, or `{  }` when empty, as 2.16+ print a byte histogram."""
    return "{ " + ", ".join(f"{label}: {count}" for label, count in (hist or ())) + " }"


def _derived_op_stats(name: str, samples: int) -> ByteStats:
    if samples <= 0:
        return ByteStats(0, 0, 0, 0, 0, None)
    mean = _LATENCY_US.get(name, _DEFAULT_LATENCY_US)
    if samples == 1:
        return ByteStats(1, mean, mean, mean, mean * mean, None)
    return ByteStats(samples, max(1, mean // 4), mean * 8, samples * mean,
                     2 * samples * mean * mean, None)


def _stats_part(release: str, st: ByteStats, *, hist: bool) -> str:
    mn, mx, sm = st.min or 0, st.max or 0, st.sum
    if _glued(release):
        text = f", min:{mn:8d}, max:{mx:8d}, sum:{sm:16d}"
    else:
        text = f", min: {mn:8d}, max: {mx:8d}, sum: {sm:16d}"
    if _uses_usecs(release):
        text += f", sumsq: {st.sumsq or 0:18d}"
    if hist:
        text += ", hist: " + hist_text(st.hist)
    return text


def _counter_line(entry: Entry, name: str, samples: int, release: str, kind: str) -> str:
    head = f"  {name + ':':<16} {{ samples: {samples:11d}, unit: "
    if name in BYTE_COUNTERS or name.endswith("_bytes"):
        st = entry.stats.get(name) or ByteStats(samples, 0, 0, 0, 0, None)
        st = st._replace(samples=samples)
        # 2.12 MDTs count their (Data-on-MDT) byte counters in "reqs".
        unit = "reqs" if (kind == "MDT" and not _uses_usecs(release)) else "bytes"
        return f"{head}{unit:>5}{_stats_part(release, st, hist=_has_hist(release))} }}\n"
    if not _uses_usecs(release):
        return f"{head} reqs }}\n"
    st = entry.stats.get(name) or _derived_op_stats(name, samples)
    return f"{head}usecs{_stats_part(release, st, hist=False)} }}\n"


def render_entry(entry: Entry, release: str, kind: str, *, boot_time: float = 0.0) -> str:
    """One `- job_id: ...` entry with its time lines and counter lines, newline-terminated.

    Counters are the release's own list (samples from `entry.samples`, missing ones as 0, byte
    statistics from `entry.stats`) followed by any other counter the entry names, so that
    parsers can be tested on counters they do not know. `boot_time` (epoch) is only used by
    2.15.0, which prints times relative to boot.
    """
    _check(release, kind)
    known = counter_names(release, kind)
    values = dict(zip(entry.names, entry.samples, strict=False))
    lines = [f"- {'job_id:':<16} {format_job_id(entry.job_id, release)}\n"]
    lines += _time_lines(entry, release, boot_time)
    lines += [_counter_line(entry, n, values.get(n, 0), release, kind) for n in known]
    known_set = frozenset(known)
    lines += [
        _counter_line(entry, n, values[n], release, kind)
        for n in entry.names
        if n not in known_set
    ]
    return "".join(lines)


def render_target(
    target_param: str,
    entries: Iterable[Entry],
    release: str,
    kind: str,
    *,
    boot_time: float = 0.0,
) -> str:
    """One `<param>=` block as lctl prints it; an empty target fits on one line.

    `target_param` is e.g. `obdfilter.scratch-OST0001.job_stats` (see `param_name`). An empty
    target prints `...job_stats=job_stats:`; 2.17 prints nothing after the `=`.
    """
    _check(release, kind)
    body = "".join(render_entry(e, release, kind, boot_time=boot_time) for e in entries)
    if body:
        return f"{target_param}=\njob_stats:\n{body}"
    if release == "2.17":
        return f"{target_param}=\n"
    return f"{target_param}=job_stats:\n"


def render_read(blocks: Iterable[str]) -> str:
    """The whole output of one `lctl get_param` call: its target blocks, concatenated."""
    return "".join(blocks)
