"""Every migration of sql/, one at a time, on a database holding a site's data, timed, with
the locks it takes and how long a concurrent collector waits on them.

    .venv/bin/python bench/bench_show.py build                  # once: the site's data
    .venv/bin/python bench/bench_migrations.py [--dsn DSN] [--source-db bench_show]
        [--db bench_migrations] [--from 0] [--ingest-batches 432000] [--interval 1]

Why step by step and not a replay: most migrations are not idempotent (CREATE TABLE, ADD
COLUMN), and the idempotent ones (IF NOT EXISTS) would time nothing on a database that has
them already. So a new database `--db` starts at schema `--from` (default 0: nothing) and is
upgraded one migration at a time with `migrate.upgrade` (what `jobio db upgrade` runs); before
each step every table that exists by then and is still empty is filled from `--source-db` (a
database at the newest schema, e.g. bench_show's 30-day, 2,000-node build, or the lead's
10,000-node one), with the columns both have: each migration meets the data a site would have
in the tables it touches. Not timed: the fill (binary COPY, FK checks and triggers off), and
`--ingest-batches` synthetic ingest_batch rows (default: 20 collectors x 30 days x 720
cycles; the build writes one per 20,000 rows, a site one per collector cycle).

Meanwhile a second process (`writer`) writes like a collector every `--interval` s: the real
`write_batch` (ingest_batch row + binary COPY into jobstats_delta) once the schema has what
it writes (sql/0014), before that the same statements with the columns of the schema (what
the release of that time sent); and it reads like `jobio show` (one job's deltas). Printed
per migration: its wall time, the strongest locks it held on the tables writers and readers
use (pg_locks of its backend, polled every 5 ms) and how long each was seen held, and the
longest write and read that overlapped it beside the median one outside any migration: the
excess is the wait. At the end: the writer's rows acknowledged vs stored (nothing lost).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql

from slurm_io.store import migrate, partitions

WRITER = "bench-migrations"
WRITER_JOBS = 9_000_000  # the writer's job ids: none of the source's (bench_show: 2,000,000+)
LAST_DAY = 1_790_000_000.0 + 29 * 86400  # bench_show's T0 + 29 days; run() takes the source's
# lock modes, weakest first; from SHARE on, a mode conflicts with ROW EXCLUSIVE (INSERT/COPY)
MODES = ("AccessShareLock", "RowShareLock", "RowExclusiveLock", "ShareUpdateExclusiveLock",
         "ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock")
BLOCKS_WRITERS = set(MODES[4:])
WATCHED = ("jobstats_delta", "ingest_batch", "host", "fs_target", "job", "job_node", "job_io",
           "job_io_hour")


def dbname_dsn(dsn: str, dbname: str) -> str:
    """`dsn` naming database `dbname` instead."""
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**params)


def server_dsn(args: argparse.Namespace) -> str:
    if args.dsn:
        return str(args.dsn)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_show import dsn_of  # the persistent bench server of bench_show.py

    return dsn_of(args)


# -- the fill: the source's rows into the tables the schema has by now ------------------------


def _tables(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace"
        " AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname")]


def _columns(conn: psycopg.Connection, table: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum", (table,))]


def fill(src: psycopg.Connection, dst: psycopg.Connection, done: set[str],
         ingest_batches: int) -> list[str]:
    """Copy the source's rows into each table of `dst` not filled yet; the names filled."""
    filled = []
    source_tables = set(_tables(src))
    for table in _tables(dst):
        if table in done or table == "schema_migrations":
            continue
        done.add(table)
        if dst.execute(sql.SQL("SELECT EXISTS (SELECT FROM {})").format(
                sql.Identifier(table))).fetchone() != (False,):
            continue  # filled by its migration (db_identity, jobio_setting)
        if table == "ingest_batch" and ingest_batches:
            _synthetic_batches(dst, ingest_batches)
        if table not in source_tables:
            continue
        src_cols = set(_columns(src, table))
        cols = [c for c in _columns(dst, table) if c in src_cols]
        if table == partitions.PARENT:
            days = {datetime.strptime(r[0][-8:], "%Y%m%d").date() for r in src.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = 'jobstats_delta'::regclass")}
            partitions.ensure_days(dst, days)
        names = sql.SQL(", ").join(map(sql.Identifier, cols))
        with dst.transaction():
            dst.execute("SET LOCAL session_replication_role = replica")  # no FK checks
            with src.cursor().copy(sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT (FORMAT BINARY)")
                                   .format(names, sql.Identifier(table))) as out, \
                    dst.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)")
                                      .format(sql.Identifier(table), names)) as into:
                for data in out:
                    into.write(data)
            for col in cols:  # identity and serial columns continue after the copied keys
                seq = dst.execute("SELECT pg_get_serial_sequence(%s, %s)",
                                  (table, col)).fetchone()
                if seq and seq[0]:
                    dst.execute(sql.SQL("SELECT setval(%s, greatest((SELECT max({}) FROM {}),"
                                        " 1))").format(sql.Identifier(col),
                                                       sql.Identifier(table)), (seq[0],))
        src.commit()
        filled.append(table)
        dst.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    return filled


def source_span(src: psycopg.Connection) -> tuple[float, int, int]:
    """The start of the source's newest day of deltas (where the writer writes: a day with a
    partition, whatever the build) and the range of its job keys (what the reader reads)."""
    row = src.execute("SELECT extract(epoch FROM date_trunc('day', max(ts_end) AT TIME ZONE "
                      "'UTC'))::float8 FROM jobstats_delta").fetchone()
    jobs = src.execute("SELECT min(job), max(job) FROM job").fetchone()
    last = float(row[0]) if row and row[0] is not None else LAST_DAY
    lo, hi = (int(jobs[0]), int(jobs[1])) if jobs and jobs[0] is not None else (2_000_000,
                                                                               2_050_000)
    return last, lo, hi


def _synthetic_batches(dst: psycopg.Connection, n: int) -> None:
    """`n` ingest_batch rows of 20 collectors, one per 120 s cycle, ending at LAST_DAY."""
    per = max(1, n // 20)
    with dst.transaction():
        dst.execute(
            "INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, n_problems,"
            " n_repaired, n_unattributable, targets) SELECT 'oss' || c, s, "
            "to_timestamp(%s) - (%s - s) * interval '120 s', 1000, 1000, 0, 0, 0, "
            "ARRAY['scratch-OST0000'] FROM generate_series(1, 20) c, generate_series(1, %s) s",
            (LAST_DAY, per, per))


# -- the writer: a collector and a reader, in a process of their own -------------------------


def writer(args: argparse.Namespace) -> None:
    """Write a batch every `--interval` s and read one job, logging each call's (start, end)
    as JSON lines to `--log` until the file `--stop` exists."""
    from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId
    from slurm_io.store.writer import write_batch

    log = open(args.log, "a", buffering=1)  # noqa: SIM115 -- open for the process's life
    stop = Path(args.stop)
    wconn = psycopg.connect(args.dsn, autocommit=True)
    rconn = psycopg.connect(args.dsn, autocommit=True)
    seq = 0
    while not stop.exists():
        seq += 1
        t = args.last_day + (seq % 600) * 120
        pairs = []
        for i in range(args.rows):
            node = f"c{i % 2000:04d}"
            rid = f"{WRITER_JOBS + i}:{1000 + i % 300}:{node}"
            st = ByteStats(10, 4096, 1 << 20, 10 << 20, None, None)
            pairs.append((Delta(f"scratch-OST{i % 16:04x}", rid, rid, t - 120, t, t - 5,
                                {"write_bytes": 10}, {"write_bytes": st}, 0),
                          JobId(IdClass.EXACT, WRITER_JOBS + i, 1000 + i % 300, node, None,
                                False)))
        batch = Batch(WRITER, seq, t, (), pairs, len(pairs), 0, 0, 0)
        t0 = time.time()
        try:
            new_schema = wconn.execute(
                "SELECT 1 FROM pg_attribute WHERE attrelid = 'jobstats_delta'::regclass "
                "AND attname = 'entry_start'").fetchone() is not None
            if new_schema:
                write_batch(wconn, batch)
            else:
                _old_write(wconn, batch)
            ok = ""
        except psycopg.Error as e:
            ok = str(e).splitlines()[0]
        print(json.dumps({"kind": "write", "t0": t0, "t1": time.time(), "seq": seq,
                          "rows": len(pairs), "error": ok}), file=log)
        t0 = time.time()
        try:
            rconn.execute("SELECT count(*) FROM jobstats_delta WHERE job = %s AND ts_end "
                          "BETWEEN to_timestamp(%s) AND to_timestamp(%s)",
                          (args.job_lo + seq % max(1, args.job_hi - args.job_lo),
                           args.last_day - 86400 * 3, args.last_day + 86400))
            ok = ""
        except psycopg.Error as e:
            ok = str(e).splitlines()[0]
        print(json.dumps({"kind": "read", "t0": t0, "t1": time.time(), "error": ok}), file=log)
        time.sleep(max(0.0, args.interval - (time.time() - t0)))


def _old_write(conn: psycopg.Connection, batch: object) -> None:
    """What a collector from before sql/0014 sent: the same batch row and a COPY of the
    columns that schema has (same tables, same lock modes as write_batch)."""
    from slurm_io.model import Batch

    assert isinstance(batch, Batch)
    partitions.ensure_days(conn, {partitions.day_of(batch.read_time)})
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, "
                    "n_problems, n_repaired, n_unattributable, targets) VALUES (%s, %s, "
                    "to_timestamp(%s), %s, %s, 0, 0, 0, '{}') ON CONFLICT DO NOTHING",
                    (batch.collector, batch.seq, batch.read_time, len(batch.deltas),
                     batch.n_entries))
        target = cur.execute("SELECT min(target_id) FROM fs_target").fetchone()
        host = cur.execute("SELECT min(host_id) FROM host").fetchone()
        with cur.copy("COPY jobstats_delta (ts_start, ts_end, target_id, id_class, job, uid, "
                      "host_id, raw_id, write_bytes, write_bytes_samples) FROM STDIN") as copy:
            for d, j in batch.deltas:
                copy.write_row((datetime.fromtimestamp(d.t0, UTC),
                                datetime.fromtimestamp(d.t1, UTC), target and target[0],
                                int(j.id_class), j.job, j.uid, host and host[0], d.raw_id,
                                10 << 20, 10))


# -- the run ------------------------------------------------------------------------------


def _lock_poller(dsn: str, pid: int, seen: dict[str, tuple[str, float, float]],
                 stop: threading.Event) -> None:
    """Record the strongest lock `pid` holds on each watched table until `stop`, with when
    it was first and last seen held (how long writers that conflict with it wait, at most)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            now = time.time()
            for rel, mode in conn.execute(
                    "SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON "
                    "c.oid = l.relation WHERE l.pid = %s AND l.granted AND c.relkind IN ('r', 'p')",
                    (pid,)):
                name = "jobstats_delta" if rel.startswith(partitions.PREFIX) else rel
                if name not in WATCHED:
                    continue
                old = seen.get(name, (MODES[0], now, now))
                if MODES.index(mode) > MODES.index(old[0]):
                    seen[name] = (mode, now, now)
                elif mode == old[0]:
                    seen[name] = (mode, old[1], now)
            stop.wait(0.005)


def run(args: argparse.Namespace) -> None:
    server = server_dsn(args)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(args.db)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(args.db)))
    dsn = dbname_dsn(server, args.db)
    src = psycopg.connect(args.source_dsn or dbname_dsn(server, args.source_db))
    global LAST_DAY
    LAST_DAY, job_lo, job_hi = source_span(src)
    conn = psycopg.connect(dsn, autocommit=True)
    work = Path(tempfile.mkdtemp(prefix="bench-migrations-"))
    (work / "sql").mkdir()
    log, stop = work / "writer.log", work / "stop"
    settings = {"jobio.cluster": "bench"}
    steps: list[dict] = []
    done: set[str] = set()
    proc = None
    try:
        for m in migrate.available():
            shutil.copy(m.path, work / "sql" / m.path.name)
            if m.version <= args.from_version:  # the starting schema: not timed
                migrate.upgrade(conn, work / "sql", settings=settings)
                continue
            t = time.time()
            filled = fill(src, conn, done, args.ingest_batches)
            if filled:
                print(f"  filled {', '.join(filled)} ({time.time() - t:.0f} s)", flush=True)
            if proc is None and "jobstats_delta" in done:
                proc = subprocess.Popen([sys.executable, __file__, "writer", "--dsn", dsn,
                                         "--log", str(log), "--stop", str(stop),
                                         "--interval", str(args.interval),
                                         "--rows", str(args.rows),
                                         "--last-day", str(LAST_DAY),
                                         "--job-lo", str(job_lo), "--job-hi", str(job_hi)])
                time.sleep(3 * args.interval)
            locks: dict[str, tuple[str, float, float]] = {}
            halt = threading.Event()
            poller = threading.Thread(target=_lock_poller, args=(
                dsn, conn.info.backend_pid, locks, halt))
            poller.start()
            t0 = time.time()
            migrate.upgrade(conn, work / "sql", settings=settings)
            t1 = time.time()
            halt.set()
            poller.join()
            steps.append({"name": m.name, "t0": t0, "t1": t1, "locks": locks})
            print(f"{m.name}: {t1 - t0:.2f} s", flush=True)
            time.sleep(2 * args.interval)  # writes between migrations: the baseline
    finally:
        stop.touch()
        if proc is not None:
            proc.wait(timeout=120)
    report(conn, steps, [json.loads(line) for line in log.read_text().splitlines()]
           if log.exists() else [])
    shutil.rmtree(work, ignore_errors=True)
    if not args.keep:
        conn.close()
        src.close()
        with psycopg.connect(server, autocommit=True) as c:
            c.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(args.db)))


def report(conn: psycopg.Connection, steps: list[dict], calls: list[dict]) -> None:
    """The per-migration table and the writer's rows stored vs acknowledged."""
    def inside(c: dict, s: dict) -> bool:
        return c["t0"] < s["t1"] and c["t1"] > s["t0"]

    def outside(kind: str) -> list[float]:
        return [c["t1"] - c["t0"] for c in calls if c["kind"] == kind
                and not any(inside(c, s) for s in steps)]

    base = {k: statistics.median(outside(k) or [0.0]) for k in ("write", "read")}
    print(f"\nwriter: {args_rows_note(calls)}; median write {base['write'] * 1000:.0f} ms, "
          f"read {base['read'] * 1000:.0f} ms outside migrations (load "
          f"{os.getloadavg()[0]:.2f})")
    print(f"{'migration':34} {'time s':>8}  {'longest write / read ms':>24}  "
          f"locks held (writers' and readers' tables)")
    for s in steps:
        longest = {k: max([c["t1"] - c["t0"] for c in calls if c["kind"] == k and inside(c, s)]
                          or [0.0]) for k in ("write", "read")}
        held = ", ".join(f"{t} {mode.removesuffix('Lock')} {t1 - t0:.1f} s"
                         + (" (blocks writers)" if mode in BLOCKS_WRITERS else "")
                         for t, (mode, t0, t1) in sorted(s["locks"].items())
                         if MODES.index(mode) > MODES.index("RowExclusiveLock"))
        print(f"{s['name']:34} {s['t1'] - s['t0']:8.2f}  "
              f"{longest['write'] * 1000:11.0f} / {longest['read'] * 1000:10.0f}  "
              f"{held or '-'}")
    errors = sorted({c["error"] for c in calls if c["error"]})
    acked = sum(c["rows"] for c in calls if c["kind"] == "write" and not c["error"])
    stored = conn.execute("SELECT coalesce(sum(n_rows), 0) FROM ingest_batch WHERE collector "
                          "= %s", (WRITER,)).fetchone()
    # the writer's job ids only: a source may have larger keys of its own (sql/0020's
    # job_key_seq starts at 2**32), which a bare `job >= WRITER_JOBS` would count too
    rows = conn.execute("SELECT count(*) FROM jobstats_delta WHERE ts_end >= to_timestamp(%s)"
                        " AND job BETWEEN %s AND %s",
                        (LAST_DAY, WRITER_JOBS, WRITER_JOBS + 999_999)).fetchone()
    print(f"writer rows acknowledged {acked:,}, in ingest_batch {stored[0] if stored else 0:,}"
          f", in jobstats_delta (its days) {rows[0] if rows else 0:,}; errors: "
          f"{'; '.join(errors) or 'none'}")


def args_rows_note(calls: list[dict]) -> str:
    writes = [c for c in calls if c["kind"] == "write"]
    return f"{len(writes)} batches of {writes[0]['rows'] if writes else 0} rows"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", default="run", choices=("run", "writer"))
    ap.add_argument("--dsn", help="the server (run) or the database (writer)")
    ap.add_argument("--source-db", default="bench_show")
    ap.add_argument("--source-dsn", help="the source database on another server (default: "
                    "--source-db on the server of --dsn)")
    ap.add_argument("--last-day", type=float, default=LAST_DAY, help=argparse.SUPPRESS)
    ap.add_argument("--job-lo", type=int, default=2_000_000, help=argparse.SUPPRESS)
    ap.add_argument("--job-hi", type=int, default=2_050_000, help=argparse.SUPPRESS)
    ap.add_argument("--db", default="bench_migrations")
    ap.add_argument("--from", dest="from_version", type=int, default=0)
    ap.add_argument("--ingest-batches", type=int, default=20 * 30 * 720)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--rows", type=int, default=2000, help="rows per written batch")
    ap.add_argument("--keep", action="store_true", help="keep the migrated database")
    ap.add_argument("--log")
    ap.add_argument("--stop")
    args = ap.parse_args()
    (writer if args.what == "writer" else run)(args)


if __name__ == "__main__":
    main()
