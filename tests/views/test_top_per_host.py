"""The interval's load read per job (`load(per_host=False)`: a job's exact-id deltas summed by
the server over its hosts, what `jobio top --once` and the exporter read) gives the very
figures of the load read per host, for every view but the one by host (issue 26: ~37,000
groups of a site's interval down to what Python can add up within a second).

A real PostgreSQL with the views' data (tests/views/data.py: exact ids, `:uid:host` deltas
shared between jobs, users outside jobs, system ids, two filesystems and target kinds).
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from slurm_io.report import load as load_mod
from slurm_io.report import top as top_mod
from tests.views import data

# busy moments of the day and a quiet one, with filters
MOMENTS = [data.T10 + 1830, data.T10 + 3630, data.T10 + 30, data.T12 + 5400 + 30]
FILTERS: list[dict[str, Any]] = [{}, {"kind": "OST"}, {"kind": "MDT"}, {"fs": data.FS}]


def _lines(ld: load_mod.Load, by: str) -> list[tuple[Any, ...]]:
    """Every field of every line of a view, in a stable order (hosts and jobs sorted)."""
    return sorted((g.kind, repr(g.key), g.label, g.user, tuple(g.values), sorted(g.hosts),
                   sorted(g.jobs), g.nodes, g.account, g.name, g.work_dir)
                  for g in load_mod.group(ld, by))


def test_per_job_load_gives_the_per_host_figures(views_dsn):
    compared = 0
    with psycopg.connect(views_dsn) as conn:
        for at in MOMENTS:
            for f in FILTERS:
                kw = {"at": at, "now": data.T12 + 7200, **f}
                wide = load_mod.load(conn, per_host=True, **kw)
                conn.rollback()
                narrow = load_mod.load(conn, per_host=False, **kw)
                conn.rollback()
                assert (narrow.at, narrow.lo, narrow.shared) == (wide.at, wide.lo, wide.shared)
                assert narrow.jobs == wide.jobs and narrow.users == wide.users
                assert len(narrow.parts) <= len(wide.parts)
                for by in ("job", "user", "account", "fs"):
                    assert _lines(narrow, by) == _lines(wide, by), (at, f, by)
                t_n, t_w = load_mod.total(narrow.parts), load_mod.total(wide.parts)
                assert (t_n.values, t_n.hosts, t_n.jobs) == (t_w.values, t_w.hosts, t_w.jobs)
                for by in ("job", "user"):
                    assert top_mod.render(top_mod.view(narrow, by=by, limit=None)) == \
                        top_mod.render(top_mod.view(wide, by=by, limit=None))
                compared += bool(wide.parts)
        # the data hold jobs on several hosts: the per-job read has fewer parts somewhere
        busy = load_mod.load(conn, at=MOMENTS[0], now=data.T12 + 7200, per_host=False)
        assert len(busy.parts) < len(load_mod.load(conn, at=MOMENTS[0],
                                                   now=data.T12 + 7200).parts)
        assert any(len(p.hosts) > 1 for p in busy.parts)
    assert compared >= 8


def test_a_view_by_host_asks_for_the_load_per_host(views_dsn):
    with psycopg.connect(views_dsn) as conn:
        narrow = load_mod.load(conn, at=MOMENTS[0], now=data.T12 + 7200, per_host=False)
        with pytest.raises(ValueError, match="per host"):
            load_mod.group(narrow, "host")
        t = top_mod.top(conn, at=MOMENTS[0], now=data.T12 + 7200, by="host", limit=None)
    assert t.rows and all(g.kind == "host" for g in t.rows)
