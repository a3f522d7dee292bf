"""The rules that read a blind OST delta's own interval (attribute.evidence), in tables.

Node n1, uid 1000, jobs 1 and 2 both run 0-10000 s; the blind delta is (4000, 4120] on
fs-OST0000 and the collectors read every 120 s (the setting of test_evidence.py).

- Pace: a candidate whose OSTs were blind during the delta but whose MDT was not is
  expected to have moved its metadata operations during the delta times the bytes per
  operation its I/O carried nearby; that expectation also lifts rule 3's cap on it.
- Beside: what a candidate moved by its own id on the delta's target during the delta's
  own read interval is at least its expected part.
"""

from __future__ import annotations

import pytest

from slurm_io.attribute.evidence import EVIDENCE, split
from tests.attribute.test_evidence import BOTH_OPENED, WRITE, A, B, direct_around, ev, row

MDT = "fs-MDT0000"


def phase(job: int, t_from: float, t_to: float, per_read: int, opens: int) -> list:
    """A job's own rows outside the blind read: `per_read` bytes written on fs-OST0000 and
    `opens` files opened on the MDT every 120 s."""
    return [*direct_around(job, t_from, t_to, per_read=per_read),
            *direct_around(job, t_from, t_to, per_read=opens, target=MDT, kind="opens")]


# case: (job 1's rows around, job 2's rows around, MDT opens during the blind read by job
#        1 and 2 (None: the MDT was blind too), blind bytes, job 1's share)
PACE = {
    # steady phases: 100 and 10 bytes per open, 3 and 10 opens during: 300 against 100,
    # what the rates around say as well
    "steady, pace agrees with the rates": (
        phase(1, 3400, 4720, 300, 3), phase(2, 3400, 4720, 100, 10), (3, 10), 400, 0.75),
    # job 1 wrote 100 bytes per open until 3400 and computed since (no rate within 10 min);
    # during the blind read it opens 12 files: a new I/O phase the OSTs do not show.
    # Expected 1200 against job 2's 100; rule 3 would have held job 1 to twice its
    # highest rate (600 of 1300), but its pace lifts the cap
    "a phase shown on the MDT only": (
        phase(1, 2800, 3400, 300, 3), phase(2, 3400, 4720, 100, 10), (12, 10), 1300,
        1200 / 1300),
    # the same with the MDT blind as well: no pace; rule 2 gives job 1 the burst beyond
    # job 2's rate (1100), but rule 3 holds both to twice their highest rates (600 and
    # 200 of 1300) and shares what no job showed by their peaks, 300 : 100
    "MDT blind too: rules 2 and 3": (
        phase(1, 2800, 3400, 300, 3), phase(2, 3400, 4720, 100, 10), None, 1300, 0.75),
}


@pytest.mark.parametrize("case", PACE.values(), ids=PACE.keys())
def test_a_candidate_whose_osts_were_blind_is_weighed_by_its_metadata_pace(case):
    around1, around2, during, blind_bytes, share1 = case
    rows = [*around1, *around2]
    if during is not None:
        rows += [row(4000, 4120, job=j, target=MDT, opens=n) for j, n in zip((1, 2), during,
                                                                             strict=True)]
    s = split(row(4000, 4120, wb=blind_bytes), WRITE, [A, B], ev(*rows), [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(share1)
    assert s.fractions[2] == pytest.approx(1 - share1)


# case: (bytes job 1 wrote by its id in the blind read's own interval, on which target,
#        job 1's share). Both write 100 per read around it and both opened files by their
#        id during it (neither idle); job 2 printed nothing on the OSTs then.
BESIDE = {
    "nothing beside: the rates around": (0, "fs-OST0000", 0.5),
    "beside at its rate around: the same": (100, "fs-OST0000", 0.5),
    "beside, three times its rate around": (300, "fs-OST0000", 0.75),
    "on another target: not beside these bytes": (300, "fs-OST0001", 0.5),
}


@pytest.mark.parametrize("case", BESIDE.values(), ids=BESIDE.keys())
def test_what_a_job_printed_beside_the_blind_bytes_is_at_least_its_part(case):
    nbytes, target, share1 = case
    e = ev(*direct_around(1, 3400, 4720, per_read=100),
           *direct_around(2, 3400, 4720, per_read=100), *BOTH_OPENED,
           *([row(4000, 4120, job=1, target=target, wb=nbytes)] if nbytes else []))
    s = split(row(4000, 4120, wb=400), WRITE, [A, B], e, [], now=20000)
    assert s.rule == EVIDENCE
    assert s.fractions[1] == pytest.approx(share1)
    assert s.fractions[2] == pytest.approx(1 - share1)
