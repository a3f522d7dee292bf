"""docs/deploy.md's "Upgrading slurm-io" followed as written, with a collector writing
throughout.

The previous release is the commit before the one that added the newest migration of sql/
(the last time the schema changed, so the upgrade migrates something; `git archive` of it,
no worktree): its wheels are built and its database-host and collector venvs installed by
the document's own "Install per role" blocks, and its `jobio db upgrade` makes the schema it
knows. Its collector then reads a fake `lctl` every second (one simulated read per call)
while the document's "database host" block runs (the new release installed over the old
venv, `jobio db upgrade`), then its "other hosts" block on the collector's venv, and the
collector is restarted from it as systemd would (SIGTERM, start). The fake lctl is held at
each stage (tests/collect/fake_lctl.py's .limit) so that reads happen before, during and
after the upgrade whatever pip's speed. Checked: `jobio usage` answers on the database host
at every step; the old collector against the new schema either writes on (the release
before sql/0020 does: its COPY still fits) or says in one line that the schema is newer
than it can write and spools; once the new collector drained the spool, the stored totals
and rows equal an undisturbed run of the new release's collector on the same reads into a
fresh database: no row lost.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from slurm_io.report.usage import usage
from slurm_io.simulate import simulate
from slurm_io.store import migrate
from tests.install.roles import DEPLOY_DOC, ROOT, doc_blocks, install_as_documented, run_block

pytestmark = pytest.mark.pg

FAKE = ROOT / "tests" / "collect" / "fake_lctl.py"
SECTION = "## Upgrading slurm-io"


def upgrade_blocks(text: str) -> dict[str, str]:
    """`# upgrade: NAME -- ...` blocks of the section, by NAME."""
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    blocks: dict[str, str] = {}
    for block in text[start:end].split("```sh\n")[1:]:
        body = block.split("\n```", 1)[0]
        first = body.splitlines()[0]
        assert first.startswith("# upgrade: "), first
        blocks[first.removeprefix("# upgrade: ").split(" -- ")[0]] = body + "\n"
    return blocks


def previous_release() -> str:
    """The commit before the one that added the newest migration."""
    newest = migrate.available()[-1].path.relative_to(ROOT)
    added = subprocess.run(["git", "-C", str(ROOT), "log", "--diff-filter=A", "--format=%H",
                            "-1", "--", str(newest)], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert added, f"no commit added {newest}"
    return f"{added}~1"


def _old_checkout(dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", previous_release()],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _old_wheels(work: Path) -> Path:
    """The build block of today's document, run in the previous release's checkout."""
    build, _ = doc_blocks(DEPLOY_DOC.read_text())
    src, wheels = _old_checkout(work / "old-checkout"), work / "old-wheels"
    proc = run_block(build, cwd=src, env={"WHEELS": str(wheels)})
    shutil.rmtree(src, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return wheels


def _jobio(bin_dir: Path, *args: str, dsn: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "jobio"), *args], capture_output=True, text=True,
                          check=False, timeout=300, env={**_clean_env(), "SLURM_IO_DSN": dsn})


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH or venv of the test run leaks into an installed `jobio`."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SLURM_IO_CONFIG")}


def _collector(bin_dir: Path, dsn: str, state: Path, reads: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(bin_dir / "jobio"), "--dsn", dsn, "--state-dir", str(state), "collect", "--name",
         "oss01", "--command", f"{sys.executable} {FAKE} {reads}", "--interval", "1"],
        env=_clean_env(), stdout=subprocess.DEVNULL, stderr=log.open("a"))


def _calls(reads: Path) -> int:
    counter = reads / ".next"
    return int(counter.read_text()) if counter.exists() else 0


def _wait(cond, what: str, timeout: float = 600.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _batches(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM ingest_batch").fetchone()
        return int(row[0]) if row else 0


def _cycles(log: Path) -> int:
    """Cycles the collectors logged (each one batch, stored or spooled)."""
    return log.read_text().count(" cycle oss01 ")


def _stored(dsn: str) -> tuple[dict[str, int], int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT count(*) FROM jobstats_delta").fetchone()
        return usage(conn, 0, time.time() + 86400).totals, rows[0] if rows else 0


def test_the_documented_upgrade_under_a_writing_collector_loses_nothing(
        wheels: Path, install_dir: Path, empty_db_dsn: str, pg_dsn: str,
        tmp_path: Path) -> None:
    blocks = upgrade_blocks(DEPLOY_DOC.read_text())
    assert set(blocks) == {"database host", "other hosts"}
    work = install_dir / "upgrade"
    old = _old_wheels(work)
    db_bin = install_as_documented(old, "server", work / "db")
    oss_bin = install_as_documented(old, "collector", work / "oss")
    dsn = empty_db_dsn
    step = _jobio(db_bin, "db", "upgrade", dsn=dsn)
    assert step.returncode == 0, step.stderr
    with psycopg.connect(dsn) as conn:
        old_schema = migrate.current_version(conn)
    assert 0 < old_schema < migrate.schema_version()

    out = tmp_path / "cluster"
    simulate(out, seed=5, start=1_795_000_000.0, hours=1.5, n_nodes=8, n_oss=1,
             jobs_per_hour=16, outage=False)
    reads, state, log = out / "oss01", tmp_path / "state", tmp_path / "collector.log"
    n_reads = len(list(reads.glob("*.txt")))
    stages = (n_reads // 4, n_reads // 2, n_reads)  # reads before, during, after the upgrade
    (reads / ".limit").write_text(str(stages[0]))
    collector = _collector(oss_bin, dsn, state, reads, log)
    try:
        _wait(lambda: _calls(reads) >= stages[0], "the old collector's first reads")
        assert _jobio(db_bin, "usage", dsn=dsn).returncode == 0  # old reader, old schema

        step = run_block(blocks["database host"], cwd=work,
                         env={"WHEELS": str(wheels), "PREFIX": str(work / "db"),
                              "SLURM_IO_DSN": dsn})
        assert step.returncode == 0, step.stderr[-3000:]
        with psycopg.connect(dsn) as conn:
            assert migrate.current_version(conn) == migrate.schema_version()
        assert _jobio(db_bin, "usage", dsn=dsn).returncode == 0  # new reader, new schema

        # the old collector against the new schema: it writes on, or it says in one line
        # that the schema is newer than it can write and spools (a release from before the
        # check at connect may only write on or fail: it must not fail)
        before = _batches(dsn)
        (reads / ".limit").write_text(str(stages[1]))
        _wait(lambda: _calls(reads) >= stages[1], "the old collector's reads after the upgrade")
        time.sleep(3)  # the last of them stored or spooled
        refused = "newer than this jobio" in log.read_text()
        spooled = list((state / "spool").glob("*.batch"))
        assert (refused and spooled) or (_batches(dsn) > before and not refused), (
            log.read_text()[-3000:])
        assert " ERROR " not in log.read_text() or refused, log.read_text()[-3000:]
        assert _jobio(db_bin, "usage", dsn=dsn).returncode == 0

        step = run_block(blocks["other hosts"], cwd=work,
                         env={"WHEELS": str(wheels), "PREFIX": str(work / "oss"),
                              "ROLE": "collector"})
        assert step.returncode == 0, step.stderr[-3000:]
        collector.send_signal(signal.SIGTERM)  # systemctl restart jobio-collect
        assert collector.wait(timeout=120) == 0
        collector = _collector(oss_bin, dsn, state, reads, log)
        (reads / ".limit").write_text(str(stages[2]))
        _wait(lambda: _calls(reads) >= n_reads, "the new collector's reads")
        cycles = _cycles(log)  # two cycles more: the last read's batch is flushed
        _wait(lambda: _cycles(log) >= cycles + 2 and not list(
            (state / "spool").glob("*.batch")), "the drain of the spool")
        assert _jobio(db_bin, "usage", dsn=dsn).returncode == 0
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.wait(timeout=120)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]

    # the undisturbed run: the same reads, the new release's collector alone, a fresh database
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS upgrade_undisturbed")
        conn.execute("CREATE DATABASE upgrade_undisturbed")
    replay = make_conninfo(pg_dsn, dbname="upgrade_undisturbed")
    again = tmp_path / "again"
    shutil.copytree(reads, again, ignore=shutil.ignore_patterns(".*"))
    step = subprocess.run([sys.executable, "-m", "slurm_io.cli", "--dsn", replay, "db",
                           "upgrade"], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert step.returncode == 0, step.stderr
    log2 = tmp_path / "undisturbed.log"
    undisturbed = _collector(oss_bin, replay, tmp_path / "state2", again, log2)
    try:
        _wait(lambda: _calls(again) >= n_reads, "the undisturbed run's reads")
        cycles = _cycles(log2)
        _wait(lambda: _cycles(log2) >= cycles + 2, "the undisturbed run's last batch")
    finally:
        undisturbed.send_signal(signal.SIGTERM)
        undisturbed.wait(timeout=120)
    (got, got_rows), (expected, expected_rows) = _stored(dsn), _stored(replay)
    assert got["read_bytes"] > 0 and got == expected
    assert got_rows == expected_rows

