"""sql/ follows the rules for migrations on a populated database (docs/storage.md,
"Migrations on a populated database"): nothing a migration does to a table that grows with
the site's data may hold collectors' COPY (or the hook's writes) for a scan or a rewrite of
that table, because the migration's locks last until it commits.

A lint of the files' plain statements (DO blocks and dollar-quoted bodies are not read): the
migrations from before the rules that break them are listed in GRANDFATHERED with what
bench/bench_migrations.py measured, and the list must stay exactly the set found, so a new
migration that breaks a rule fails here."""

from __future__ import annotations

import re

from slurm_io.store import migrate

# tables whose rows grow with time and the site's size
GROWING = {"jobstats_delta", "ingest_batch", "job", "job_node", "job_io", "job_io_hour",
           "lassi_job_hour", "lassi_fs_hour", "report_queue", "problem", "alert_log"}
PARTITIONED = {"jobstats_delta"}
WRITTEN_EACH_CYCLE = {"jobstats_delta", "ingest_batch"}  # every collector, every cycle
VOLATILE = re.compile(r"\b(random|gen_random_uuid|clock_timestamp|nextval|timeofday)\s*\(",
                      re.I)

GRANDFATHERED = {
    ("0018_data_complete_index", "CREATE INDEX on ingest_batch (a SHARE lock for the build)"):
        "one row per collector cycle: 0.2 s on 432,000 rows (bench/README.md, Migrations)",
    ("0020_job_cluster_run", "UPDATE of job (a rewrite of the table)"):
        "the hook spools meanwhile; 50,000 jobs: see bench/README.md, Migrations",
    ("0020_job_cluster_run", "SET NOT NULL on job (a scan under ACCESS EXCLUSIVE)"):
        "same transaction as the UPDATE above",
    ("0020_job_cluster_run", "a UNIQUE or PRIMARY KEY constraint built on job"):
        "same transaction as the UPDATE above",
}


def _statements(text: str) -> list[str]:
    """The file's plain statements, comments and dollar-quoted bodies removed, one line each."""
    text = re.sub(r"\$(\w*)\$.*?\$\1\$", "''", text, flags=re.S)
    text = re.sub(r"--[^\n]*", "", text)
    return [" ".join(s.split()) for s in text.split(";") if s.strip()]


def violations(name: str, text: str, created_before: set[str]) -> set[tuple[str, str]]:
    """(file, rule broken) of each statement on a growing table an earlier file created."""
    found: set[tuple[str, str]] = set()
    for stmt in _statements(text):
        s = stmt.upper()
        m = re.match(r"CREATE (UNIQUE )?INDEX (CONCURRENTLY )?(IF NOT EXISTS )?\S* ?ON (ONLY )?"
                     r"(\w+)", s)
        if m:
            table = m.group(5).lower()
            if table in created_before & PARTITIONED and not m.group(4):
                found.add((name, f"CREATE INDEX on {table} without ON ONLY"))
            elif table in created_before & WRITTEN_EACH_CYCLE - PARTITIONED:
                found.add((name, f"CREATE INDEX on {table} (a SHARE lock for the build)"))
            continue
        m = re.match(r"(UPDATE|DELETE FROM|TRUNCATE|VACUUM FULL|CLUSTER) (ONLY )?(\w+)", s)
        if m and m.group(3).lower() in created_before & GROWING:
            found.add((name, f"{m.group(1)} of {m.group(3).lower()} (a rewrite of the table)"))
            continue
        m = re.match(r"ALTER TABLE (IF EXISTS )?(ONLY )?(\w+) (.*)", s)
        if not m or m.group(3).lower() not in created_before & GROWING:
            continue
        table, rest = m.group(3).lower(), m.group(4)
        if re.search(r"\bTYPE\b", rest) and "ALTER COLUMN" in rest:
            found.add((name, f"ALTER COLUMN TYPE on {table} (a rewrite)"))
        if re.search(r"\bADD COLUMN\b.*\bDEFAULT\b", rest) and VOLATILE.search(rest):
            found.add((name, f"ADD COLUMN with a volatile DEFAULT on {table} (a rewrite)"))
        if re.search(r"\bSET NOT NULL\b", rest):
            found.add((name, f"SET NOT NULL on {table} (a scan under ACCESS EXCLUSIVE)"))
        if re.search(r"\b(CHECK|FOREIGN KEY)\b", rest) and "NOT VALID" not in rest:
            found.add((name, f"a CHECK or FOREIGN KEY on {table} without NOT VALID"))
        if re.search(r"\b(UNIQUE|PRIMARY KEY)\b", rest) and "USING INDEX" not in rest:
            found.add((name, f"a UNIQUE or PRIMARY KEY constraint built on {table}"))
    return found


def _created(text: str) -> set[str]:
    return {t.lower() for t in re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)",
                                          "\n".join(_statements(text)), re.I)}


def test_migrations_follow_the_rules_for_a_populated_database() -> None:
    created: set[str] = set()
    found: set[tuple[str, str]] = set()
    for m in migrate.available():
        text = m.path.read_text(encoding="utf-8")
        found |= violations(m.name, text, created)
        created |= _created(text)
    assert created >= GROWING, "a growing table was renamed: update GROWING"
    assert found == set(GRANDFATHERED)


def test_the_lint_finds_what_the_rules_forbid() -> None:
    tables = set(GROWING)
    bad = """
        CREATE INDEX x ON jobstats_delta (uid);  -- builds every partition under SHARE
        CREATE INDEX y ON ingest_batch (n_rows);
        ALTER TABLE job ADD COLUMN k uuid DEFAULT gen_random_uuid();
        ALTER TABLE job_io ALTER COLUMN uid TYPE bigint;
        ALTER TABLE job ADD CONSTRAINT c CHECK (uid > 0);
        ALTER TABLE job_node ALTER COLUMN uid SET NOT NULL;
        UPDATE job SET uid = uid;
    """
    assert {rule.split(" (")[0] for _, rule in violations("9999_bad", bad, tables)} == {
        "CREATE INDEX on jobstats_delta without ON ONLY", "CREATE INDEX on ingest_batch",
        "ADD COLUMN with a volatile DEFAULT on job", "ALTER COLUMN TYPE on job_io",
        "a CHECK or FOREIGN KEY on job without NOT VALID", "SET NOT NULL on job_node",
        "UPDATE of job"}
    good = """
        CREATE INDEX x ON ONLY jobstats_delta (uid);
        ALTER TABLE job ADD COLUMN k text, ADD COLUMN n integer NOT NULL DEFAULT 0;
        ALTER TABLE job ADD CONSTRAINT c CHECK (uid > 0) NOT VALID;
        CREATE TABLE fresh (a int); CREATE INDEX f ON fresh (a);
        DO $$ BEGIN UPDATE job SET uid = uid; END $$;
    """
    assert violations("9999_good", good, tables) == set()
