"""Hypothesis: byte-level damage of real-format samples never raises, never yields an entry
that cannot be stored, and every entry start gives an entry or a counted problem."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from slurm_io.parse.jobstats import parse
from tests.parse.mutate import OPS, SAMPLES, check, mutate

MUTATIONS = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 1 << 16),
                               st.integers(0, 1 << 16)), min_size=1, max_size=6)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SAMPLES) - 1), MUTATIONS)
@example(0, [("insert", 19, 1)])  # ED A0 80 inside the first id: used to crash the writer
@example(0, [("insert", 19, 0)])  # a NUL inside the first id: used to block the spool
@example(2, [("insert", 70, 25)])  # an Arabic-Indic digit in a time
@example(0, [("insert", 60, 30)])  # snapshot_time beyond any timestamptz
@example(4, [("duplicate", 49062, 11570), ("truncate", 1877, 36274), ("insert", 13788, 12819),
              ("swap", 14446, 49517), ("duplicate", 10384, 5464)])  # a 2nd `hist` field
def test_damaged_bytes_never_raise_and_every_bad_record_is_counted(sample, ops):
    data = mutate(SAMPLES[sample], ops)
    r = parse(data)
    assert check(data, r) == []
