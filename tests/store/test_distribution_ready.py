"""The schema stays fit for the way past one PostgreSQL host (docs/deploy.md "Sizing").

A site that outgrows one host spreads writes over several servers with PostgreSQL's own
foreign partitions or with Citus (docs/deploy.md). Both ask the same of the schema, and a
migration that breaks it would close that door quietly, years before anyone needs it:

- the raw tiers (tables and partitions named `jobstats_*`) carry no unique constraint: on
  several servers nobody could enforce one, and the collectors' COPY must never wait for a
  uniqueness check across them;
- the tables keyed by a job (the per-job results, distributed by job) have the job in every
  primary key and unique constraint, so each is enforced on the one server holding the job;
- every partitioned table's unique constraints hold the partition key (PostgreSQL enforces
  this for declared partitioning; checked here so a hand-made partition scheme cannot slip).
"""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.pg

# Per-job results, distributed by the job row key (docs/deploy.md).
DISTRIBUTED_BY_JOB = ("job_io", "job_io_hour", "lassi_job_hour", "report_queue", "job_node")

UNIQUE_INDEXES = """
SELECT c.relname, i.relname, array_agg(a.attname ORDER BY a.attname)
FROM pg_index x
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (x.indkey)
WHERE x.indisunique AND n.nspname = current_schema()
GROUP BY c.relname, i.relname
"""


def _unique_indexes(dsn: str) -> dict[str, list[tuple[str, list[str]]]]:
    by_table: dict[str, list[tuple[str, list[str]]]] = {}
    with psycopg.connect(dsn) as conn:
        for table, index, columns in conn.execute(UNIQUE_INDEXES).fetchall():
            by_table.setdefault(table, []).append((index, [c for c in columns if c]))
    return by_table


def test_raw_tiers_have_no_unique_constraint(db_dsn: str) -> None:
    unique = _unique_indexes(db_dsn)
    offending = {t: ix for t, ix in unique.items() if t.startswith("jobstats_")}
    assert offending == {}


def test_job_results_have_the_job_in_every_key(db_dsn: str) -> None:
    unique = _unique_indexes(db_dsn)
    for table in DISTRIBUTED_BY_JOB:
        assert table in unique, f"{table} has no primary key"
        for index, columns in unique[table]:
            assert "job" in columns, f"{table}.{index} {columns} lacks the job"


def test_partitioned_tables_keep_their_key_in_unique_constraints(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        keys = dict(conn.execute(
            "SELECT c.relname, array_agg(a.attname) FROM pg_partitioned_table p "
            "JOIN pg_class c ON c.oid = p.partrelid "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (p.partattrs) "
            "GROUP BY c.relname").fetchall())
    assert "jobstats_delta" in keys
    unique = _unique_indexes(db_dsn)
    for table, key in keys.items():
        for index, columns in unique.get(table, []):
            assert set(key) <= set(columns), f"{table}.{index} lacks partition key {key}"
