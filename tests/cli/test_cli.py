"""The `jobio` command line on a real PostgreSQL (click's runner, in process)."""

from __future__ import annotations

import json

import psycopg
import pytest
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.simulate import simulate

START = 1_795_000_000.0


@pytest.fixture(autouse=True)
def _no_site_config(monkeypatch, tmp_path):
    monkeypatch.delenv("SLURM_IO_DSN", raising=False)
    monkeypatch.setenv("SLURM_IO_CONFIG", str(tmp_path / "absent.toml"))
    (tmp_path / "absent.toml").write_text("")


def run(*args: str):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r


def test_bare_job_id_means_show(db_dsn):
    r = run("--dsn", db_dsn, "4242")
    assert r.exit_code == 1
    assert "job 4242: no such job, or no I/O recorded for it" in r.output


def test_db_upgrade_is_idempotent(db_dsn):
    first = run("--dsn", db_dsn, "db", "upgrade")
    assert first.exit_code == 0 and "nothing to do" in first.output  # template is migrated
    assert "schema at version" in run("--dsn", db_dsn, "db", "upgrade").output


def test_collect_from_then_usage_json_and_show(db_dsn, tmp_path):
    sim = tmp_path / "sim"
    simulate(sim, seed=2, start=START, hours=0.5, n_nodes=8, n_oss=1, jobs_per_hour=16,
             outage=False)
    r = run("--dsn", db_dsn, "--state-dir", str(tmp_path / "st"), "collect", "--from", str(sim))
    assert r.exit_code == 0, r.output
    assert "spool_depth=0" in r.output
    r = run("--dsn", db_dsn, "usage", "-S", "2026-11-18T00:00", "-E", "2026-11-19T00:00",
            "--json")
    u = json.loads(r.output)
    assert set(u) >= {"totals", "by_class", "by_fs", "rows"}
    assert u["totals"]["read_bytes"] == sum(c.get("read_bytes", 0)
                                            for c in u["by_class"].values())
    truth = json.loads((sim / "truth.json").read_text())["totals"]["visible"]
    assert u["totals"]["read_bytes"] == truth["read_bytes"]
    with psycopg.connect(db_dsn) as conn:
        (job,) = conn.execute("SELECT job FROM jobstats_delta WHERE job IS NOT NULL "
                              "GROUP BY job ORDER BY sum(read_bytes) DESC NULLS LAST "
                              "LIMIT 1").fetchone()
    shown = json.loads(run("--dsn", db_dsn, str(job), "--json").output)
    assert shown[0]["jobid"] == str(job) and shown[0]["totals"]["read_bytes"] > 0
    table = run("--dsn", db_dsn, "usage", "-S", "2026-11-18", "-E", "2026-11-19").output
    assert "by id class:" in table and "exact" in table


def test_prune_drops_old_partitions_only(db_dsn, tmp_path):
    sim = tmp_path / "sim"
    simulate(sim, seed=2, start=START, hours=0.25, n_nodes=4, n_oss=1, jobs_per_hour=8,
             outage=False)
    run("--dsn", db_dsn, "--state-dir", str(tmp_path / "st"), "collect", "--from", str(sim))
    r = run("--dsn", db_dsn, "db", "prune", "--older-than", "100000d")
    assert r.exit_code == 0 and "0 partition(s) dropped" in r.output
    r = run("--dsn", db_dsn, "db", "prune", "--older-than", "1d")
    assert r.exit_code == 0 and "jobstats_delta_p20261118" in r.output
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM jobstats_delta").fetchone() == (0,)


def test_prune_behind_a_long_reader_says_so_in_one_line(db_dsn, tmp_path):
    """A report reading jobstats_delta (here: a transaction holding its ACCESS SHARE lock)
    makes the partition DROP give up after its lock_timeout: one line that names the cause
    and that the next prune catches up, exit 1, nothing dropped (the soak met it)."""
    sim = tmp_path / "sim"
    simulate(sim, seed=2, start=START, hours=0.25, n_nodes=4, n_oss=1, jobs_per_hour=8,
             outage=False)
    run("--dsn", db_dsn, "--state-dir", str(tmp_path / "st"), "collect", "--from", str(sim))
    with psycopg.connect(db_dsn) as reader:
        reader.execute("SELECT count(*) FROM jobstats_delta").fetchone()  # lock held
        r = run("--dsn", db_dsn, "db", "prune", "--older-than", "1d")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.output.strip().splitlines() == [
        "jobio: error: db prune: jobstats_delta is in use by a long query (a `jobio daily` "
        "or report running now?): its old days are dropped at the next prune; run it when "
        "no report runs"], r.output
    r = run("--dsn", db_dsn, "db", "prune", "--older-than", "1d")
    assert r.exit_code == 0 and "jobstats_delta_p20261118" in r.output


def test_config_file_sets_keys_and_rejects_unknown_ones(tmp_path, monkeypatch, db_dsn):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'dsn = "{db_dsn}"\n[collect]\ninterval = 60\n[jobid]\nformats = ["%j"]\n')
    from slurm_io import config

    c = config.load(cfg)
    assert c.dsn == db_dsn and c.interval == 60 and c.jobid_formats == ("%j",)
    monkeypatch.setenv("SLURM_IO_DSN", "host=/nowhere")
    assert config.load(cfg).dsn == "host=/nowhere"
    cfg.write_text("[collect]\nintervall = 60\n")
    r = run("--config", str(cfg), "usage")
    assert r.exit_code == 2 and "unknown key 'collect.intervall'" in r.output
