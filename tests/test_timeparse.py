"""Every time form sacct accepts for -S/-E, and the mistakes people make, against a fixed now.

`now` is 2026-11-23 14:30:15 local time; expected values are local times as sacct reads them.
The real sacct of the Slurm testbed is asked too. One deliberate difference: sacct rolls an
impossible day over (02/30 is March 2nd); here it is refused, as a typo more likely than not.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from datetime import datetime

import pytest

from slurm_io.timeparse import parse_time

NOW = datetime(2026, 11, 23, 14, 30, 15).timestamp()


def local(*args: int) -> float:
    return datetime(*args).timestamp()


ACCEPTED = [
    # HH:MM[:SS][AM|PM]: today
    ("08:00", local(2026, 11, 23, 8, 0)),
    ("8:05:09", local(2026, 11, 23, 8, 5, 9)),
    ("23:59:59", local(2026, 11, 23, 23, 59, 59)),
    ("8:00pm", local(2026, 11, 23, 20, 0)),
    ("08:00 PM", local(2026, 11, 23, 20, 0)),
    ("12:30am", local(2026, 11, 23, 0, 30)),
    ("12:30PM", local(2026, 11, 23, 12, 30)),
    # MMDD[YY]: a year in the future is not meant (sacct looks into the past)
    ("1120", local(2026, 11, 20)),
    ("0105", local(2026, 1, 5)),
    ("1224", local(2025, 12, 24)),
    ("123125", local(2025, 12, 31)),
    ("022924", local(2024, 2, 29)),
    # MM/DD[/YY], MM.DD[.YY]
    ("11/20", local(2026, 11, 20)),
    ("1/5", local(2026, 1, 5)),
    ("11/20/25", local(2025, 11, 20)),
    ("11.20", local(2026, 11, 20)),
    ("11.20.25", local(2025, 11, 20)),
    ("12/01", local(2025, 12, 1)),
    # a date with a time
    ("11/20-08:00", local(2026, 11, 20, 8, 0)),
    ("11/20/25-08:00:30", local(2025, 11, 20, 8, 0, 30)),
    ("1120T8:00pm", local(2026, 11, 20, 20, 0)),
    ("11.20 noon", local(2026, 11, 20, 12, 0)),
    # YYYY-MM-DD[THH:MM[:SS]] and ISO forms sacct does not take
    ("2026-11-20", local(2026, 11, 20)),
    ("2026-11-20T08:00", local(2026, 11, 20, 8, 0)),
    ("2026-11-20T08:00:30", local(2026, 11, 20, 8, 0, 30)),
    ("2026-11-20 08:00", local(2026, 11, 20, 8, 0)),
    ("2026-1-5", local(2026, 1, 5)),
    ("2026-11-20T08:00:00.5", local(2026, 11, 20, 8, 0) + 0.5),
    ("2026-11-20T08:00:00+00:00", datetime.fromisoformat("2026-11-20T08:00:00+00:00")
     .timestamp()),
    # named days and times
    ("today", local(2026, 11, 23)),
    ("TODAY", local(2026, 11, 23)),
    ("tomorrow", local(2026, 11, 24)),
    ("midnight", local(2026, 11, 23)),
    ("noon", local(2026, 11, 23, 12)),
    ("elevenses", local(2026, 11, 23, 11)),
    ("fika", local(2026, 11, 23, 15)),
    ("teatime", local(2026, 11, 23, 16)),
    ("today teatime", local(2026, 11, 23, 16)),
    ("teatime today", local(2026, 11, 23, 16)),
    # now[{+|-}count[unit]]
    ("now", NOW),
    ("now-10", NOW - 10),
    ("now+10seconds", NOW + 10),
    ("now-5minutes", NOW - 300),
    ("now-1minute", NOW - 60),
    ("now-2hours", NOW - 7200),
    ("now-1day", NOW - 86400),
    ("now-3days", NOW - 3 * 86400),
    ("now-1week", NOW - 7 * 86400),
    ("now-2weeks", NOW - 14 * 86400),
    ("now - 2 hours", NOW - 7200),
    ("now-2h", NOW - 7200),
    ("now-1d", NOW - 86400),
    # epochs
    ("uts1795000000", 1_795_000_000.0),
    ("1795000000", 1_795_000_000.0),
    ("1795000000.25", 1_795_000_000.25),
    ("  2026-11-20  ", local(2026, 11, 20)),
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_every_sacct_time_form_is_understood(text: str, expected: float) -> None:
    assert parse_time(text, now=NOW) == expected


REFUSED = [
    ("2026-13-45", "no month 13"),
    ("2026-02-30", "no day 30 in month 2"),
    ("1345", "no month 13"),
    ("02/30", "no day 30 in month 2"),
    ("tomorrowish", "cannot understand"),
    ("yesterday", "cannot understand"),
    ("25:00", "no time 25:00"),
    ("13:00pm", "hour 13 with PM"),
    ("08:61", "no time 08:61"),
    ("now-2fortnights", "unknown unit 'fortnights'"),
    ("now-", "cannot understand"),
    ("", "empty time"),
    ("11201", "cannot understand"),
    ("2026/11/20", "cannot understand"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED, ids=[t or "empty" for t, _ in REFUSED])
def test_mistakes_raise_a_value_error_that_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as e:
        parse_time(text, now=NOW)
    assert "\n" not in str(e.value)


# -- conformance: the real sacct reads the same times ----------------------------------------
SACCT_SAID = re.compile(r"Start time \((\S+)\) requested is after end time")
# not asked: our extensions (epochs, zones, fractions, unit letters, one-digit ISO months) and
# what the testbed's Slurm 22.05 does not know yet (elevenses came with a later
# releases; 22.05 compares day words case-sensitively)
SACCT_FORMS = [t for t, _ in ACCEPTED
               if not re.search(r"uts|^\s*\d{9}|\+00:00|\.5$|\d[hd]$|-1-5|elevenses|TODAY", t)]


def _sacct_start(slurm_cluster, text: str) -> str:
    """What sacct makes of `-S text`: it names the start it understood when -E is earlier."""
    proc = subprocess.run(["sacct", "-X", "-n", "-S", text, "-E", "2000-01-01"],
                          env={**os.environ, "SLURM_CONF": slurm_cluster.env["SLURM_CONF"]},
                          capture_output=True, text=True, timeout=60, check=False)
    out = proc.stdout + proc.stderr
    m = SACCT_SAID.search(out)
    return m.group(1) if m else "refused" if "Invalid time" in out else out


def test_the_real_sacct_reads_every_sacct_form_as_we_do(slurm_cluster) -> None:
    for text in SACCT_FORMS:
        now = time.time()
        said = _sacct_start(slurm_cluster, text)
        ours = parse_time(text, now=now)
        theirs = datetime.fromisoformat(said).timestamp()
        assert abs(ours - theirs) <= 2, (text, said, datetime.fromtimestamp(ours))
    for text, _ in REFUSED:
        if text and "/30" not in text and "-30" not in text:  # sacct rolls 02/30 to 03/02
            assert _sacct_start(slurm_cluster, text) == "refused", text
