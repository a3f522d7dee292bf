"""The binary COPY rows of copy_rows store exactly what to_row describes.

copy_rows sends timestamptz as int8 microseconds and jsonb as pre-encoded bytes (see
slurm_io/store/rows.py). These tests compare it with to_row, the readable definition of a
row: value by value for many generated deltas (no server), and by what PostgreSQL stores for
a varied batch written through write_batch versus a plain psycopg COPY of to_row's values.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from slurm_io.model import (
    BYTE_COUNTERS,
    OP_COUNTERS,
    Batch,
    ByteStats,
    Delta,
    DeltaFlag,
    IdClass,
    JobId,
)
from slurm_io.store.rows import (
    copy_rows,
    copy_wire_types,
    delta_column_types,
    delta_columns,
    pg_microseconds,
    to_row,
)
from slurm_io.store.writer import COPY_CHUNK_ROWS, write_batch

PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 4, 2, 10, 0, tzinfo=UTC).timestamp()
TARGETS = {"scratch-OST0000": 1, "scratch-OST0001": 2, "scratch-MDT0000": 3}
HOSTS = {"n1": 11, "n2": 12, "nœud-3": 13}
LABELS = ("4K", "8K", "64K", "1M", 'we"ird', "ünï", "50%", "%s")
UNKNOWN = ("brand_new_op", "other_new")


def _micros(dt: datetime) -> int:
    return (dt - PG_EPOCH) // timedelta(microseconds=1)


# -- timestamps ----------------------------------------------------------------------------


@given(st.floats(min_value=-2e9, max_value=4e9, allow_nan=False))
@settings(max_examples=2000)
def test_microseconds_round_like_fromtimestamp(ts: float) -> None:
    assert pg_microseconds(ts) == _micros(datetime.fromtimestamp(ts, UTC))


@pytest.mark.parametrize("frac", [0.5e-6, 1.5e-6, 2.5e-6, 0.0078125, 0.4999995, 0.9999995])
def test_microseconds_of_half_microsecond_ties_round_like_fromtimestamp(frac: float) -> None:
    for whole in (0, 1, 1_700_000_000, 1_712_052_000):
        ts = whole + frac
        assert pg_microseconds(ts) == _micros(datetime.fromtimestamp(ts, UTC))


# -- value by value ------------------------------------------------------------------------


def _counts() -> st.SearchStrategy[int]:
    return st.one_of(st.just(0), st.integers(1, 10), st.integers(1, 2**62))


def _byte_stats() -> st.SearchStrategy[ByteStats]:
    hist = st.one_of(
        st.none(),
        st.just(()),
        st.lists(st.tuples(st.sampled_from(LABELS), _counts()), max_size=6).map(tuple),
    )
    return st.builds(
        ByteStats,
        samples=_counts(),
        min=st.one_of(st.none(), st.just(0), st.integers(1, 1 << 22)),
        max=st.one_of(st.none(), st.integers(0, 1 << 22)),
        sum=_counts(),
        sumsq=st.one_of(st.none(), st.just(0), st.integers(1, 10**30)),
        hist=hist,
    )


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[Delta, JobId]:
    names = st.sampled_from(list(BYTE_COUNTERS) + list(OP_COUNTERS) + list(UNKNOWN))
    samples = draw(st.dictionaries(names, _counts(), max_size=8))
    stats = draw(st.dictionaries(st.sampled_from([*BYTE_COUNTERS, "not_bytes"]), _byte_stats(),
                                 max_size=3))
    t1 = T1 + draw(st.integers(0, 86400 * 3))
    last = draw(st.one_of(st.none(), st.floats(T1 - 3600, T1 + 3600, allow_nan=False)))
    raw = draw(st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s))
    delta = Delta(draw(st.sampled_from(sorted(TARGETS))), raw, raw, t1 - 120.25, t1, last,
                  samples, stats, draw(st.sampled_from(list(DeltaFlag))))
    jid = JobId(draw(st.sampled_from(list(IdClass))), draw(st.one_of(st.none(), _counts())),
                draw(st.one_of(st.none(), st.integers(0, 2**31 - 1))),
                draw(st.sampled_from([None, "", *HOSTS])), None, False)
    return delta, jid


def _as_to_row(value: Any, pg_type: str) -> Any:
    """A copy_rows value in to_row's terms (datetime, parsed JSON, float)."""
    if value is None:
        return None
    if pg_type == "timestamptz":
        return PG_EPOCH + timedelta(microseconds=value)
    if pg_type == "jsonb":
        assert value[:1] == b"\x01"  # jsonb binary format version
        return json.loads(value[1:])
    if pg_type == "float8":
        return float(value)
    return value


@given(st.lists(_pairs(), min_size=1, max_size=20))
@settings(max_examples=300, deadline=None)
def test_copy_rows_hold_the_values_of_to_row(pairs: list[tuple[Delta, JobId]]) -> None:
    unknown: list[tuple[Delta, JobId]] = []
    rows = copy_rows(pairs, TARGETS, HOSTS, unknown)
    assert unknown == []
    assert len(rows) == len(pairs)
    types = delta_column_types()
    for (delta, jid), row in zip(pairs, rows, strict=True):
        host = HOSTS[jid.host] if jid.host else None
        expected = list(to_row(delta, jid, TARGETS[delta.target], host))
        got = [_as_to_row(v, t) for v, t in zip(row, types, strict=True)]
        assert dict(zip(delta_columns(), got, strict=True)) == dict(
            zip(delta_columns(), expected, strict=True)
        )


def test_copy_rows_set_aside_pairs_naming_targets_or_hosts_without_id() -> None:
    def pair(target: str, host: str | None) -> tuple[Delta, JobId]:
        delta = Delta(target, "1:1:x", "1:1:x", T1 - 60, T1, None, {"open": 1}, {}, 0)
        return delta, JobId(IdClass.EXACT, 1, 1, host, None, False)

    known, no_host, new_host = pair("scratch-OST0000", "n1"), pair("scratch-OST0000", None), \
        pair("scratch-OST0000", "n9")
    new_target = pair("scratch-OST0009", "n1")
    unknown: list[tuple[Delta, JobId]] = []
    rows = copy_rows([known, new_host, no_host, new_target], TARGETS, HOSTS, unknown)
    assert [row[delta_columns().index("host_id")] for row in rows] == [11, None]
    assert unknown == [new_host, new_target]


# -- what the server stores ------------------------------------------------------------------


def _varied_pairs(n: int, seed: int = 7) -> list[tuple[Delta, JobId]]:
    """Deltas covering the NULL patterns, edge values and awkward text of real data."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        samples: dict[str, int] = {}
        for name in rng.sample([*OP_COUNTERS, *UNKNOWN], rng.randint(0, 5)):
            samples[name] = rng.choice((0, 1, rng.randint(2, 10**6), 2**63 - 1))
        stats: dict[str, ByteStats] = {}
        for name in BYTE_COUNTERS:
            kind = rng.random()
            if kind < 0.3:
                continue
            if kind < 0.4:
                samples[name] = rng.randint(1, 100)  # counted, printed without statistics
                continue
            n_samples = rng.choice((0, 1, rng.randint(2, 10**6)))
            samples[name] = n_samples
            hist = rng.choice((
                None, (), (("4K", 0),),
                tuple((label, rng.choice((0, 1, rng.randint(2, 10**9))))
                      for label in rng.sample(LABELS, rng.randint(1, len(LABELS)))),
            ))
            stats[name] = ByteStats(
                n_samples, rng.choice((None, 0, 4096)), rng.choice((None, 0, 1 << 22)),
                rng.choice((0, rng.randint(1, 2**62))),
                rng.choice((None, 0, rng.randint(1, 2**62), 10**30, 3**70)), hist,
            )
        t1 = T1 + 60 * (i % 3) + rng.choice((0.0, 0.5e-6, 0.123456789))
        last = rng.choice((None, t1 - rng.random() * 60, t1 - 0.0000005, float(int(t1))))
        raw = rng.choice(("{i}:1001:n1", ":{i}:nœud-3", "python3.{i}", "job ‘{i}’ ✓"))
        raw = f"{i:05d} " + raw.format(i=i)
        cls = rng.choice(list(IdClass))
        jid = JobId(cls, rng.choice((None, 0, i, 2**62)), rng.choice((None, 0, 1001)),
                    rng.choice((None, "", "n1", "n2", "nœud-3")), None, False)
        delta = Delta(rng.choice(sorted(TARGETS)), raw, raw, t1 - 120.000001, t1, last, samples,
                      stats, rng.choice((0, int(DeltaFlag.NEW | DeltaFlag.GAP))))
        pairs.append((delta, jid))
    return pairs


def _reference_copy(conn: psycopg.Connection, table: str, pairs: list[tuple[Delta, JobId]],
                    targets: dict[str, int], hosts: dict[str, int]) -> None:
    """The plain psycopg path: to_row's values, adapted by psycopg's own dumpers."""
    columns = sql.SQL(", ").join(map(sql.Identifier, delta_columns()))
    query = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), columns)
    with conn.cursor() as cur, cur.copy(query) as copy:
        copy.set_types(delta_column_types())
        for delta, jid in pairs:
            copy.write_row(to_row(delta, jid, targets[delta.target],
                                  hosts[jid.host] if jid.host else None))
    conn.commit()


@pytest.mark.pg
def test_write_batch_stores_the_same_rows_as_a_plain_copy_of_to_row(db_dsn: str) -> None:
    pairs = _varied_pairs(3 * COPY_CHUNK_ROWS + 17)  # several chunks, the last one short
    head, tail = pairs[:40], pairs[40:]
    with psycopg.connect(db_dsn) as conn:
        # The first batch makes every target and host known; the second one then also has
        # rows naming a new host and a new target between known ones.
        assert write_batch(conn, Batch("t", 1, T1, (), head, len(head), 0, 0, 0))
        extra_host = JobId(IdClass.EXACT, 5, 5, "late-host", None, False)
        extra_target = Delta("scratch-OST0042", "late target", "late target", T1 - 60, T1,
                             None, {"open": 3}, {}, 0)
        tail[100] = (tail[100][0], extra_host)
        tail[200] = (extra_target, tail[200][1])
        assert write_batch(conn, Batch("t", 2, T1, (), tail, len(tail), 0, 0, 0))
        targets = dict(conn.execute("SELECT name, target_id FROM fs_target").fetchall())
        hosts = dict(conn.execute("SELECT name, host_id FROM host").fetchall())
        conn.execute("CREATE TABLE reference (LIKE jobstats_delta)")
        conn.commit()
        _reference_copy(conn, "reference", head + tail, targets, hosts)
        order = " ORDER BY raw_id COLLATE \"C\""
        stored = conn.execute("SELECT * FROM jobstats_delta" + order).fetchall()
        expected = conn.execute("SELECT * FROM reference" + order).fetchall()
    assert len(stored) == len(pairs)
    assert stored == expected
    # the awkward values really were there
    assert {"late-host", "nœud-3"} <= set(hosts)
    assert any(row[delta_columns().index("extra")] for row in stored)
    assert any(row[delta_columns().index("write_bytes_sumsq")] == float(3**70) for row in stored)


def test_wire_types_replace_only_timestamptz_and_jsonb() -> None:
    pairs = zip(delta_column_types(), copy_wire_types(), strict=True)
    assert {(pg, wire) for pg, wire in pairs if pg != wire} == {
        ("timestamptz", "int8"), ("jsonb", "bytea"),
    }
