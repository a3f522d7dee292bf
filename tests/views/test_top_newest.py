"""The newest interval found from the collectors' batches (`ingest_batch`, one index probe per
collector) gives the very load the lookup in the deltas (max(ts_end)) gave, and where the
batches do not name it -- no batch with rows, a batch whose read time is not its rows' end,
a role that may not read ingest_batch -- `load` falls back to that lookup (issue 26: the
lookup read a site's whole newest interval, 0.1-0.2 s of `jobio top`'s second).

A real PostgreSQL with the views' data (tests/views/data.py, written through write_batch: one
ingest_batch row per read). The batches are altered inside transactions that are rolled back.
"""

from __future__ import annotations

from typing import Any

import psycopg

from slurm_io.report import load as load_mod
from slurm_io.report import sql as q
from slurm_io.report import top as top_mod
from tests.views import data

MOMENTS = [data.T10 + 1830, data.T10 + 3630, data.T10 + 30, data.T12 + 5400 + 30]
FILTERS: list[dict[str, Any]] = [{}, {"kind": "OST"}, {"fs": data.FS}]
NOW = data.T12 + 7200


def _figures(ld: load_mod.Load) -> tuple[Any, ...]:
    """Everything a view shows of a load: its interval, every part, the shares, the names."""
    # in their order: the views add them up in it
    parts = [(p.kind, p.job, p.uid, p.host_id, p.fs, p.exe, tuple(p.values), sorted(p.hosts))
             for p in ld.parts]
    return (ld.at, ld.lo, parts, ld.shared, ld.jobs, ld.users, ld.hosts,
            [top_mod.render(top_mod.view(ld, by=by, limit=None)) for by in ("job", "user")])


def _loads(conn: psycopg.Connection, per_host: bool) -> list[tuple[Any, ...]]:
    out = []
    for at in MOMENTS:
        for f in FILTERS:
            out.append(_figures(load_mod.load(conn, at=at, now=NOW, per_host=per_host, **f)))
            conn.rollback()
    return out


def test_the_batches_name_the_newest_interval(views_dsn):
    named = 0
    with psycopg.connect(views_dsn) as conn:
        for at in MOMENTS:
            guess = q.newest_read(conn, at, load_mod.LOOK_BACK)
            latest = q.latest(conn, at)
            if guess is None:  # a quiet moment: no read with rows in the look-back
                assert latest is None or latest <= at - load_mod.LOOK_BACK, at
                continue
            named += 1
            assert guess == latest, at
            rows, newest = q.interval_newest(conn, guess - 108, at)
            assert newest == guess
            assert sorted(map(repr, rows)) == \
                sorted(map(repr, q.interval_rows(conn, guess - 108, guess)))
            conn.rollback()
    assert named >= 2


def test_the_load_is_the_same_when_the_batches_do_not_name_it(views_dsn):
    alterations = [
        "UPDATE ingest_batch SET n_rows = 0",  # no batch with rows: no guess
        "UPDATE ingest_batch SET read_time = read_time - interval '30 seconds'",  # too old
        "UPDATE ingest_batch SET read_time = read_time + interval '20 seconds'",  # too new
        "DELETE FROM ingest_batch",
    ]
    with psycopg.connect(views_dsn) as conn:
        for per_host in (False, True):
            want = _loads(conn, per_host)
            assert sum(1 for f in want if f[0] is not None) >= 10
            for sql in alterations:
                # each load() rolls back its own transaction: alter the batches for each one
                got = []
                for at in MOMENTS:
                    for f in FILTERS:
                        conn.execute(sql)
                        got.append(_figures(load_mod.load(conn, at=at, now=NOW,
                                                          per_host=per_host, **f)))
                        conn.rollback()
                assert got == want, (sql, per_host)


def test_a_role_that_may_not_read_the_batches_looks_in_the_deltas(views_dsn):
    with psycopg.connect(views_dsn) as conn:
        conn.execute("SET LOCAL ROLE jobio_user")
        assert q.newest_read(conn, MOMENTS[0], load_mod.LOOK_BACK) is None
        conn.rollback()
        assert q.newest_read(conn, MOMENTS[0], load_mod.LOOK_BACK) is not None
