"""What the privacy tests share: the OS users alice, bob (users) and carol (the admin
group), a database loaded with their jobs and others', and psql as one of them (peer
authentication through the embedded server's unix socket). The fixtures `uids` and `db` are
here, where the site tests import them too (tests/privacy/conftest.py for this folder)."""

from __future__ import annotations

import json
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.model import IdClass
from slurm_io.store import accounts, partitions
from slurm_io.store.embedded import find_bindir

ADMIN_GROUP = "slurmio-admin"
USERS = ("alice", "bob")
ADMIN = "carol"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
T0 = datetime(2024, 4, 2, 12, 0, tzinfo=UTC)  # deltas run from here across midnight
ROWS_PER_JOB = 100  # one every 10 minutes: 16.5 hours
ALICE_JOBS = (5001, 5002, 5003)
BOB_JOBS = (6001, 6002)
OTHER_JOBS = tuple(range(10000, 10200))  # owners with no OS account here
ORPHAN_JOB = 7001  # owner unknown (uid NULL): nobody but admins sees it
UID_ONLY_ROWS = {"alice": 30, "bob": 20}  # `:uid:host` entries not resolved to a job


# -- OS users ------------------------------------------------------------------------------


def _run_admin_tool(cmd: list[str], ok_codes: tuple[int, ...] = (0,)) -> int:
    """Run useradd/groupadd/usermod, retrying while another process holds /etc/passwd."""
    for _ in range(50):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode in ok_codes:
            return proc.returncode
        if "lock" not in proc.stderr.lower():
            raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
        time.sleep(0.2)
    raise RuntimeError(f"{' '.join(cmd)}: /etc/passwd stayed locked")


def _ensure_os_user(name: str, groups: tuple[str, ...] = ()) -> int:
    """Create `name` (useradd -m) unless it exists; add it to `groups`. Idempotent and safe
    against a concurrent creator (useradd exits 9 when the name was taken meanwhile)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        _run_admin_tool(["useradd", "-m", "-s", "/bin/bash", name], ok_codes=(0, 9))
    for group in groups:
        _run_admin_tool(["usermod", "-a", "-G", group, name])
    return pwd.getpwnam(name).pw_uid


@pytest.fixture(scope="module")
def uids() -> dict[str, int]:
    _run_admin_tool(["groupadd", "-f", ADMIN_GROUP])
    found = {name: _ensure_os_user(name) for name in USERS}
    found[ADMIN] = _ensure_os_user(ADMIN, (ADMIN_GROUP,))
    assert ADMIN in (accounts.group_members(ADMIN_GROUP) or [])
    return found


# -- the database --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(pg_dsn: str, _migrated_template: str, uids: dict[str, int]) -> Iterator[str]:
    """A migrated database with roles for alice, bob and carol and jobs of all kinds (its
    name: psql connects to it as each of them)."""
    from tests.conftest import _fresh_database

    for dsn in _fresh_database(pg_dsn, _migrated_template):
        with psycopg.connect(dsn) as conn:
            users = [(n, uids[n]) for n in (*USERS, ADMIN)]
            result = accounts.sync_accounts(conn, users,
                                            accounts.group_members(ADMIN_GROUP) or [])
            assert ADMIN not in [n for n, _ in result.skipped]
            _load(conn, uids)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")
        yield conninfo_to_dict(dsn)["dbname"]


def _jobs(uids: dict[str, int]) -> list[tuple[int, int | None]]:
    return [
        *((j, uids["alice"]) for j in ALICE_JOBS),
        *((j, uids["bob"]) for j in BOB_JOBS),
        *((j, 3000 + j % 20) for j in OTHER_JOBS),
        (ORPHAN_JOB, None),
    ]


def _load(conn: psycopg.Connection, uids: dict[str, int]) -> None:
    """Insert jobs, nodes, deltas and attributed I/O directly, as the superuser."""
    end = T0 + timedelta(minutes=10 * ROWS_PER_JOB)
    partitions.ensure_partitions(conn, T0.timestamp(), end.timestamp(), ahead_days=0)
    jobs = _jobs(uids)
    names = {uid: name for name, uid in uids.items()}
    with conn.transaction():
        # Identity ids 1 and 2, and target 1 (a fresh database).
        conn.execute("INSERT INTO host (name) VALUES ('node01'), ('node02')")
        conn.execute("INSERT INTO fs_target (name, fs, kind, idx) "
                     "VALUES ('scratch-OST0000', 'scratch', 'OST', 0)")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO job (job, jobid, uid, user_name, nodes, start_time, source) "
                "VALUES (%s, %s, %s, %s, %s, %s, 'test')",
                [(j, str(j), uid, names.get(uid), ["node01"], T0) for j, uid in jobs],
            )
            cur.executemany(
                "INSERT INTO job_node (host_id, job, uid, start_time) VALUES (%s, %s, %s, %s)",
                [(h, j, uid, T0) for j, uid in jobs for h in ((1, 2) if j == 5001 else (1,))],
            )
            cur.executemany(
                "INSERT INTO job_io (job, uid, complete, totals, recovered, ambiguous, "
                "by_target, by_node, timeline, quality) "
                "VALUES (%s, %s, true, %s, '{}', '{}', '{}', '{}', '[]', '{}')",
                [(j, uid, json.dumps({"read_bytes": j})) for j, uid in jobs],
            )
        insert = """
            INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, uid,
                                        host_id, raw_id, read_bytes)
            SELECT t - interval '10 min', t, 1, %(cls)s, j.job, j.uid, 1,
                   concat_ws(':', j.job, j.uid, 'node01'), 4096 * (g + 1)
            FROM unnest(%(jobs)s::bigint[], %(uids)s::int[]) AS j(job, uid),
                 generate_series(0, %(n)s - 1) AS g,
                 LATERAL (SELECT %(t0)s::timestamptz + g * interval '10 min' AS t) AS x
        """
        conn.execute(insert, {"cls": int(IdClass.EXACT), "jobs": [j for j, _ in jobs],
                              "uids": [u for _, u in jobs], "n": ROWS_PER_JOB, "t0": T0})
        for user, n in UID_ONLY_ROWS.items():
            conn.execute(insert, {"cls": int(IdClass.EXACT), "jobs": [None],
                                  "uids": [uids[user]], "n": n, "t0": T0})
        conn.execute(insert, {"cls": int(IdClass.EXACT), "jobs": [None], "uids": [0],
                              "n": 10, "t0": T0})
        conn.execute(
            "INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, "
            "n_problems, n_repaired, n_unattributable, targets) "
            "VALUES ('oss1', 1, %s, 0, 0, 0, 0, 0, '{}')", (T0,))


# -- acting as an OS user ------------------------------------------------------------------


def _socket_dir(pg_dsn: str) -> str:
    return conninfo_to_dict(pg_dsn)["host"]


def psql(os_user: str, pg_dsn: str, database: str, query: str,
         role: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `query` with psql as OS user `os_user`: peer auth over the embedded socket.

    Without `role` libpq logs in as the role named like the OS account, as `jobio` would.
    """
    params: dict[str, Any] = {"host": _socket_dir(pg_dsn), "port": "5432", "dbname": database}
    if role is not None:
        params["user"] = role
    home = pwd.getpwnam(os_user).pw_dir
    return subprocess.run(
        [RUNUSER, "-u", os_user, "--", str(find_bindir() / "psql"), "-X", "-A", "-t", "-q",
         "-v", "ON_ERROR_STOP=1", "-d", make_conninfo("", **params), "-c", query],
        capture_output=True, text=True, cwd="/", timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": home, "PGCONNECT_TIMEOUT": "10"},
    )


def query_as(os_user: str, pg_dsn: str, database: str, query: str) -> str:
    proc = psql(os_user, pg_dsn, database, query)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


COUNTS = (
    "SELECT (SELECT count(*) FROM job {w}), (SELECT count(*) FROM job_node {w}), "
    "(SELECT count(*) FROM job_io {w}), (SELECT count(*) FROM jobstats_delta {w})"
)


def _counts_as(os_user: str, pg_dsn: str, database: str, where: str = "") -> tuple[int, ...]:
    out = query_as(os_user, pg_dsn, database, COUNTS.format(w=where))
    return tuple(int(v) for v in out.split("|"))


def _expected(pg_dsn: str, database: str, uid: int) -> tuple[int, ...]:
    """What `uid` may see, computed as the superuser without the policies' help."""
    with psycopg.connect(make_conninfo(pg_dsn, dbname=database)) as conn:
        row = conn.execute(
            """
            WITH mine AS (SELECT job FROM job WHERE uid = %(u)s)
            SELECT (SELECT count(*) FROM mine),
                   (SELECT count(*) FROM job_node WHERE job IN (SELECT job FROM mine)),
                   (SELECT count(*) FROM job_io WHERE job IN (SELECT job FROM mine)),
                   (SELECT count(*) FROM jobstats_delta
                    WHERE uid = %(u)s OR job IN (SELECT job FROM mine))
            """,
            {"u": uid},
        ).fetchone()
    assert row is not None
    return tuple(row)


def _totals(pg_dsn: str, database: str) -> tuple[int, ...]:
    with psycopg.connect(make_conninfo(pg_dsn, dbname=database)) as conn:
        row = conn.execute(COUNTS.format(w="")).fetchone()
    assert row is not None
    return tuple(row)
