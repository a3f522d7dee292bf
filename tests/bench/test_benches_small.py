"""Every script in bench/ runs here in a small form, so that a refactor that breaks one fails
the suite instead of leaving a bench nobody can run (issue 25: two benches had rotted).

Each bench runs as a new process exactly as a person runs it (`python bench/x.py ...`),
on tiny inputs against the session's real PostgreSQL, and must print its figures; their
values are not judged here (performance is measured by bench/budget.py, never asserted).
`test_every_bench_has_a_small_form` holds that a new bench gets its small form too.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests import needs

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"


def bench(*argv: str, timeout: float = 300) -> str:
    """stdout of `python bench/ARGV...` from the repository root; it must exit 0."""
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def show_db(pg_dsn: str) -> str:
    """A 2-day, 300-job database of bench_show.py build (what the views benches read)."""
    out = bench("bench/bench_show.py", "build", "--jobs", "300", "--days", "2", "--dsn", pg_dsn,
                "--db", "small_bench_show")
    assert re.search(r"[\d,]+ delta rows in", out), out
    return make_conninfo(pg_dsn, dbname="small_bench_show")


@pytest.fixture(scope="module")
def site_venv(pg_base_dir: Path) -> Path:
    """The site-like venv of /usr/bin/python3 with this checkout, not editable (as root the
    service and start-up figures run commands as other accounts, who must reach it)."""
    sys.path.insert(0, str(REPO))
    from bench.bench_service import public_venv

    path = pg_base_dir / "site-venv"
    public_venv(path)
    return path


@pytest.fixture(scope="module", autouse=True)
def bench_accounts() -> None:
    """The OS accounts the benches run commands as, created when missing as tests/privacy
    creates them: alice, bob and carol (bench_service spreads its requests over them), carol
    in the admin group (soak_serve asks as her about everybody's jobs). The suite's order
    must not decide whether the benches have them: a fresh machine has only the testbed's
    alice and bob until tests/privacy, which runs after this module."""
    if os.geteuid() != 0:
        return
    from tests.privacy.privacy_db import (
        ADMIN,
        ADMIN_GROUP,
        USERS,
        _ensure_os_user,
        _run_admin_tool,
    )

    _run_admin_tool(["groupadd", "-f", ADMIN_GROUP])
    for name in USERS:
        _ensure_os_user(name)
    _ensure_os_user(ADMIN, (ADMIN_GROUP,))


def test_budget_small_produces_every_figure(pg_dsn: str, site_venv: Path,
                                            tmp_path: Path) -> None:
    """budget.py --small runs bench_parse's timing, bench_cycle (child), bench_ingest,
    bench_show build/run/batch, `jobio top`, bench_exporter scrape, bench_hook, bench_pack,
    bench_service and bench_startup, and the site figures (bench_show build --density site,
    i.e. site_density, then every part of bench_site on that tiny database), and yields
    every figure of the budget."""
    sys.path.insert(0, str(REPO))
    from bench.budget_rules import FIGURES

    out = tmp_path / "figures.json"
    bench("bench/budget.py", "--small", "--dsn", pg_dsn, "--venv", str(site_venv),
          "--json", str(out), timeout=900)
    figures = json.loads(out.read_text())["figures"]
    expected = set(FIGURES)
    if os.geteuid() != 0:  # the service and start-up figures need other accounts
        expected = {k for k in expected if not k.startswith(("service", "startup"))}
    assert set(figures) == expected
    assert all(v > 0 for v in figures.values()), figures


def test_bench_parse_small() -> None:
    out = bench("bench/bench_parse.py", "--entries", "300", "--releases", "2.12,2.16",
                "--repeat", "1")
    rows = [ln.split() for ln in out.splitlines()[1:]]
    assert [r[:2] for r in rows] == [["OST", "2.12"], ["MDT", "2.12"], ["OST", "2.16"],
                                     ["MDT", "2.16"]]
    assert all(float(r[3]) > 0 for r in rows)


def test_bench_cycle_small(db_dsn: str) -> None:
    out = bench("bench/bench_cycle.py", "--entries", "500", "--dsn", db_dsn)
    cycles = [json.loads(ln) for ln in out.splitlines()]
    assert [c["kind"] for c in cycles] == ["OST", "MDT"]
    assert all(c["entries"] == 500 and c["rows"] > 0 and c["written"] == 1 for c in cycles)


def test_bench_ingest_small(db_dsn: str) -> None:
    out = bench("bench/bench_ingest.py", "--rows", "2000", "--batch-rows", "1000", "--dsn",
                db_dsn)
    assert "rows written          2,000 in 2 batches" in out
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (2000,)


def test_bench_pack_small(pg_dsn: str) -> None:
    out = bench("bench/bench_pack.py", "--nodes", "6", "--hours", "2", "--dsn", pg_dsn,
                "--db", "small_bench_pack", "--rows-per-transaction", "300")
    assert re.search(r"packed tier: [\d.]+ bytes per delta", out), out
    assert re.search(r"concurrent COPY of one interval \(6 nodes\) x [1-9]", out), out
    assert "0 waited over the 1 s lock_timeout" in out
    with psycopg.connect(make_conninfo(pg_dsn, dbname="small_bench_pack")) as conn:
        hot, packed = conn.execute("SELECT (SELECT count(*) FROM jobstats_delta), "
                                   "(SELECT sum(n) FROM jobstats_packed)").fetchone()
    built = int(re.search(r"built: ([\d,]+) deltas", out).group(1).replace(",", ""))
    assert packed >= built and hot + packed > built  # the writer's late rows came on top


def test_bench_pack_layouts_small(pg_dsn: str) -> None:
    """The layouts of a small bench_pack database (both tiers) are built and measured: every
    delta of the source is copied, each layout and span prints its bytes per delta, and the
    `derived` layout decodes back to exactly the deltas it was made of."""
    bench("bench/bench_pack.py", "--nodes", "4", "--hours", "2", "--dsn", pg_dsn,
          "--db", "small_bench_pack_src", "--rows-per-transaction", "300")
    src = make_conninfo(pg_dsn, dbname="small_bench_pack_src")
    with psycopg.connect(src) as conn:
        total = conn.execute("SELECT (SELECT count(*) FROM jobstats_delta) + "
                             "(SELECT sum(n) FROM jobstats_packed)").fetchone()[0]
    out = bench("bench/bench_pack_layouts.py", "--dsn", pg_dsn, "--db", "small_pack_layouts",
                "--from-dsn", src, "--lo", "2026-09-21 00:00+00", "--hi", "2026-09-24 00:00+00")
    assert f"copied: {total:,} deltas of" in out, out
    for name in ("0021", "offsets", "derived", "planes", "one", "one-derived",
                 "derived-planes"):
        for span in ("hour", "day"):
            assert re.search(rf"layout {name} per {span}: [\d.]+ bytes per delta", out), out
    assert re.search(r"per column: \w+ [\d.]+", out), out
    # the derived layout is lossless: every delta decoded back exactly, per hour and per day
    assert out.count("deltas not decoded back exactly: 0\n") == 2, out


def test_bench_views_small(pg_dsn: str, show_db: str, tmp_path: Path) -> None:
    out = bench("bench/bench_views.py", "--dsn", pg_dsn, "--db", "small_bench_show", "--day",
                "2026-09-22", "--repeat", "1", "--out", str(tmp_path / "daily"))
    assert re.search(r"LASSi hourly metrics: 2026-09-22 in [\d.]+ s \([1-9][\d,]* job hours",
                     out), out
    assert "jobio top --once (wall, new process)" in out
    assert re.search(r"EXPLAIN query \d+ of \d+: SELECT", out), out
    assert (tmp_path / "daily" / "index.html").is_file()


def test_bench_migrations_small(pg_dsn: str, show_db: str) -> None:
    """Every migration applied to a copy of the small build's data with a writer running:
    each one printed with its time, and every row the writer was told stored is stored."""
    from slurm_io.store import migrate

    out = bench("bench/bench_migrations.py", "--dsn", pg_dsn, "--source-db", "small_bench_show",
                "--db", "small_bench_migrations", "--ingest-batches", "2000", "--interval",
                "0.3", "--rows", "200")
    for m in migrate.available():
        assert re.search(rf"^{m.name} +[\d.]+ +\d+ / +\d+  ", out, re.M), out
    done = re.search(r"writer rows acknowledged ([\d,]+), in ingest_batch ([\d,]+), in "
                     r"jobstats_delta \(its days\) ([\d,]+); errors: none", out)
    assert done and done[1] == done[2] == done[3] and done[1] != "0", out


def test_soak_small(pg_dsn: str, tmp_path: Path) -> None:
    """bench/soak.py for two simulated days with every daemon: the collectors reading its
    fake lctl (bench/soak_lctl.py), the exporter scraped by a real Prometheus, the real hook
    (epilog/jobio-epilog) run for each ended job with the environment slurmctld gives
    (bench/soak_jobs.py, also sacct's stand-in), the report daemon mailing the real SMTP
    sink, `jobio alerts`, `daily` and `db prune` on their timers (bench/soak_parts.py),
    `jobio serve` answering `jobio --server URL JOBID` as carol (bench/soak_serve.py):
    the collectors' rows all stored, the spool, hook spool and mail queue empty, every hooked
    job mailed exactly once and complete, no error logged, the CSV and the plot
    (bench/soak_plot.py) written. The RSS bound it also prints is the long run's to judge."""
    proc = subprocess.run([sys.executable, "bench/soak.py", "--dsn", pg_dsn, "--db",
                           "small_soak", "--days", "2", "--speed", "2880", "--entries", "40",
                           "--mailed", "3", "--sample", "3", "--out", str(tmp_path / "soak")],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout
    done = re.search(r"rows stored ([\d,]+), expected ([\d,]+); spool at the end (\d+) bytes;"
                     r" kept [\d.]+ MB; errors (\d+)", out)
    assert done, f"{out[-3000:]}\n{proc.stderr[-3000:]}"
    assert done[1] == done[2] and done[1] != "0" and done[3] == "0" and done[4] == "0", out
    mails = re.search(r"jobs hooked (\d+), mailed exactly once (\d+), twice or more (\d+), "
                      r"mails of no hooked job (\d+), incomplete (\d+); queue at the end "
                      r"(\d+) \(sent (\d+), skipped (\d+), failed (\d+)\); hook spool at "
                      r"the end (\d+); alert mails \d+; timer runs (\d+)", out)
    assert mails, out
    hooked, once, twice, stray, incomplete, queued, sent, skipped, failed, spool, timers = (
        int(x) for x in mails.groups())
    assert hooked > 5 and once == sent == hooked, out
    assert twice == stray == incomplete == queued == skipped == failed == spool == 0, out
    assert timers >= 4, out  # prune and daily on day 1 and 2, alerts, the client
    asks = re.search(r"questions to jobio serve (\d+)", out)
    assert asks and int(asks[1]) > 5, out
    for name in ("oss01", "oss02", "oss03", "exporter", "reporter", "serve"):
        assert re.search(rf"^{name}: RSS first day [\d.]+ MB, peak", out, re.M), out
    assert (tmp_path / "soak" / "soak.png").stat().st_size > 10_000
    assert len((tmp_path / "soak" / "soak.csv").read_text().splitlines()) > 5
    assert any((tmp_path / "soak" / "daily").glob("*/index.html"))
    scrapes = re.search(r"scrapes ([\d.]+), successful ([\d.]+)",
                        (tmp_path / "soak" / "prometheus.txt").read_text())
    assert scrapes and float(scrapes[1]) == float(scrapes[2]) > 5


def test_bench_exporter_latency_small(pg_dsn: str) -> None:
    out = bench("bench/bench_exporter.py", "latency", "--dsn", pg_dsn, "--runs", "1")
    assert re.search(r"run 1: data landed -> mail accepted [\d.]+ s", out), out


def test_accuracy_small(pg_dsn: str) -> None:
    """accuracy.py with accuracy_breakdown.py (--breakdown), the three scenarios, 1 h, 8 nodes."""
    out = bench("bench/accuracy.py", "--scenario", "all", "--hours", "1", "--nodes", "8",
                "--breakdown", "--ranges", "--dsn", pg_dsn)
    for name in ("default", "dense", "leaky"):
        assert re.search(rf"== {name}: \d+ jobs, attributed", out), out
    assert len(re.findall(r"^byte accuracy\s+\d+\.\d+ %", out, re.M)) == 3
    assert "ambiguous splits vs oracle" in out
    assert len(re.findall(r"start-up splits perfect .*: byte accuracy \d+\.\d+ %", out)) == 3
    assert len(re.findall(r"distance of the byte accuracy to that first ceiling: -?\d+\.\d+ "
                          r"points", out)) == 3
    assert len(re.findall(r"start-up splits taken out as well .*: byte accuracy \d+\.\d+ %",
                          out)) == 3
    assert len(re.findall(r"distance to the ceiling without the start-up splits .*: -?\d+\.\d+ "
                          r"points", out)) == 3
    # what the outage's long reads cost the per-job figures (issue 21, twenty-fifth round)
    assert len(re.findall(r"splits of reads over 10 min \(an outage's\) perfect instead: byte "
                          r"accuracy \d+\.\d+ %, per-job median / p90 [\d.]+ / [\d.]+ %",
                          out)) == 3
    assert len(re.findall(r"^CPU of the rules per 1,000 jobs \d+\.\d+ s", out, re.M)) == 3
    # the no-information bound (accuracy_model.indistinct): what no rule can place
    assert len(re.findall(r"the no-information bound .*: byte accuracy \d+\.\d+ %, per-job "
                          r"median / p90 [\d.]+ / [\d.]+ %; headline \d+\.\d+ %, -?\d+\.\d+ "
                          r"points from the first ceiling", out)) == 3
    # the model oracles (bench/accuracy_model.py): knowing every phase, its OSTs only where
    # shown, ... down to the data's model (what the rows show of each phase; at the last, its
    # OSTs only those it printed bytes on), and per delta
    # the better of the rules' and the first two, or the data's model
    for name in ("the model oracle's", "the model oracle's, OSTs known only where shown",
                 "the model oracle's, rates only as printed",
                 "the model oracle's, rates and OSTs only as printed",
                 "the data's model (rates, OSTs and spans only as printed)",
                 "the data's model, every job's leak share the mean",
                 "the data's model, that and each phase's OSTs those it printed bytes on",
                 "per delta the better of the rules' and the model oracle's",
                 "per delta the better of the rules' and the model oracle's, OSTs known only "
                 "where shown",
                 "per delta the better of the rules' and the data's model (rates, OSTs and "
                 "spans only as printed)",
                 "per delta the better of the rules' and the data's model, that and each "
                 "phase's OSTs those it printed bytes on"):
        assert len(re.findall(rf"with {re.escape(name)} split: over placeable bytes \d+\.\d+ %"
                              rf", per-job median / p90 [\d.]+ / [\d.]+ %; headline \d+\.\d+ %",
                              out)) == 3, name
    # --ranges: a row per scenario, every job where the rule guarantees it inside its range
    rows = re.findall(r"^\| (default|dense|leaky) \| 1 \| (\d+) \| [\d.]+ % \| (\d+) / (\d+) \|",
                      out, re.M)
    assert [r[0] for r in rows] == ["default", "dense", "leaky"], out
    assert all(r[2] == r[3] for r in rows), out


def test_fuzz_intake_small(pg_dsn: str) -> None:
    out = bench("bench/fuzz_intake.py", "--cases", "20", "--dsn", pg_dsn)
    assert "every record accepted or refused, nothing escaped" in out


def test_fuzz_jobstats_small() -> None:
    out = bench("bench/fuzz_jobstats.py", "--cases", "50")
    assert re.search(r"cases=50 entries_parsed=\d+ .*exceptions_escaped=0 broken_promises=0",
                     out), out


def test_bench_parse_peer_small() -> None:
    """Without --peer: our parser and the floors on each dump, the peer's columns empty."""
    out = bench("bench/bench_parse_peer.py", "--entries", "300", "--releases", "2.12,2.16",
                "--repeat", "1")
    rows = [ln.split() for ln in out.splitlines()[1:]]
    assert [r[:2] for r in rows] == [["OST", "2.12"], ["MDT", "2.12"], ["OST", "2.16"],
                                     ["MDT", "2.16"]], out
    assert all(r[4:6] == ["-", "-"] for r in rows), out  # no peer given
    assert all(float(r[3]) > 0 and all(float(x) > 0 for x in r[6:9]) for r in rows), out


def test_bench_replay_window_small() -> None:
    out = bench("bench/bench_replay_window.py", "--entries", "2000")
    batches = [json.loads(ln) for ln in out.splitlines()]
    assert [b["kind"] for b in batches] == ["OST", "MDT"]
    for b in batches:
        assert b["entries"] == 2000 and b["rows"] > 0, b
        assert b["batch_MB"] > b["kept_MB"] > 0 and b["ratio"] > 1, b  # kept compressed
        assert b["raw_GB_per_day"] > 0 and b["kept_GB_per_day"] > 0, b


@needs.root("the client role's block runs `jobio` as nobody (runuser)")
def test_bench_install_small() -> None:
    """The build block, then the client role only (the smallest venv), one timed run."""
    out = bench("bench/bench_install.py", "--runs", "1", "--role", "client")
    assert re.search(r"^build block: [\d.]+ s$", out, re.M), out
    assert re.search(r"^empty venv: [\d.]+ MiB$", out, re.M), out
    rows = [ln.split() for ln in out.splitlines() if ln.startswith(("client", "collector",
                                                                    "hook", "server"))]
    assert [r[0] for r in rows] == ["client"], out
    assert all(float(x) > 0 for x in rows[0][1:]), out  # install s, MiB, both start times


def test_bench_exporter_door_small() -> None:
    """The bounded door under a tiny attack from two addresses, then prometheus_client's
    server unattacked: each prints its honest scrapes and the server's threads and memory."""
    out = bench("bench/bench_exporter_door.py", "--seconds", "3", "--silent", "2",
                "--trickle", "2", "--big", "1", "--addresses", "2")
    out += bench("bench/bench_exporter_door.py", "--server", "prometheus", "--no-attack",
                 "--seconds", "2")
    assert re.findall(r"^server=(\w+) attack=(.*)$", out, re.M) == [
        ("bounded", "2 silent, 2 trickling, 1 big-header from 2 addresses"),
        ("prometheus", "no")], out
    scrapes = re.findall(r"^honest scrapes: (\d+) ok, (\d+) failed; p50 [\d.]+ ms", out, re.M)
    assert len(scrapes) == 2 and all(int(ok) > 0 for ok, _ in scrapes), out
    servers = re.findall(r"^server process: peak threads (\d+), VmHWM ([\d.]+) MB", out, re.M)
    assert len(servers) == 2 and all(int(t) > 0 and float(m) > 0 for t, m in servers), out


@needs.root("starts `jobio serve` as its account and mints MUNGE credentials as alice")
def test_bench_service_attack_small(show_db: str, site_venv: Path) -> None:
    """The three phases, 3 s each, on show_db (alice's jobs) with the testbed's munged: a
    couple of each attacker, two honest threads, two flood threads of another owner."""
    uids = {pwd.getpwnam(u).pw_uid: u for u in ("bob", "carol")}
    with psycopg.connect(show_db) as conn:
        owners = {r[0] for r in conn.execute("SELECT DISTINCT uid FROM job WHERE uid = "
                                             "ANY(%s) AND end_time IS NOT NULL", (list(uids),))}
    assert owners, f"no finished job of {sorted(uids.values())} in show_db"
    flooder = uids[min(owners)]
    out = bench("bench/bench_service_attack.py", "--dsn", show_db, "--venv", str(site_venv),
                "--no-install", "--seconds", "3", "--threads", "4", "--honest", "2",
                "--trickle", "2", "--silent", "2", "--big", "1", "--flood", "2",
                "--flood-user", flooder)
    phases = re.findall(r"^(quiet|attack \(2 trickling, 2 silent, 1 big-header\)|flood \(2 "
                        rf"threads of {flooder} back to back: \d+ answered, \d+ refused\)): "
                        r"(\d+) honest requests \((\d+) failed\).* (\d+) x `jobio J --json`"
                        r".* service peak RSS (\d+) MB$", out, re.M)
    assert [p[0].split()[0] for p in phases] == ["quiet", "attack", "flood"], out
    assert all(int(p[1]) > 0 and int(p[3]) > 0 and int(p[4]) > 0 for p in phases), out
    line = re.search(r"^attackers: (.*)$", out, re.M)
    assert line, out
    attackers = dict(kv.split("=") for kv in line[1].split())
    assert all(int(attackers[f"{k}_connections"]) > 0 for k in ("trickle", "silent", "big")), out
    flood = re.search(r"flood \(2 threads of \w+ back to back: (\d+) answered, (\d+) refused",
                      out)
    assert flood and int(flood[1]) + int(flood[2]) > 0, out


def test_every_bench_has_a_small_form() -> None:
    """Each bench/*.py is run by a test here (by name), or by budget.py --small (named in its
    test's docstring), or is a module the others import (dumps, accuracy_breakdown,
    accuracy_model, budget_groups;
    budget_rules, whose rules tests/bench/test_budget_rules.py holds)."""
    text = Path(__file__).read_text()
    for script in sorted(BENCH.glob("*.py")):
        if script.name == "__init__.py":
            continue
        assert script.stem in text, f"{script.name} has no small form in {__file__}"
    # the modules only imported: by budget (dumps) and by accuracy --breakdown
    assert "dumps" in (BENCH / "budget.py").read_text()


def test_bench_web_small(pg_dsn: str) -> None:
    """30 jobs and one running: both pages answered, their times printed."""
    out = bench("bench/bench_web.py", "--dsn", pg_dsn, "--db", "small_bench_web", "--jobs",
                "30", "--running", "1", "--repeat", "1")
    assert re.search(r"my jobs page, 32 jobs \(1 running\), \d+ KiB: median [\d.]+ ms", out), out
    assert re.search(r"job page, 7-day job .*: median [\d.]+ ms", out), out
