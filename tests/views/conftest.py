"""Fixtures of the filesystem-view tests: the known-answer cluster of data.py, loaded once per
module into a fresh database, with its LASSi days computed (baseline day first)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import psycopg
import pytest

from slurm_io.lassi.days import compute_day
from tests.views import data


@pytest.fixture(scope="module")
def views_dsn(pg_dsn: str, _migrated_template: str) -> Iterator[str]:
    from tests.conftest import _fresh_database

    for dsn in _fresh_database(pg_dsn, _migrated_template):
        data.load(dsn)
        with psycopg.connect(dsn) as conn:
            compute_day(conn, date(2026, 11, 17), now=data.DAY + 2 * 86400)
            compute_day(conn, date(2026, 11, 18), now=data.DAY + 2 * 86400)
        yield dsn
