"""The deltas of both raw tiers, as one row source: every reader of raw deltas goes here.

Why one module: deltas live in two tables -- `jobstats_delta` (hot: one row per delta, what
the collectors COPY into) and `jobstats_packed` (closed hours re-packed by `jobio db pack` as
one row per entry and hour with the deltas' columns in arrays, sql/0021). A reader that forgot
the packed tier would silently lose old figures, so no reader names either table: it asks
`deltas(where, lo=..., hi=...)` for a derived table with jobstats_delta's exact columns, and
writes the rest of its query as before (`FROM <deltas(...)> d JOIN fs_target ...`).

The predicate is put into BOTH halves, so each uses its own indexes and partition pruning:
in the hot half it is a plain WHERE on jobstats_delta; in the packed half it is applied to
the unnested elements, where the planner moves what names only the entry's scalar columns
(`job`, `uid`, `host_id`, `id_class`, `raw_id`) onto the packed row (its indexes), and the
time bounds `lo`/`hi` -- which every reader has -- become bounds on the packed row's `hour`
(ts_end in [hour, hour + 1 h): ts_end > lo gives hour > lo - 1 h, ts_end <= hi gives
hour <= hi), which prune the packed partitions. The predicate is written with bare column
names of jobstats_delta and may use parameters (named ones: it appears twice) and, inside a
LATERAL join, outer columns.

Late data: a delta ingested for an hour already packed lands in the hot tier, and is read
here like any other until the next `jobio db pack` merges it into the packed row.
"""

from __future__ import annotations

from functools import cache

from slurm_io.store.rows import delta_columns

HOT = "jobstats_delta"
PACKED = "jobstats_packed"
# the entry's classification: scalar columns of a packed row (one value for all its deltas)
ENTRY_COLUMNS = ("job", "id_class", "uid", "host_id", "raw_id")
# columns a packed row always has for every element (never a NULL array)
_ALWAYS = ("target_id", "ts_end", "ts_start")


def columns() -> list[str]:
    """jobstats_delta's columns, the row shape of both halves."""
    return delta_columns()


@cache
def array_columns() -> tuple[str, ...]:
    """The columns a packed row keeps as arrays (one element per delta), in table order."""
    return tuple(c for c in columns() if c not in ENTRY_COLUMNS)


@cache
def _packed_select() -> str:
    """The packed half's select list and FROM: the arrays unnested side by side (a NULL
    array -- no element had a value -- gives NULLs), the entry's columns repeated."""
    arrays = array_columns()
    out = []
    for c in columns():
        if c in ENTRY_COLUMNS:
            out.append(f"p.{c}")
        elif c == "flags":
            out.append("coalesce(u.flags, 0)::int2 AS flags")
        else:
            out.append(f"u.{c}")
    return (f"SELECT {', '.join(out)} FROM {PACKED} p CROSS JOIN LATERAL unnest("
            + ", ".join(f"p.{c}" for c in arrays) + f") AS u({', '.join(arrays)})")


def deltas(where: str, *, lo: str, hi: str) -> str:
    """A derived table (to alias, e.g. `... d`) of every delta, hot or packed, for which
    `where` holds; `lo` and `hi` are SQL expressions with lo <= ts_end <= hi for every row
    `where` admits (open or closed alike) -- they only prune the packed partitions, `where`
    must still say them to the hot half."""
    cols = ", ".join(columns())
    hot = f"SELECT {cols} FROM {HOT} WHERE {where}"
    packed = (f"SELECT * FROM ({_packed_select()} WHERE p.hour > ({lo}) - interval '1 hour'"
              f" AND p.hour <= ({hi})) pk WHERE {where}")
    return f"({hot} UNION ALL {packed})"


def window(lo: str, hi: str) -> str:
    """The deltas with ts_end in (lo, hi] (SQL expressions, e.g. `%(lo)s`): the derived table
    of the many readers of a time range."""
    return deltas(f"ts_end > {lo} AND ts_end <= {hi}", lo=lo, hi=hi)
