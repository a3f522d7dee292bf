"""Byte-level damage of real-format job_stats samples, and what a parse must still promise.

Shared by the hypothesis property (tests/parse/test_mutations.py) and the long fuzz run
(bench/fuzz_jobstats.py): a mutation is a list of (operation, position, argument) applied
to the bytes of a sample; `check` says what is wrong with a parse of the result.
"""

from __future__ import annotations

import random
import re

from slurm_io.model import ParseResult
from slurm_io.parse.jobstats import MAX_TIME
from slurm_io.text import needs_cleaning
from tests.parse import samples

SAMPLES: tuple[bytes, ...] = tuple(
    s.encode() for s in (samples.V2_10_OST, samples.V2_14_MDT, samples.V2_15_0_OST,
                         samples.V2_15_2_OST, samples.V2_16_LCTL, samples.WRAPPED,
                         samples.V2_10_OST + samples.V2_16_LCTL))
# bytes users and damage put into lctl's output: NUL, a CESU surrogate, bytes that are not
# UTF-8, valid UTF-8, the grammar's own punctuation, huge numbers, Unicode digits
INTERESTING: tuple[bytes, ...] = (
    b"\x00", b"\xed\xa0\x80", b"\xff", b"\xfe\xff", b"\xc3\xa9", b"\xc3", b"{", b"}", b":",
    b",", b"\n", b" ", b"\t", b"\r", b"-", b"\"", b"\\x", b"\\x00", b"\\xff", b"9" * 25,
    b"18446744073709551616", b"9223372036854775808", b"\xd9\xa3", b"\xc2\xb2",
    b"- job_id: ", b"job_stats:", b"obdfilter.x-OST0009.job_stats=", b"hist: { 4K: 1 }",
    b"snapshot_time: 99999999999999999999", b"start_time: 1e9",
)
OPS = ("flip", "insert", "delete", "duplicate", "truncate", "swap")
_ID_LINE = re.compile(rb"^\s*-\s*job_id\s*:", re.M)


def mutate(data: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    """Apply (operation, position, argument) mutations; positions wrap around the data."""
    buf = bytearray(data)
    for op, pos, arg in ops:
        n = len(buf)
        p = pos % (n + 1)
        if op == "flip" and n:
            buf[p % n] = arg % 256
        elif op == "insert":
            buf[p:p] = INTERESTING[arg % len(INTERESTING)]
        elif op == "delete":
            del buf[p:p + arg % 64]
        elif op == "duplicate":
            buf[p:p] = buf[p:p + arg % 200]
        elif op == "truncate":
            del buf[p:]
        elif op == "swap" and n:
            lines = bytes(buf).split(b"\n")
            i, j = pos % len(lines), arg % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
            buf = bytearray(b"\n".join(lines))
    return bytes(buf)


def random_ops(rng: random.Random, max_ops: int = 5) -> list[tuple[str, int, int]]:
    return [(rng.choice(OPS), rng.randrange(1 << 16), rng.randrange(1 << 16))
            for _ in range(rng.randint(1, max_ops))]


def check(data: bytes, r: ParseResult) -> list[str]:
    """What is wrong with `r`, the parse of `data` (empty: nothing).

    Every entry must be storable as it is (text valid UTF-8 without NUL, times a timestamptz
    holds, numbers a bigint holds), and every entry start must give an entry or a counted
    problem: nothing disappears silently.
    """
    wrong = []
    for target, entries in r.targets.items():
        if needs_cleaning(target):
            wrong.append(f"target {target!r} is not storable text")
        for e in entries:
            for text in (e.raw_id, e.job_id, *e.names):
                if needs_cleaning(text):
                    wrong.append(f"{text!r} is not storable text")
            for t in (e.snapshot_time, e.start_time):
                if t is not None and not 0 <= t <= MAX_TIME:
                    wrong.append(f"time {t!r} of {e.raw_id!r} cannot be stored")
            for s in e.stats.values():
                for v in (s.samples, s.min, s.max, s.sum):
                    if v is not None and not 0 <= v < 1 << 63:
                        wrong.append(f"value {v} of {e.raw_id!r} beyond bigint")
                if s.hist is not None and not (isinstance(s.hist, tuple) and all(
                        isinstance(x, tuple) and len(x) == 2 for x in s.hist)):
                    wrong.append(f"histogram {s.hist!r} of {e.raw_id!r} is not (label, count)s")
                    continue
                for label, _ in s.hist or ():
                    if needs_cleaning(label):
                        wrong.append(f"histogram label {label!r} is not storable text")
    starts = len(_ID_LINE.findall(data))
    if r.n_entries + len(r.problems) < starts:
        wrong.append(f"{starts} entry starts, but {r.n_entries} entries and "
                     f"{len(r.problems)} problems")
    return wrong
