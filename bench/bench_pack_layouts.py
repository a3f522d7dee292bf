"""Packed-tier layouts measured on the same deltas: where the bytes of sql/0021 go, and what
other layouts would take (issue 26 item 2: <= 24 bytes per delta).

    .venv/bin/python bench/bench_pack_layouts.py --dsn DSN --db SCRATCH --from-dsn SOURCE
        [--lo '2026-09-22 00:00+00' --hi '2026-09-23 00:00+00'] [--sample K]

Copies the deltas with ts_end in (lo, hi) of the SOURCE database -- both tiers, read through
store.tiers.window, so a bench_pack database (hot and packed) or a slice of the site database
(bench_site.py) alike, read-only -- into a flat table of the scratch database SCRATCH (made
afresh on the server of --dsn), then builds each layout from it as a table with the packed
tier's storage (lz4, STORAGE MAIN, toast_tuple_target = 128) and prints, per layout, its
heap + TOAST bytes per delta (indexes are not built: ~0.5 B at hour rows, ~0.2 at day rows
in bench_pack), rows, deltas per row, and the seconds one full read of it takes (every
delta's values decoded and summed: what a reader of a whole day pays). For sql/0021's
layout it prints also the bytes per delta of each column (pg_column_size).

Layouts (each with one row per entry and hour, and per entry and UTC day):
- `0021`: today's: one array per column (timestamptz[], bigint[], float8[]);
- `offsets`: as 0021, with ts_end in microseconds from the row's start, ts_start and
  last_update in microseconds before ts_end (int8[]: lossless);
- `derived`: offsets, and the byte counters' max, bytes and sumsq as residuals of what one
  request size predicts (max - min, bytes - samples x min, sumsq - bytes x min: 0 when every
  request has one size, as in bench_site's data), an array NULL when all its elements are 0
  (a NULL element's presence is the samples' own);
- `planes`: offsets, and every int8 array split into four int2 arrays of 16 bits each
  (byte-plane transposition: lz4 has no entropy coder, but turns runs into matches), an
  array NULL when its elements are all zero;
- `one`: the planes of every column in ONE int2[] (column-major), compressed once: one
  array header per row instead of one per column and plane;
- `one-derived`: `one` of the `derived` values;
- `derived-planes`: `derived`, with the timestamps' offsets as `planes` (their low bits are
  random: the planes let lz4 keep the high ones).
sumsq (float8) is taken as int8 (exact: every value here is an integer below 2^63; the run
counts the ones that are not and says so: a real layout would keep those as float8).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import make_conninfo

ENTRY = "job, id_class, uid, host_id, raw_id"
SPANS = {"hour": "date_trunc('hour', ts_end)", "day": "date_trunc('day', ts_end)"}
ORDER = "ORDER BY target_id, ts_end, ts_start"
TIMES = ("ts_end", "ts_start", "last_update", "entry_start")


def _us(x: str) -> str:
    return f"round(extract(epoch FROM {x}) * 1000000)::int8"


def copy_slice(source: str, scratch: str, lo: str, hi: str, sample: int = 1) -> int:
    """The deltas of (lo, hi) of `source` (both tiers) into table `flat` of `scratch`; of
    one entry in `sample` only (by hash of the printed id: an entry's deltas are all kept or
    all left, so rows per entry -- what a layout compresses -- stay those of the site)."""
    from slurm_io.store import tiers

    cols = ", ".join(tiers.columns())
    with psycopg.connect(scratch, autocommit=True) as dst:
        dst.execute("DROP TABLE IF EXISTS flat")
        with psycopg.connect(source) as src:
            src.execute("SET TRANSACTION READ ONLY")
            window = _window(src)
            row = src.execute(f"SELECT {cols} FROM {window('%(lo)s', '%(hi)s')} d "
                              "LIMIT 0", {"lo": lo, "hi": hi})
            desc = row.description or []
            types = {d.name: src.execute("SELECT format_type(%s, NULL)",
                                         (d.type_code,)).fetchone() for d in desc}
            dst.execute("CREATE TABLE flat (" + ", ".join(
                f"{n} {t[0] if t else 'text'}" for n, t in types.items()) + ")")
            q = (f"COPY (SELECT {cols} FROM "
                 f"{window(_lit(src, lo), _lit(src, hi))} d "
                 f"WHERE ts_end < {_lit(src, hi)} AND (hashtext(raw_id) & 2147483647) "
                 f"% {int(sample)} = 0) TO STDOUT (FORMAT binary)")
            with src.cursor().copy(q) as out, dst.cursor().copy(
                    f"COPY flat ({cols}) FROM STDIN (FORMAT binary)") as into:
                for chunk in out:
                    into.write(chunk)
        dst.execute("ANALYZE flat")
        row = dst.execute("SELECT count(*) FROM flat").fetchone()
    return int(row[0]) if row else 0


def _window(conn: psycopg.Connection) -> Callable[[str, str], str]:
    """store.tiers.window, or for a source from before sql/0025 (the site database is at
    schema 22) its two tiers: the hot one and 0021's hour rows, then named jobstats_packed."""
    from slurm_io.store import tiers

    if conn.execute("SELECT to_regclass('jobstats_packed_0021')").fetchone() != (None,):
        return tiers.window

    def old(lo: str, hi: str) -> str:
        where = f"ts_end > {lo} AND ts_end <= {hi}"
        return (f"(SELECT {', '.join(tiers.columns())} FROM {tiers.HOT} WHERE {where} "
                f"UNION ALL SELECT * FROM ({tiers.select_0021('jobstats_packed')}) o "
                f"WHERE {where})")
    return old


def _lit(conn: psycopg.Connection, value: str) -> str:
    """`value` as a timestamptz SQL literal (the bench's own argument, quoted)."""
    row = conn.execute("SELECT quote_literal(%s::timestamptz::text)", (value,)).fetchone()
    return f"{row[0]}::timestamptz" if row else "NULL"


def used_columns(conn: psycopg.Connection) -> tuple[list[str], list[str]]:
    """(integer-valued, other) array columns of flat with at least one non-NULL value."""
    from slurm_io.store import tiers

    ints, other = [], []
    kinds = dict(conn.execute("SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
                              "WHERE attrelid = 'flat'::regclass AND attnum > 0").fetchall())
    for c in tiers.array_columns():
        row = conn.execute(f"SELECT count({c}) FROM flat").fetchone()
        if not row or not row[0]:
            continue
        (ints if c in TIMES or kinds[c] in ("bigint", "integer", "smallint", "double precision")
         else other).append(c)
    return ints, other


def _int8(c: str, span: str, offsets: bool) -> str:
    """Column c of a delta as int8 (timestamps as microseconds, lossless)."""
    if c == "ts_end":
        return _us(f"ts_end - {span}") if offsets else _us("ts_end")
    if c in TIMES:
        return _us(f"ts_end - {c}") if offsets else _us(c)
    return f"{c}::int8"


def _base(c: str) -> str | None:
    """The byte counter whose min a derived column `c` is predicted from (None: not one)."""
    for b in ("read_bytes", "write_bytes"):
        if c in (b, f"{b}_max", f"{b}_sumsq"):
            return b
    return None


def _derived_array(c: str, span: str, agg: Callable[[str], str]) -> str:
    """A residual array, NULL when every residual is 0 and every NULL is where min is NULL
    (so decoding it back is exact: NULL array -> the prediction, or NULL where min is)."""
    b = _base(c)
    return (f"CASE WHEN bool_and(CASE WHEN {c} IS NULL THEN {b}_min IS NULL ELSE "
            f"{b}_min IS NOT NULL AND {_derived(c, span)} = 0 END) THEN NULL "
            f"ELSE {agg(_derived(c, span))} END")


def _derived(c: str, span: str) -> str:
    """Column c as int8, as the residual of what the delta's other columns predict when every
    request has one size (min = max, bytes = samples x min, sumsq = bytes x min): 0 then."""
    b = _base(c)
    if b is None:
        return _int8(c, span, True)
    return f"({c}::int8::numeric - {_predicted(c, b, c)})::int8"  # float8 to numeric: 15 digits


def _predicted(c: str, b: str, _self: str) -> str:
    """What one request size predicts of column c of byte counter b: store.tiers' own
    expressions (int8; a product of non-negative values below 2^62, else 0), so that this
    check holds the packed tier's arithmetic."""
    from slurm_io.store import tiers

    mn = f"{b}_min"
    if c == f"{b}_max":
        return tiers.predicted_max(mn)
    if c == b:
        return tiers.predicted_bytes(f"{b}_samples", mn)
    return tiers.predicted_sumsq(b, mn)


def _plane(expr: str, k: int) -> str:
    """Bits 16k .. 16k+15 of an int8 as int2 (the top plane signed, the others offset)."""
    if k == 3:
        return f"(({expr}) >> 48)::int2"
    return f"(((({expr}) >> {16 * k}) & 65535) - 32768)::int2"


def layout(name: str, span: str, ints: list[str], other: list[str]) -> list[str]:
    """The aggregate expressions of one row's columns under layout `name`."""
    def agg(e: str) -> str:
        return f"array_agg({e} {ORDER})"

    def nullable(c: str, e: str) -> str:
        return f"CASE WHEN count({c}) = 0 THEN NULL ELSE {agg(e)} END"

    out = [nullable(c, c) for c in other]
    if name == "0021":
        return out + [nullable(c, c) for c in ints]
    if name == "offsets":
        return out + [nullable(c, _int8(c, span, True)) for c in ints]
    if name == "derived":
        return out + [_derived_array(c, span, agg) if _base(c) else nullable(c, _derived(c, span))
                      for c in ints]
    if name == "derived-planes":  # derived, the timestamps (random low bits) as planes
        zero = {1: -32768, 2: -32768, 3: 0}
        cols = []
        for c in ints:
            if c not in TIMES:
                cols.append(_derived_array(c, span, agg) if _base(c)
                            else nullable(c, _derived(c, span)))
                continue
            for k in range(4):
                p = _plane(_int8(c, span, True), k)
                cols.append(nullable(c, p) if k == 0 else
                            f"CASE WHEN bool_and(coalesce({p}, {zero[k]}) = {zero[k]}) THEN "
                            f"NULL ELSE {agg(p)} END")
        return out + cols
    value = _derived if name == "one-derived" else (lambda c, span: _int8(c, span, True))
    planes = [(c, k, _plane(value(c, span), k)) for c in ints for k in range(4)]
    if name == "planes":
        # plane 0 keeps the NULLs; a higher plane all zero is NULL (decoded as zeros)
        zero = {1: -32768, 2: -32768, 3: 0}
        return out + [nullable(c, p) if k == 0 else
                      f"CASE WHEN bool_and(coalesce({p}, {zero[k]}) = {zero[k]}) THEN NULL "
                      f"ELSE {agg(p)} END" for c, k, p in planes]
    return [*out, "(" + " || ".join(agg(p) for _c, _k, p in planes) + ")"]


def mismatches(conn: psycopg.Connection, ints: list[str], other: list[str]) -> int:
    """Deltas of flat not given back exactly by decoding lay (of layout `derived`), both
    ways (multisets): 0 when the layout is lossless on this data."""
    names = [*other, *ints]
    kinds = dict(conn.execute("SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
                              "WHERE attrelid = 'flat'::regclass AND attnum > 0").fetchall())
    unnested = ", ".join(f"a{i}" for i in range(len(names)))
    flags = ", ".join(f"lay.c{i} IS NULL AS z{i}" for i in range(len(names)))
    raw = {c: f"a{i}" for i, c in enumerate(names)}
    empty = {c: f"z{i}" for i, c in enumerate(names)}
    step1 = {c: f"{raw[c]}::{kinds[c]}" for c in other}
    step1.update({c: f"{raw[c]}" for c in ints if c not in TIMES and not _base(c)})
    step1["ts_end"] = f"start + {raw['ts_end']} * interval '1 microsecond'"
    step2 = {c: f"ts_end - {raw[c]} * interval '1 microsecond'" for c in ints
             if c in TIMES and c != "ts_end"}
    for c in ints:  # max and bytes first, from min and samples; then sumsq from bytes
        b = _base(c)
        if b and c != f"{b}_sumsq":
            step2[c] = (f"(CASE WHEN {empty[c]} THEN CASE WHEN {b}_min IS NULL THEN NULL ELSE "
                        f"{_predicted(c, b, c)} END ELSE {raw[c]} + {_predicted(c, b, c)} END)"
                        f"::{kinds[c]}")
    step3 = {}
    for c in ints:
        b = _base(c)
        if b and c == f"{b}_sumsq":
            step3[c] = (f"(CASE WHEN {empty[c]} THEN CASE WHEN {b}_min IS NULL THEN NULL ELSE "
                        f"{_predicted(c, b, c)} END ELSE {raw[c]} + {_predicted(c, b, c)} END)"
                        f"::{kinds[c]}")
    s1 = ", ".join(f"{e} AS {c}" for c, e in step1.items())
    s2 = ", ".join(f"{e} AS {c}" for c, e in step2.items())
    s3 = ", ".join(f"{e} AS {c}" for c, e in step3.items())
    cols = ", ".join([*ENTRY.split(", "), *names])
    q = (f"WITH u AS (SELECT lay.start, {ENTRY}, {flags}, u.* FROM lay CROSS JOIN LATERAL "
         f"unnest({', '.join(f'c{i}' for i in range(len(names)))}) AS u({unnested})), "
         f"d1 AS (SELECT u.*, {s1} FROM u), d2 AS (SELECT d1.*, {s2} FROM d1), "
         f"d3 AS (SELECT d2.*{', ' + s3 if s3 else ''} FROM d2) "
         f"SELECT (SELECT count(*) FROM (SELECT {cols} FROM flat EXCEPT ALL "
         f"SELECT {cols} FROM d3) x) + (SELECT count(*) FROM (SELECT {cols} FROM d3 "
         f"EXCEPT ALL SELECT {cols} FROM flat) y)")
    row = conn.execute(q).fetchone()
    return int(row[0]) if row else -1


def build(conn: psycopg.Connection, name: str, span: str, cols: list[str]) -> tuple[int, int]:
    """Table lay_<name> of the layout; (deltas, rows)."""
    sel = ", ".join(f"{c} AS c{i}" for i, c in enumerate(cols))
    src = (f"SELECT {span} AS start, {ENTRY}, count(*)::int4 AS n, {sel} FROM flat "
           f"GROUP BY {span}, {ENTRY}")
    conn.execute("DROP TABLE IF EXISTS lay")
    conn.execute(f"CREATE TABLE lay WITH (toast_tuple_target = 128) AS {src} LIMIT 0")
    for (a,) in conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = 'lay'::regclass"
                             " AND attnum > 0 AND atttypid IN (SELECT oid FROM pg_type "
                             "WHERE typcategory = 'A')").fetchall():
        conn.execute(f"ALTER TABLE lay ALTER COLUMN {a} SET COMPRESSION lz4, "
                     f"ALTER COLUMN {a} SET STORAGE MAIN")
    conn.execute(f"INSERT INTO lay {src}")
    conn.execute("VACUUM ANALYZE lay")
    row = conn.execute("SELECT sum(n), count(*) FROM lay").fetchone()
    return (int(row[0]), int(row[1])) if row and row[0] else (0, 0)


def read_seconds(conn: psycopg.Connection, name: str, ncols: int, nints: int) -> float:
    """One full read of lay: every array unnested (`one`: its slices); the arithmetic that
    would join planes is not included."""
    if name.startswith("one"):
        sl = ", ".join(f"c{ncols - 1}[{k} * n + 1:{k + 1} * n]" for k in range(4 * nints))
        q = f"SELECT count(*), sum(u.a) FROM lay CROSS JOIN LATERAL unnest({sl}) AS u(a)"
    else:
        arrays = ", ".join(f"c{i}" for i in range(ncols))
        names = ", ".join(f"a{i}" for i in range(ncols))
        q = (f"SELECT count(*), count(u.a{ncols - 1}) FROM lay "
             f"CROSS JOIN LATERAL unnest({arrays}) AS u({names})")
    t = time.perf_counter()
    conn.execute(q).fetchone()
    return time.perf_counter() - t


def per_column(conn: psycopg.Connection, names: list[str]) -> str:
    """Bytes per delta of each column of the 0021 layout, largest first."""
    cols = names
    row = conn.execute("SELECT " + ", ".join(
        f"sum(coalesce(pg_column_size(c{i}), 0))::float8 / sum(n)" for i in range(len(cols)))
        + " FROM lay").fetchone() or ()
    pairs = sorted(zip(names, row, strict=True), key=lambda p: -p[1])
    return ", ".join(f"{n} {b:.2f}" for n, b in pairs if b >= 0.01)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", required=True, help="the server of the scratch database")
    ap.add_argument("--db", default="bench_pack_layouts", help="scratch database (re-made)")
    ap.add_argument("--from-dsn", required=True, help="the database whose deltas are read")
    ap.add_argument("--lo", default="2026-09-22 00:00+00")
    ap.add_argument("--hi", default="2026-09-23 00:00+00")
    ap.add_argument("--sample", type=int, default=1,
                    help="keep one entry in SAMPLE (a day of a big site in a small copy)")
    ap.add_argument("--layouts",
                    default="0021,offsets,derived,planes,one,one-derived,derived-planes")
    ap.add_argument("--spans", default="hour,day")
    args = ap.parse_args()
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    scratch = make_conninfo(args.dsn, dbname=args.db)
    t = time.perf_counter()
    n = copy_slice(args.from_dsn, scratch, args.lo, args.hi, args.sample)
    print(f"copied: {n:,} deltas of ({args.lo}, {args.hi}), one entry in {args.sample}, "
          f"in {time.perf_counter() - t:.0f} s")
    with psycopg.connect(scratch, autocommit=True) as conn:
        ints, other = used_columns(conn)
        row = conn.execute("SELECT count(*) FROM flat WHERE read_bytes_sumsq <> "
                           "floor(read_bytes_sumsq) OR write_bytes_sumsq <> "
                           "floor(write_bytes_sumsq)").fetchone()
        print(f"columns with values: {', '.join(other + ints)}; sumsq not integral: "
              f"{row[0] if row else '?'}")
        for span in args.spans.split(","):
            for name in args.layouts.split(","):
                cols = layout(name, SPANS[span], ints, other)
                t = time.perf_counter()
                deltas, rows = build(conn, name, SPANS[span], cols)
                took = time.perf_counter() - t
                size = conn.execute("SELECT pg_total_relation_size('lay')").fetchone()
                b = int(size[0]) / max(1, deltas) if size else 0.0
                secs = read_seconds(conn, name, len(cols), len(ints))
                print(f"layout {name} per {span}: {b:.1f} bytes per delta (heap + TOAST), "
                      f"{rows:,} rows, {deltas / max(1, rows):.0f} deltas per row; built in "
                      f"{took:.1f} s, read in {secs:.2f} s ({deltas / max(secs, 1e-9):,.0f} "
                      "deltas/s)")
                if name == "derived":
                    print(f"  deltas not decoded back exactly: "
                          f"{mismatches(conn, ints, other):,}")
                if name == "0021":
                    print(f"  per column: {per_column(conn, other + ints)}")
        conn.execute("DROP TABLE IF EXISTS lay")
        conn.execute("DROP TABLE IF EXISTS flat")


if __name__ == "__main__":
    main()
