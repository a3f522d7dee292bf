"""Jobs whose processes print no id (attribute.leaks): each one's ratio of id-less to own
bytes, fitted from the node's read intervals, and the split with the leaks first, in tables.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s, the collectors read every 120 s
(test_evidence.py). Job 1 leaks: in every read in which it moves bytes by its id on an OST,
the uid's `:uid:host` entry moves as many there. Job 2 does not.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.leaks import (
    LONG_BESIDE,
    MIN_POINTS,
    NodeBlind,
    fit,
    in_long_read,
    leaked,
    leaks_first,
    with_leaks,
)
from tests.attribute.test_evidence import READ, WRITE, A, B, direct_around, ev, row

OSTS = ("fs-OST0000", "fs-OST0001", "fs-OST0002")


def history(reads=range(2400, 5600, 120), *, leak=1.0, episode=None, length=120):
    """Both jobs' own rows and the blind deltas of the reads starting at `reads`: job 1
    writes 1000 + 100 k and job 2 500 + 300 k bytes per read, on OSTs in turn (k = the
    read's number, so their bytes do not move together); the blind delta is job 1's bytes
    times `leak`, plus 50000 in the read starting at `episode` (a node-wide stretch of
    missing ids begun in it); each read `length` seconds long."""
    own, blind = [], []
    for k, t in enumerate(reads):
        target = OSTS[k % 3]
        w1, w2 = 1000 + 100 * k, 500 + 300 * k
        own += [row(t, t + length, job=1, target=target, wb=w1),
                row(t, t + length, job=2, target=target, wb=w2)]
        extra = 50000 if t == episode else 0
        blind.append(row(t, t + length, target=target, wb=round(leak * w1) + extra))
    return own, blind


def ratios(own, blind):
    return fit(NodeBlind("n1", blind), 0.0, 1e9, [1, 2], ev(*own))


def test_the_fit_finds_the_job_that_leaks():
    got = ratios(*history())
    assert got[1] == pytest.approx(1.0, abs=1e-3)
    assert got[2] == pytest.approx(0.0, abs=1e-3)


def test_a_half_leak_is_a_ratio_of_one_half():
    got = ratios(*history(leak=0.5))
    assert got[1] == pytest.approx(0.5, abs=1e-3)
    assert got[2] == pytest.approx(0.0, abs=1e-3)


def test_a_stretch_of_missing_ids_begun_in_one_read_does_not_pull_the_ratios():
    got = ratios(*history(episode=3600))
    assert got[1] == pytest.approx(1.0, abs=1e-3)
    assert got[2] == pytest.approx(0.0, abs=1e-3)


def test_no_leak_where_no_blind_byte_moves_next_to_own_ones():
    # the reads in which a job moved bytes by its id and nothing blind are evidence too
    assert ratios(*history(leak=0.0)) == {1: 0.0, 2: 0.0}


def test_too_few_reads_with_own_bytes_say_nothing():
    own, blind = history(reads=range(2400, 2400 + 120 * (MIN_POINTS - 1), 120))
    assert ratios(own, blind) == {}


def test_blind_bytes_on_another_ost_or_in_another_read_are_not_paired():
    # job 1's rows on OST0000, the blind bytes on OST0001: nothing to pair them with
    own = [row(t, t + 120, job=1, target="fs-OST0000", wb=1000) for t in range(2400, 4800, 120)]
    blind = [row(t, t + 120, target="fs-OST0001", wb=1000) for t in range(2400, 4800, 120)]
    assert ratios(own, blind) == {1: 0.0, 2: 0.0}


def test_an_outages_long_read_is_no_evidence_of_a_leak():
    # a 22-minute read holds own bytes and blind ones because the ids went missing in it
    own, blind = history(reads=range(2400, 2400 + 1320 * MIN_POINTS, 1320), length=1320)
    assert ratios(own, blind) == {}


DELTA = row(4000, 4120, wb=3000)

# case: (the jobs' own rows in the delta's read, ratios, what each is expected to leak)
LEAKED = {
    "the ratio times its own bytes on the delta's target": (
        (row(4000, 4120, job=1, wb=2000), row(4000, 4120, job=2, wb=6000)),
        {1: 1.0, 2: 0.0}, {1: 2000.0}),
    "own bytes on another OST do not count": (
        (row(4000, 4120, job=1, target="fs-OST0001", wb=2000),), {1: 1.0, 2: 0.0}, {}),
    "no job leaks: nothing": ((row(4000, 4120, job=1, wb=2000),), {1: 0.01, 2: 0.0}, {}),
    "the other facet's bytes do not count": (
        (row(4000, 4120, job=1, rb=2000),), {1: 1.0, 2: 0.0}, {}),
}


@pytest.mark.parametrize("case", LEAKED.values(), ids=LEAKED.keys())
def test_what_each_job_leaked_in_the_delta(case):
    rows, found, want = case
    assert leaked(DELTA, WRITE, [1, 2], found, ev(*rows)) == pytest.approx(want)


# case: (the other rules' fractions, leaks expected, the delta's amount, the split)
WITH_LEAKS = {
    "the leaks explain it all": ({1: 0.5, 2: 0.5}, {1: 3000.0}, 3000.0, {1: 1.0, 2: 0.0}),
    "more leak expected than moved: by the leaks": (
        {1: 0.5, 2: 0.5}, {1: 4000.0, 2: 2000.0}, 3000.0, {1: 2 / 3, 2: 1 / 3}),
    # 1000 leaked by job 1; the 2000 beyond (an episode begun in the read) by the rules
    "what exceeds the leaks goes by the other rules": (
        {1: 0.25, 2: 0.75}, {1: 1000.0}, 3000.0, {1: 1 / 3 + 2 / 3 * 0.25, 2: 2 / 3 * 0.75}),
    "no leak: the rules' split": ({1: 0.25, 2: 0.75}, {}, 3000.0, {1: 0.25, 2: 0.75}),
}


@pytest.mark.parametrize("case", WITH_LEAKS.values(), ids=WITH_LEAKS.keys())
def test_the_leaks_come_first_and_the_rules_divide_the_rest(case):
    fractions, leak, amount, want = case
    got = with_leaks(fractions, leak, amount)
    assert got == pytest.approx(want)
    assert sum(got.values()) == pytest.approx(1.0)


def test_a_delta_next_to_a_leaking_and_a_clean_job_goes_to_the_leaking_one():
    own, blind = history()
    # the read from 3960: job 1 wrote 2300 bytes by its id on fs-OST0001, job 2 4400
    (delta,) = [d for d in blind if d.ts_start == 3960]
    e, leaks = ev(*own), NodeBlind("n1", blind)
    without = split(delta, WRITE, [A, B], e, [(2400.0, 5600.0)], 10000.0)
    with_them = split(delta, WRITE, [A, B], e, [(2400.0, 5600.0)], 10000.0, leaks)
    assert without.fractions[2] > 0.5  # by their rates, job 2 moved more
    assert with_them == (pytest.approx({1: 1.0, 2: 0.0}), EVIDENCE)


def test_only_an_osts_bytes_are_weighed_by_leaks():
    own, blind = history()
    e, leaks = ev(*own), NodeBlind("n1", blind)
    mdt = row(4000, 4120, target="fs-MDT0000", opens=5)
    assert leaks_first(mdt, 2, [1, 2], leaks, e, {1: 0.5, 2: 0.5}) is None
    assert leaks_first(DELTA, READ, [1, 2], None, e, {1: 0.5, 2: 0.5}) is None
    assert leaks_first(DELTA, 2, [1, 2], leaks, e, {1: 0.5, 2: 0.5}) is None
    assert leaks_first(row(3960, 4080, target="fs-OST0001", wb=2300), WRITE, [1, 2], leaks,
                       e, {1: 0.5, 2: 0.5}) == pytest.approx({1: 1.0, 2: 0.0})


def test_a_ratio_learnt_around_an_outage_holds_in_its_long_read():
    # the fit leaves the 22-minute read out; job 1's ratio from the reads around it still
    # says what its id-less processes moved next to its own bytes in it
    own, blind = history(reads=[*range(2400, 3600, 120), *range(4920, 6000, 120)])
    own += [row(3600, 4920, job=1, wb=5000), row(3600, 4920, job=2, wb=5000)]
    delta = row(3600, 4920, wb=8000)
    e, leaks = ev(*own), NodeBlind("n1", blind)
    got = leaks_first(delta, WRITE, [1, 2], leaks, e, {1: 0.0, 2: 1.0})
    # job 1: its own 5000 first; the 3000 beyond by the other rules (all job 2's here)
    assert got == pytest.approx({1: 5000 / 8000, 2: 3000 / 8000})


LONG = row(3600, 4920, wb=6000)  # a blind delta read over 22 minutes (an outage)

# case: (the delta, the jobs' own rows, the split by what each printed beside it)
IN_LONG_READ = {
    "in proportion to what each printed on the delta's OST in the read": (
        LONG, (row(3600, 4920, job=1, wb=3000), row(3600, 4920, job=2, wb=1000)),
        {1: 0.75, 2: 0.25}),
    "a job that printed on another OST only: nothing": (
        LONG, (row(3600, 4920, job=1, wb=3000),
               row(3600, 4920, job=2, target="fs-OST0001", wb=9000)), {1: 1.0, 2: 0.0}),
    "nobody printed on the delta's OST: the other rules": (
        LONG, (row(3600, 4920, job=1, target="fs-OST0001", wb=3000),), None),
    "over LONG_BESIDE times what they printed: a phase no row shows, the other rules": (
        row(3600, 4920, wb=round(LONG_BESIDE * 1000 + 1)),
        (row(3600, 4920, job=1, wb=1000),), None),
    "the other facet's bytes do not count": (
        LONG, (row(3600, 4920, job=1, rb=3000),), None),
    "a read of the usual length: the other rules": (
        row(3600, 3720, wb=6000), (row(3600, 3720, job=1, wb=3000),), None),
}


@pytest.mark.parametrize("case", IN_LONG_READ.values(), ids=IN_LONG_READ.keys())
def test_in_an_outages_long_read_the_blind_bytes_go_with_the_own_bytes_beside_them(case):
    delta, rows, want = case
    got = in_long_read(delta, WRITE, [1, 2], ev(*rows))
    if got is not None:  # weights: the split is their shares
        got = {j: v / sum(got.values()) for j, v in got.items()}
    assert got == (None if want is None else pytest.approx(want))


def test_in_a_long_read_the_split_follows_the_bytes_beside_it():
    # the rates around say job 2 writes ten times more; inside the outage's read only
    # job 1 printed on the delta's OST, next to the blind bytes
    own = [*direct_around(1, 0, 3600, per_read=100), *direct_around(2, 0, 3600, per_read=1000),
           row(3600, 4920, job=1, wb=3000),
           row(3600, 4920, job=2, target="fs-OST0001", wb=9000),
           *direct_around(1, 4920, 8000, per_read=100),
           *direct_around(2, 4920, 8000, per_read=1000)]
    got = split(LONG, WRITE, [A, B], ev(*own), [(3600.0, 4920.0)], 10000.0)
    assert got == (pytest.approx({1: 1.0, 2: 0.0}), EVIDENCE)
