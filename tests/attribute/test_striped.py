"""Rule 10 (attribute.striped): a blind delta on an OST no candidate's phase shows is weighed
by the blind bytes of the OSTs each candidate's phase shows, in the same read; in tables.

Node n1, uid 1000, a stretch of missing ids from 3998 to 4120. Job 1 wrote on fs-OST0001 by
its id until the stretch began; job 2 on fs-OST0002, and its server read a sliver by its id
9 s into the delta (rule 0 saw it busy, job 1 not). The delta weighed is (4000, 4120] on
fs-OST0000, which neither job's rows show: a phase striped over two OSTs may print on one
only before the ids go missing.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from slurm_io.attribute.leaks import NodeBlind
from slurm_io.attribute.phases import Phase
from slurm_io.attribute.striped import blind_bytes, striped, striping
from tests.attribute.test_evidence import WRITE, A, B, ev, row

OST0, OST1, OST2 = "fs-OST0000", "fs-OST0001", "fs-OST0002"
STRETCH = [(3998.0, 4120.0)]
DELTA = row(4000, 4120, wb=3800)


def blind(*per_target):
    """The uid's `:uid:host` writes in the delta's read, per (target, bytes)."""
    return NodeBlind("n1", [row(4000, 4120, target=t, wb=b) for t, b in per_target])


# each job's rows: writing by its id until the stretch; job 2's sliver inside the delta
OWN = (row(3880, 3998, job=1, target=OST1, wb=3600), row(3880, 3990, job=2, target=OST2,
                                                          wb=1500),
       row(3998, 4009, job=2, target=OST2, wb=150))
ALL = blind((OST0, 3800), (OST1, 3700), (OST2, 1600))


def phase(rate, *osts):
    return Phase(3880.0, 4120.0, rate, frozenset(osts))


MET = {1: [(phase(30.0, OST1), 120.0)], 2: [(phase(14.0, OST2), 120.0)]}
SLIVER2 = 150 * 9 / 11  # job 2's sliver by its id on fs-OST0002, the part inside the delta

# case: (the phases meeting the delta, the node's blind reads, the candidates' own rows,
# the stretch, the weights)
CASES = {
    "each by what its shown OST moved, blind or by its id": (
        MET, ALL, OWN, STRETCH, {1: 3700.0, 2: 1600.0 + SLIVER2}),
    "a phase over two OSTs: their mean": (
        {1: [(phase(30.0, OST1, OST2), 120.0)], 2: MET[2]}, ALL, OWN, STRETCH,
        {1: 2650.0, 2: 1600.0 + SLIVER2}),
    # leaky seed 7, node020: the owner's id wrote on its OST while others of its processes,
    # printing none, wrote on the delta's OST
    "a job printing by its id on its OST beside its blind processes": (
        MET, blind((OST0, 3800), (OST2, 1600)),
        (*OWN, row(4000, 4120, job=1, target=OST1, wb=2400)), STRETCH,
        {1: 2400.0, 2: 1600.0 + SLIVER2}),
    "a phase shows the delta's OST: the phases weigh it": (
        {1: [(phase(30.0, OST0, OST1), 120.0)], 2: MET[2]}, ALL, OWN, STRETCH, {}),
    "a phase shown on the MDT only: it may be anywhere": (
        {1: MET[1], 2: [(phase(None), 120.0)]}, ALL, OWN, STRETCH, {}),
    "a candidate's own row on the delta's OST at the stretch's edge": (
        MET, ALL, (*OWN, row(3880, 3990, job=2, target=OST0, wb=900)), STRETCH, {}),
    "a stretch of over 10 minutes may hide a phase": (
        MET, ALL, OWN, [(3998.0, 4700.0)], {}),
    "trickles beside the delta say nothing of it": (
        MET, blind((OST0, 3800), (OST1, 700), (OST2, 300)), OWN, STRETCH, {}),
    "no blind reads of the node (a delta weighed alone)": (MET, None, OWN, STRETCH, {}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_delta_on_an_ost_none_shows_is_weighed_by_the_shown_osts_blind_bytes(case):
    met, leaks, own, stretch, weights = case
    got = striped(DELTA, WRITE, met, leaks, [1, 2], ev(*own), stretch)
    assert got == pytest.approx(weights)


def test_rule_0_counts_busy_a_candidate_whose_osts_moved_a_quarter_of_the_delta():
    assert striping(DELTA, WRITE, {1: 3700.0, 2: 1600.0}) == {1, 2}  # 950 and more
    assert striping(DELTA, WRITE, {1: 3700.0, 2: 900.0}) == {1}


@pytest.mark.parametrize(("a", "b", "got"), [
    (4000, 4120, 3700.0),  # the whole read
    (4060, 4120, 1850.0),  # half of it
    (4120, 4240, 0.0),  # the next read: none of it
])
def test_blind_bytes_count_each_read_by_the_share_inside_the_interval(a, b, got):
    assert blind_bytes(ALL.reads[OST1], WRITE, a, b) == pytest.approx(got)


def test_the_job_writing_as_the_ids_went_missing_keeps_the_write_on_its_other_ost():
    # dense seed 1, node005: a 38.1 GiB write on OST0005 went whole to the job whose server
    # read a sliver by its id inside the delta; the owner had written on OST0006 until 2 s
    # before, and OST0006 moved 37.4 GiB blind beside it (16.4 on the other's OST0002). On
    # the code before, job 1 got 0.14 here.
    s = split(DELTA, WRITE, [A, B], ev(*OWN), STRETCH, now=20000, leaks=ALL)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(3700 / (3700 + 1600 + SLIVER2), abs=0.02)
    assert s.fractions[1] + s.fractions[2] == pytest.approx(1.0)
