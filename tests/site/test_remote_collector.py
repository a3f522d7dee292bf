"""A collector on another host: TCP, TLS (the test's own CA), scram-sha-256, network faults.

The collector (`jobio collect --once`, one cycle per recorded read of a simulated OSS) writes
through a relay that is up, then refuses connections, then swallows them (a black hole: only
connect_timeout ends the wait), then is up again. What ends up in the database equals a
replay of the same reads into a local database: the spool covered every fault.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.report.usage import usage
from slurm_io.simulate import simulate
from slurm_io.store import migrate
from tests import needs
from tests.site.remote_pg import Relay, tls_postgres

pytestmark = [pytest.mark.pg,
              needs.root("runs PostgreSQL as postgres")]
REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests/collect/fake_lctl.py"
PASSWORD = "collector-secret-1"


@pytest.fixture(scope="module")
def remote(pg_base_dir: Path) -> Iterator[tuple[str, str, Path, Relay]]:
    """(superuser DSN of database slurmio, collector DSN through the relay, pgpass, relay)."""
    base = Path(pg_base_dir) / "remote"
    base.mkdir()
    base.chmod(0o755)
    with tls_postgres(base) as (admin_dsn, ca, port):
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE slurmio")
        dsn = make_conninfo(admin_dsn, dbname="slurmio")
        with psycopg.connect(dsn) as conn:
            migrate.upgrade(conn)
            conn.execute(f"CREATE ROLE collector_oss1 LOGIN BYPASSRLS PASSWORD '{PASSWORD}' "
                         "IN ROLE jobio_collector")
            conn.commit()
        relay = Relay(port)
        pgpass = base / "pgpass"
        pgpass.write_text(f"localhost:{relay.port}:slurmio:collector_oss1:{PASSWORD}\n")
        pgpass.chmod(0o600)
        collector = make_conninfo("", host="localhost", hostaddr="127.0.0.1", port=relay.port,
                                  dbname="slurmio", user="collector_oss1",
                                  sslmode="verify-full", sslrootcert=str(ca),
                                  connect_timeout=3)
        try:
            yield dsn, collector, pgpass, relay
        finally:
            relay.close()


def _collect(dsn: str, state: Path, reads: Path, pgpass: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "slurm_io.cli", "--dsn", dsn, "--state-dir", str(state),
         "collect", "--once", "--name", "oss01", "--command", f"{sys.executable} {FAKE} {reads}"],
        env={**os.environ, "PYTHONPATH": str(REPO), "PGPASSFILE": str(pgpass)},
        capture_output=True, text=True, timeout=180, check=False)


def _totals(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return usage(conn, 0, time.time() + 86400).totals


def test_only_tls_with_scram_gets_in(remote) -> None:
    dsn, collector, _, _ = remote
    params = conninfo_to_dict(collector)
    with psycopg.connect(collector, password=PASSWORD) as conn:
        ssl, = conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
                            ).fetchone()
        assert ssl is True
    plain = make_conninfo(collector, sslmode="disable", password=PASSWORD)
    with pytest.raises(psycopg.OperationalError, match="rejects connection"):
        psycopg.connect(plain)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(collector, password="wrong")
    assert params["sslmode"] == "verify-full"
    with psycopg.connect(dsn) as conn:
        method, = conn.execute("SELECT rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid "
                               "WHERE rolname = 'collector_oss1'").fetchone()
    assert method is True


def test_network_faults_are_spooled_and_nothing_is_lost(remote, pg_dsn, tmp_path) -> None:
    dsn, collector, pgpass, relay = remote
    out = tmp_path / "cluster"
    simulate(out, seed=11, start=1_795_100_000.0, hours=0.4, n_nodes=8, n_oss=1,
             jobs_per_hour=16, outage=False)
    reads = tmp_path / "reads"
    shutil.copytree(out / "oss01", reads)
    n = len(list(reads.glob("*.txt")))
    assert n >= 10
    faults = {3: "down", 4: "down", 5: "blackhole", 6: "down"}
    state = tmp_path / "state"
    for i in range(n):
        relay.set(faults.get(i, "up"))
        p = _collect(collector, state, reads, pgpass)
        assert p.returncode == 0, p.stderr[-2000:]
        if i in faults:
            assert "database unavailable" in p.stderr, p.stderr[-2000:]
            assert "spool_depth=0 " not in p.stderr
    relay.set("up")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS remote_replay WITH (FORCE)")
        conn.execute("CREATE DATABASE remote_replay")
    replay = make_conninfo(pg_dsn, dbname="remote_replay")
    subset = tmp_path / "subset"  # the same server's reads, nothing else of the cluster
    shutil.copytree(out / "oss01", subset / "oss01")
    r = subprocess.run([sys.executable, "-m", "slurm_io.cli", "--dsn", replay, "--state-dir",
                        str(tmp_path / "replay-state"), "collect", "--from", str(subset)],
                       env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    got, expected = _totals(dsn), _totals(replay)
    assert got["read_bytes"] > 0 and got == expected
    with psycopg.connect(dsn) as conn:
        batches, = conn.execute("SELECT count(*) FROM ingest_batch").fetchone()
    assert batches == n


def test_the_job_end_hook_writes_over_tls_and_spools_through_a_black_hole(
        remote, tmp_path) -> None:
    from slurm_io.notify import hookspool
    from tests.notify.conftest import hook_env, run_hook, wait_until, write_config, write_wrapper

    dsn, collector, pgpass, relay = remote
    hook_dsn = make_conninfo(collector, passfile=str(pgpass))  # SlurmUser's ~/.pgpass
    spool = tmp_path / "spool"
    wrapper = write_wrapper(tmp_path / "hook", write_config(
        tmp_path / "c.toml", dsn=hook_dsn, spool=spool, db_timeout=5))

    def stored() -> set[int]:
        with psycopg.connect(dsn) as conn:
            return {r[0] for r in conn.execute(
                "SELECT job_raw FROM job WHERE source = 'hook' AND job_raw BETWEEN 9100 AND 9199")}

    relay.set("up")
    proc, _ = run_hook(hook_env(9101), wrapper)
    assert proc.returncode == 0, proc.stderr
    wait_until(lambda: stored() == {9101}, what="the hook's job row over TLS")
    relay.set("blackhole")
    proc, _ = run_hook(hook_env(9102), wrapper)
    assert proc.returncode == 0, proc.stderr
    time.sleep(6)  # the background attempt hits connect_timeout / db_timeout
    assert [Path(f).name for f in hookspool.pending(str(spool))] == ["9102.json"]
    relay.set("up")
    proc, _ = run_hook(hook_env(9103), wrapper)
    assert proc.returncode == 0, proc.stderr
    # the drain commits a record before it removes its file (hookspool): wait for both
    wait_until(lambda: stored() == {9101, 9102, 9103} and not hookspool.pending(str(spool)),
               what="the spool drained over TLS")
