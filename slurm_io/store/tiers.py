"""The deltas of both raw tiers, as one row source: every reader of raw deltas goes here.

Why one module: deltas live in two tiers -- `jobstats_delta` (hot: one row per delta, what
the collectors COPY into) and `jobstats_packed` (closed hours re-packed by `jobio db pack` as
one row per entry and UTC day with the deltas' columns in arrays, sql/0025; sql/0021's
hour rows, renamed `jobstats_packed_0021`, are read as a third half until `db pack` has
re-packed them). A reader that forgot the packed tier would silently lose old figures, so no
reader names these tables: it asks `deltas(where, lo=..., hi=...)` for a derived table with
jobstats_delta's exact columns, and writes the rest of its query as before
(`FROM <deltas(...)> d JOIN fs_target ...`).

The predicate is put into EVERY half, so each uses its own indexes and partition pruning:
in the hot half it is a plain WHERE on jobstats_delta; in a packed half it is applied to
the unnested, decoded elements, where the planner moves what names only the entry's scalar
columns (`job`, `uid`, `host_id`, `id_class`, `raw_id`) onto the packed row (its indexes),
and the time bounds `lo`/`hi` -- which every reader has -- become bounds on the packed row's
`hour` (its day: ts_end in [hour, hour + 1 day), so ts_end > lo gives hour > lo - 1 day,
ts_end <= hi gives hour <= hi), which prune the packed partitions. The predicate is written
with bare column names of jobstats_delta and may use parameters (named ones: it appears
more than once) and, inside a LATERAL join, outer columns.

The `derived` layout (sql/0025's header): timestamps as microsecond offsets, the byte
counters' max, bytes and sumsq as residuals of what one request size predicts. `decoded`
gives them back exactly; tiers_pack encodes with the same `predicted_*` expressions, so the
two cannot drift apart. The prediction is used only where it is a product of non-negative
values below 2^62 (else 0): every residual then fits int8 and the arithmetic stays in int8.

Late data: a delta ingested for an hour already packed lands in the hot tier, and is read
here like any other until the next `jobio db pack` merges it into the packed row.
"""

from __future__ import annotations

from functools import cache

from slurm_io.store.rows import delta_columns

HOT = "jobstats_delta"
PACKED = "jobstats_packed"
PACKED_0021 = "jobstats_packed_0021"  # sql/0021's hour rows, until re-packed (sql/0025)
# the entry's classification: scalar columns of a packed row (one value for all its deltas)
ENTRY_COLUMNS = ("job", "id_class", "uid", "host_id", "raw_id")
# byte counters stored as residuals, each with a `<b>_sumsq_raw` escape column
BYTES = ("read_bytes", "write_bytes")
TIMES = ("ts_start", "last_update", "entry_start")  # microseconds before ts_end
LIMIT = 4611686018427387904  # 2^62: the largest prediction used


def columns() -> list[str]:
    """jobstats_delta's columns, the row shape of every half."""
    return delta_columns()


@cache
def array_columns() -> tuple[str, ...]:
    """The delta's columns that a packed row keeps as arrays (one element per delta)."""
    return tuple(c for c in columns() if c not in ENTRY_COLUMNS)


@cache
def packed_arrays() -> tuple[str, ...]:
    """The array columns of a packed row of sql/0025: the delta's, and the sumsq escapes."""
    out: list[str] = []
    for c in array_columns():
        out.append(c)
        if c.endswith("_sumsq") and c[: -len("_sumsq")] in BYTES:
            out.append(f"{c}_raw")
    return tuple(out)


def predicted_max(mn: str) -> str:
    """What one request size predicts of a counter's max: its min (int8 SQL; 0 if < 0)."""
    return f"coalesce(greatest({mn}, 0), 0)"


def _product(a: str, b: str) -> str:
    """a x b of two int8 SQL values, taken as 0 when either is negative or NULL or the product
    exceeds 2^62 (so that it never overflows, and a residual from it always fits int8)."""
    x, y = f"coalesce(greatest({a}, 0), 0)", f"coalesce(greatest({b}, 0), 0)"
    return f"(CASE WHEN {y} = 0 OR {x} <= {LIMIT} / {y} THEN {x} * {y} ELSE 0 END)"


def predicted_bytes(samples: str, mn: str) -> str:
    """bytes = samples x min when every request has one size."""
    return _product(samples, mn)


def predicted_sumsq(nbytes: str, mn: str) -> str:
    """sumsq = bytes x min (each request's size squared, summed) when they have one size."""
    return _product(nbytes, mn)


def _residual(value: str, array_null: str, mn: str, pred: str) -> str:
    """A residual decoded: the prediction (NULL where min is) when its array is NULL."""
    return (f"(CASE WHEN {array_null} THEN CASE WHEN {mn} IS NULL THEN NULL ELSE {pred} END "
            f"ELSE {value} + {pred} END)")


def decoded(p: str, u: str) -> dict[str, str]:
    """jobstats_delta's columns (SQL expressions) of a sql/0025 packed row `p` whose arrays
    are unnested as `u`: the inverse of tiers_pack's encoding, exactly (bench_pack_layouts'
    check: `deltas not decoded back exactly: 0`)."""
    out = {c: f"{p}.{c}" for c in ENTRY_COLUMNS}
    end = f"({p}.hour + {u}.ts_end * interval '1 microsecond')"
    out["ts_end"] = end
    for c in TIMES:
        out[c] = f"{end} - {u}.{c} * interval '1 microsecond'"
    out["flags"] = f"coalesce({u}.flags, 0)::int2"
    for b in BYTES:
        mn = f"{u}.{b}_min"
        out[f"{b}_max"] = _residual(f"{u}.{b}_max", f"{p}.{b}_max IS NULL", mn,
                                    predicted_max(mn))
        nbytes = _residual(f"{u}.{b}", f"{p}.{b} IS NULL", mn,
                           predicted_bytes(f"{u}.{b}_samples", mn))
        out[b] = nbytes
        sq = _residual(f"{u}.{b}_sumsq", f"{p}.{b}_sumsq IS NULL", mn,
                       predicted_sumsq(nbytes, mn))
        out[f"{b}_sumsq"] = f"coalesce({u}.{b}_sumsq_raw, ({sq})::float8)"
    for c in array_columns():
        out.setdefault(c, f"{u}.{c}")
    return out


def _unnested(select: list[str], source: str, arrays: tuple[str, ...]) -> str:
    """SELECT `select` FROM `source` p with its `arrays` unnested side by side as u (a NULL
    array gives NULLs): the FROM of both packed layouts."""
    return (f"SELECT {', '.join(select)} FROM {source} p CROSS JOIN LATERAL "
            f"unnest({', '.join(f'p.{c}' for c in arrays)}) AS u({', '.join(arrays)})")


def packed_select(source: str = PACKED) -> str:
    """SELECT the deltas of the sql/0025 rows of `source` (a table or CTE name, aliased p):
    every array unnested and decoded."""
    dec = decoded("p", "u")
    return _unnested([f"{dec[c]} AS {c}" for c in columns()], source, packed_arrays())


def select_0021(source: str = PACKED_0021) -> str:
    """SELECT the deltas of sql/0021's hour rows of `source` (aliased p): arrays unnested."""
    out = []
    for c in columns():
        if c in ENTRY_COLUMNS:
            out.append(f"p.{c}")
        elif c == "flags":
            out.append("coalesce(u.flags, 0)::int2 AS flags")
        else:
            out.append(f"u.{c}")
    return _unnested(out, source, array_columns())


@cache
def _packed_select() -> str:
    return packed_select()


@cache
def _old_select() -> str:
    return select_0021()


def deltas(where: str, *, lo: str, hi: str) -> str:
    """A derived table (to alias, e.g. `... d`) of every delta, hot or packed, for which
    `where` holds; `lo` and `hi` are SQL expressions with lo <= ts_end <= hi for every row
    `where` admits (open or closed alike) -- they only prune the packed partitions, `where`
    must still say them to the hot half."""
    cols = ", ".join(columns())
    hot = f"SELECT {cols} FROM {HOT} WHERE {where}"
    packed = (f"SELECT * FROM ({_packed_select()} WHERE p.hour > ({lo}) - interval '1 day'"
              f" AND p.hour <= ({hi})) pk WHERE {where}")
    old = (f"SELECT * FROM ({_old_select()} WHERE p.hour > ({lo}) - interval '1 hour'"
           f" AND p.hour <= ({hi})) po WHERE {where}")
    return f"({hot} UNION ALL {packed} UNION ALL {old})"


def window(lo: str, hi: str) -> str:
    """The deltas with ts_end in (lo, hi] (SQL expressions, e.g. `%(lo)s`): the derived table
    of the many readers of a time range."""
    return deltas(f"ts_end > {lo} AND ts_end <= {hi}", lo=lo, hi=hi)
