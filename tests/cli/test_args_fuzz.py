"""The command line's door for text (docs/security.md, "CLI arguments"): the parsers every
`jobio` option goes through take any text a person (or a script) types and give a value or one
ValueError (the CLI's one line), never another exception; times come back finite and within
what PostgreSQL's timestamptz holds. Pure: no server."""

from __future__ import annotations

import contextlib
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_io.report.show import parse_format, parse_job_spec
from slurm_io.timeparse import parse_day, parse_time

NOW = 1_764_000_000.0
PIECES = st.sampled_from(["now", "-", "+", "1", "99999999999999999999", "days", "hours",
                          "uts", ".", ":", "T", "/", "2024", "12", "31", "teatime", "noon",
                          "midnight", "today", "e", "inf", "nan", "Z", "+01:00", " ", "\n",
                          "\x00", "٣", "_", "%"])
TEXT = st.one_of(st.text(max_size=40), st.lists(PIECES, max_size=8).map("".join))
MIN_TIME, MAX_TIME = -62_135_596_800.0, 253_402_300_799.0  # years 1 to 9999 (Python's datetime)


@settings(max_examples=500, deadline=None)
@given(TEXT)
def test_a_time_is_a_finite_moment_or_one_value_error(text: str) -> None:
    try:
        t = parse_time(text, now=NOW)
    except ValueError as e:
        assert "\n" not in str(e).replace(repr(text), "")
        return
    assert math.isfinite(t) and MIN_TIME <= t <= MAX_TIME, (text, t)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_a_day_is_a_date_or_one_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_day(text, now=NOW)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_a_job_id_argument_is_a_storable_id_or_none(text: str) -> None:
    spec = parse_job_spec(text)
    assert spec is None or 0 <= spec.number <= 2**63 - 1


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_a_format_is_columns_or_one_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        assert parse_format(text)
