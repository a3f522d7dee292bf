"""The long fuzz run of the Slurm intake: sacct text, hook environments, hook spool files.

    .venv/bin/python bench/fuzz_intake.py [--cases 20000] [--seed 1] [--dsn DSN]

Each target gets `--cases` byte-level mutations of real-format samples (tests/intake_fuzz.py,
the same mutations the hypothesis tests use, here from a seeded random.Random so that a run
can be repeated). Prints per target: cases, records read, accepted, refused, and the
failures, which must all be 0: exceptions that escaped, accepted records with a value
PostgreSQL cannot hold, records neither accepted nor refused, and (sacct, spool) records the
database refused after the checks had accepted them. The sacct target stores what it
accepts and the spool target ingests into a real PostgreSQL: a throw-away embedded server
under /tmp, or a scratch database given with --dsn (the schema is migrated there).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from slurm_io.jobs.hookenv import record_from_hook_env
from slurm_io.jobs.sacct import parse_sacct_text
from slurm_io.jobs.store import upsert_isolated
from slurm_io.model import JobRecord
from slurm_io.notify import hookspool
from slurm_io.store import migrate
from slurm_io.store.embedded import EmbeddedPostgres
from tests.intake_fuzz import (
    mutated_env,
    mutated_sacct,
    spool_file_bytes,
    unstorable,
)

COLUMNS = ("cases", "records", "accepted", "refused", "escaped", "unstorable", "uncounted",
           "db_refused", "seconds")


def _row(**kw: float) -> dict[str, float]:
    return {c: kw.get(c, 0) for c in COLUMNS}


def fuzz_sacct(conn: psycopg.Connection, cases: int, rnd: random.Random) -> dict[str, float]:
    t0 = time.perf_counter()
    r = _row(cases=cases)
    pending: list[JobRecord] = []
    for i in range(cases):
        try:
            read = parse_sacct_text(mutated_sacct(rnd))
        except Exception as e:
            r["escaped"] += 1
            print(f"sacct case {i}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        r["records"] += read.records
        r["accepted"] += read.accepted
        r["refused"] += len(read.refused)
        r["uncounted"] += read.records - read.accepted - len(read.refused)
        for j in read.jobs:
            if unstorable(j):
                r["unstorable"] += 1
                print(f"sacct case {i}: accepted but unstorable {unstorable(j)}: {j!r}",
                      file=sys.stderr)
        pending += [j for j in read.jobs if not unstorable(j)]
        if len(pending) >= 500 or i == cases - 1:
            _, refused = upsert_isolated(conn, pending, source="sacct")
            conn.commit()
            r["db_refused"] += len(refused)
            for p in refused:
                print(f"sacct: the database refused {p.origin}: {p.reason}", file=sys.stderr)
            pending = []
    r["seconds"] = time.perf_counter() - t0
    return r


def fuzz_hook_env(cases: int, rnd: random.Random) -> dict[str, float]:
    t0 = time.perf_counter()
    r = _row(cases=cases, records=cases)
    for i in range(cases):
        env = mutated_env(rnd)
        try:
            rec = record_from_hook_env(env)
        except ValueError:
            r["refused"] += 1
            continue
        except Exception as e:
            r["escaped"] += 1
            print(f"hook-env case {i}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        r["accepted"] += 1
        if unstorable(rec):
            r["unstorable"] += 1
            print(f"hook-env case {i}: accepted but unstorable {unstorable(rec)}: {rec!r}",
                  file=sys.stderr)
    r["seconds"] = time.perf_counter() - t0
    return r


def fuzz_spool(conn: psycopg.Connection, cases: int, rnd: random.Random,
               per_ingest: int = 50) -> dict[str, float]:
    """`cases` spool files, ingested `per_ingest` at a time as the reporter would."""
    t0 = time.perf_counter()
    r = _row(cases=cases, records=cases)
    spool = tempfile.mkdtemp(prefix="slurm-io-fuzz-spool-")
    try:
        done = 0
        while done < cases:
            n = min(per_ingest, cases - done)
            for k in range(n):
                with open(os.path.join(spool, f"{done + k + 1}.json"), "wb") as f:
                    f.write(spool_file_bytes(rnd, 1795451550.25))
            before = _problem_count(conn)
            try:
                result = hookspool.ingest(conn, spool)
            except Exception as e:
                r["escaped"] += 1
                print(f"spool files {done + 1}-{done + n}: {type(e).__name__}: {e}",
                      file=sys.stderr)
                conn.rollback()
            else:
                r["accepted"] += len(result.ingested)
                r["refused"] += len(result.bad)
                r["uncounted"] += n - len(result.ingested) - len(result.bad)
                r["db_refused"] += sum(1 for p in result.bad if _refused_by_db(conn, p))
                if _problem_count(conn) - before != len(result.bad):
                    r["uncounted"] += 1
            conn.commit()
            for name in os.listdir(spool):  # the round's files and what the spool kept
                path = os.path.join(spool, name)
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            done += n
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    r["seconds"] = time.perf_counter() - t0
    return r


def _problem_count(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM problem WHERE source = 'hook-spool'").fetchone()
    return int(row[0]) if row else 0


def _refused_by_db(conn: psycopg.Connection, path: str) -> bool:
    """Whether a quarantined file got past the checks and was refused by PostgreSQL."""
    row = conn.execute("SELECT reason FROM problem WHERE source = 'hook-spool' AND origin = %s "
                       "ORDER BY id DESC LIMIT 1", (os.path.basename(path),)).fetchone()
    return bool(row and row[0].startswith("cannot be stored"))


def run(dsn: str, cases: int, seed: int) -> None:
    logging.getLogger("slurm_io").setLevel(logging.CRITICAL)  # one line per refusal otherwise
    with psycopg.connect(dsn) as conn:
        migrate.upgrade(conn)
        results = {
            "sacct (parse_sacct_text + upsert)": fuzz_sacct(conn, cases, random.Random(seed)),
            "hook env (record_from_hook_env)": fuzz_hook_env(cases, random.Random(seed + 1)),
            "hook spool (ingest, PostgreSQL)": fuzz_spool(conn, cases, random.Random(seed + 2)),
        }
    print(f"{'target':<36}" + "".join(f"{c:>11}" for c in COLUMNS))
    for name, r in results.items():
        print(f"{name:<36}" + "".join(f"{r[c]:>11.1f}" if c == "seconds" else f"{int(r[c]):>11}"
                                      for c in COLUMNS))
    failures = sum(r[c] for r in results.values()
                   for c in ("escaped", "unstorable", "uncounted", "db_refused"))
    print("every record accepted or refused, nothing escaped" if not failures
          else f"FAILURES: {int(failures)}")
    if failures:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000, help="cases per target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dsn", help="a scratch database (default: a throw-away server)")
    args = parser.parse_args()
    if args.dsn:
        run(args.dsn, args.cases, args.seed)
        return
    tmp = Path(tempfile.mkdtemp(prefix="slurm-io-bench-", dir="/tmp"))
    os.chmod(tmp, 0o755)  # as root the server runs as `postgres`, which must enter it
    pg = EmbeddedPostgres(tmp / "state")
    try:
        run(pg.ensure(), args.cases, args.seed)
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
