"""`jobio alerts`: the simulator's storming job gets one mail (and a copy to the admin) from a
real SMTP server's point of view, and no second one; caps, refusals, dry runs, site templates
and the log."""

from __future__ import annotations

import calendar
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.exporter import live
from tests.notify.smtp_sink import smtp_server

JOBIO = str(Path(sys.executable).with_name("jobio"))
ADMIN = "hpc-admin@example.org"
STORM_NAMES = ("untar_dataset", "pip_install", "snakemake")


def _config(tmp_path: Path, port: int, **alerts: object) -> Path:
    lines = ["[mail]", 'host = "127.0.0.1"', f"port = {port}", 'domain = "example.org"',
             'from = "slurm-io@example.org"', "slurm_lookup = false", "", "[alerts]",
             f'admin = "{ADMIN}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in alerts.items()]
    cfg = tmp_path / "config.toml"
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


def _jobio(cfg: Path, dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([JOBIO, "--config", str(cfg), "--dsn", dsn, *args],
                          capture_output=True, text=True, timeout=300)


def test_the_simulators_storming_job_is_warned_once(db_dsn, tmp_path):
    start = (time.time() // 120) * 120 - 2 * 3600
    sim = tmp_path / "sim"
    subprocess.run([JOBIO, "simulate", str(sim), "--hours", "2", "--nodes", "16", "--start",
                    str(int(start))], check=True, capture_output=True, timeout=300)
    subprocess.run([JOBIO, "--dsn", db_dsn, "--state-dir", str(tmp_path / "state"), "collect",
                    "--from", str(sim)], check=True, capture_output=True, timeout=600)
    subprocess.run([JOBIO, "--dsn", db_dsn, "jobs", "import", str(sim / "sacct.txt")],
                   check=True, capture_output=True, timeout=300)
    sacct = [ln.split("|") for ln in (sim / "sacct.txt").read_text().splitlines()[1:]]
    # the planted metadata storm (slurm_io/simulate/cluster.py): two nodes, 45 minutes
    storm = next(r for r in sacct if r[2] in STORM_NAMES and r[15] == "2"
                 and r[14] == "00:45:00")
    storm_start = calendar.timegm(time.strptime(storm[12], "%Y-%m-%dT%H:%M:%S"))
    at = str(int(storm_start + 2640))  # 44 minutes into the storm, while it still runs
    with smtp_server() as (sink, port):
        cfg = _config(tmp_path, port)
        r = _jobio(cfg, db_dsn, "alerts", "--at", at)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        mails = [m for m in sink.received if m.message["X-Jobio-Job"] == storm[1]]
        assert len(mails) == 1, r.stdout
        m = mails[0]
        assert m.message["To"] == f"{storm[3]}@example.org" and m.message["Cc"] == ADMIN
        assert set(m.rcpt_tos) == {f"{storm[3]}@example.org", ADMIN}
        assert "metadata" in m.message["X-Jobio-Alert"].split(",")
        body = m.message.get_content()
        assert f"your job {storm[1]} ({storm[2]})" in body
        assert re.search(r"[\d,]+ metadata operations in the last hour", body)
        assert "Heavy metadata load" in body and "node-local /tmp" in body  # report's advice
        assert f"jobio show {storm[1]} --timeline" in body
        n = len(sink.received)
        # the next runs, a little later: still storming, but already warned
        for later in (60, 300):
            r = _jobio(cfg, db_dsn, "alerts", "--at", str(int(at) + later))
            assert r.returncode == 0, r.stderr
        assert len(sink.received) == n
        listed = _jobio(cfg, db_dsn, "alerts", "--list", "--json")
        rows = [x for x in json.loads(listed.stdout) if x["jobid"] == storm[1]]
        assert [(x["kind"], x["state"]) for x in rows] == [("metadata", "sent")]
        assert rows[0]["recipients"] == [f"{storm[3]}@example.org", ADMIN]
        assert "sent" in _jobio(cfg, db_dsn, "alerts", "--list").stdout


def _at(last: float) -> tuple[str, str]:
    """Check just after the newest read (not at "now", which may pass the next read's
    boundary on a loaded machine and drop the oldest read from the window)."""
    return "--at", str(int(last) + 5)


def _live_cfg(tmp_path: Path, port: int, **extra: object) -> Path:
    # three reads of 120 s: a 6-minute window in which tinyw writes in every interval
    return _config(tmp_path, port, window=360, metadata_ops=500_000, small_writes=100_000,
                   **extra)


def test_metadata_and_tiny_writes_found_dry_run_sends_nothing(db_dsn, tmp_path):
    at = _at(live.load(db_dsn))
    with smtp_server() as (sink, port):
        cfg = _live_cfg(tmp_path, port)
        r = _jobio(cfg, db_dsn, "alerts", "--dry-run", *at)
        assert r.returncode == 0, r.stderr
        assert "job 7001 (ana): metadata: dry-run" in r.stdout
        assert "job 7002 (ben): small_writes: dry-run" in r.stdout
        assert "Many small writes" in r.stdout  # the report's advice title
        # 1 MiB streaming is fine: no alert line names job 7003 (a Message-ID may hold 7003)
        assert "job 7003" not in r.stdout
        assert sink.received == []
        assert json.loads(_jobio(cfg, db_dsn, "alerts", "--list", "--json").stdout) == []


def test_daily_cap_and_a_refusing_server(db_dsn, tmp_path):
    at = _at(live.load(db_dsn))
    with smtp_server() as (sink, port):
        cfg = _live_cfg(tmp_path, port, daily_cap=0)
        r = _jobio(cfg, db_dsn, "alerts", *at)
        assert r.returncode == 0 and sink.received == []
        assert {x["state"] for x in json.loads(
            _jobio(cfg, db_dsn, "alerts", "--list", "--json").stdout)} == {"capped"}
        # capped is final for that job and kind: raising the cap does not send it later
        cfg = _live_cfg(tmp_path, port, daily_cap=3)
        assert _jobio(cfg, db_dsn, "alerts", *at).returncode == 0 and sink.received == []


def test_a_refused_alert_is_retried_by_the_next_run(db_dsn, tmp_path):
    at = _at(live.load(db_dsn))
    with smtp_server() as (sink, port):
        cfg = _live_cfg(tmp_path, port)
        sink.rcpt_reply = "451 4.3.0 try again later"
        r = _jobio(cfg, db_dsn, "alerts", *at)
        assert r.returncode == 1 and "failed" in r.stdout and "Traceback" not in r.stderr
        sink.rcpt_reply = None
        r = _jobio(cfg, db_dsn, "alerts", *at)
        assert r.returncode == 0, r.stderr
        assert sorted(m.message["X-Jobio-Job"] for m in sink.received) == ["7001", "7002"]
        states = [(x["jobid"], x["state"]) for x in json.loads(
            _jobio(cfg, db_dsn, "alerts", "--list", "--json").stdout)]
        assert sorted(states) == [("7001", "failed"), ("7001", "sent"), ("7002", "failed"),
                                  ("7002", "sent")]


def test_site_template_replaces_the_packaged_one(db_dsn, tmp_path):
    at = _at(live.load(db_dsn))
    site = tmp_path / "site"
    site.mkdir()
    (site / "alert.txt.j2").write_text(
        "Dear {{ job.user }}: job {{ job.jobid }} -- {% for f in findings %}{{ f.kind }} "
        "{% endfor %}-- see {{ link }}\n")
    with smtp_server() as (sink, port):
        cfg = _live_cfg(tmp_path, port)
        cfg.write_text(cfg.read_text().replace("[mail]\n", f'[mail]\ntemplate_dir = "{site}"\n'))
        assert _jobio(cfg, db_dsn, "alerts", *at).returncode == 0
        bodies = {m.message["X-Jobio-Job"]: m.message.get_content().strip()
                  for m in sink.received}
        assert bodies["7001"] == "Dear ana: job 7001 -- metadata -- see " \
            "jobio show 7001 --timeline"


@pytest.mark.parametrize("args", [["--at", "yesterday-ish"], ["--list", "-S", "nonsense"]])
def test_a_bad_time_is_one_line(db_dsn, tmp_path, args):
    r = _jobio(_config(tmp_path, 25), db_dsn, "alerts", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    errors = r.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("jobio: error:"), r.stderr
    assert args[-1] in errors[0] and args[-2] in errors[0], r.stderr
