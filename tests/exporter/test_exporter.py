"""`jobio exporter` scraped by Debian's real Prometheus: PromQL returns what `jobio usage`
says for the same window, the label sets stay bounded, and every query of the shipped Grafana
dashboard runs."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.exporter import live

JOBIO = str(Path(sys.executable).with_name("jobio"))
DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def _wait(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            _get(url)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{what} did not answer at {url}")


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process this test started, by its PID."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def started_exporter(db_dsn: str) -> Iterator[tuple[int, subprocess.Popen[str], float]]:
    """The installed `jobio exporter` on a free loopback port over the live data of
    tests/exporter/live.py: (port, process, newest interval loaded); stopped afterwards."""
    last = live.load(db_dsn)
    port = _port()
    proc = subprocess.Popen([JOBIO, "--dsn", db_dsn, "exporter", "--listen",
                             f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait(f"http://127.0.0.1:{port}/metrics", proc, "jobio exporter")
        yield port, proc, last
    finally:
        _stop(proc)


@pytest.fixture
def exporter(db_dsn: str) -> Iterator[tuple[str, str, float]]:
    with started_exporter(db_dsn) as (port, proc, last):
        yield db_dsn, f"127.0.0.1:{port}", last
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


@pytest.fixture
def prometheus(exporter: tuple[str, str, float], tmp_path: Path
               ) -> Iterator[tuple[str, str, float, str]]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("Debian's prometheus is missing: SLURM_IO_EXTRAS=test scripts/setup.sh "
                    "installs it", pytrace=False)
    dsn, target, last = exporter
    port = _port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "scrape_configs:\n  - job_name: jobio\n    static_configs:\n"
                   f"      - targets: ['{target}']\n")
    proc = subprocess.Popen([binary, f"--config.file={cfg}",
                             f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    api = f"http://127.0.0.1:{port}"
    try:
        _wait(f"{api}/-/ready", proc, "prometheus")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _query(api, "jobio_up == 1"):
            time.sleep(0.5)
        assert _query(api, "jobio_up == 1"), "prometheus never scraped the exporter"
        yield dsn, api, last, target
    finally:
        _stop(proc)


def _query(api: str, promql: str) -> list[dict]:
    body = json.loads(_get(f"{api}/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
    assert body["status"] == "success", body
    return body["data"]["result"]


def _value(api: str, promql: str) -> float:
    res = _query(api, promql)
    assert len(res) == 1, (promql, res)
    return float(res[0]["value"][1])


def test_prometheus_figures_match_jobio_usage(prometheus):
    dsn, api, last, _ = prometheus
    end = _value(api, "jobio_interval_end_timestamp_seconds")
    start = _value(api, "jobio_interval_start_timestamp_seconds")
    assert end == last
    usage = json.loads(subprocess.run(
        [JOBIO, "--dsn", dsn, "usage", "-S", repr(start), "-E", repr(end), "--json"],
        capture_output=True, text=True, check=True, timeout=60).stdout)
    fs = usage["by_fs"][live.FS]
    for d in ("read", "write"):
        assert _value(api, f'jobio_fs_bytes{{fs="{live.FS}",direction="{d}"}}') == \
            fs[f"{d}_bytes"]
        # every byte is somebody's: users (jobs and outside jobs) plus system and nobody
        users = _value(api, f'sum(jobio_user_bytes_per_second{{direction="{d}"}}) '
                       f'* scalar(jobio_interval_seconds)')
        assert users == pytest.approx(fs[f"{d}_bytes"], rel=1e-9)
    for op in ("open", "mkdir", "getattr"):
        assert _value(api, f'jobio_fs_operations{{fs="{live.FS}",op="{op}"}}') == fs[op]
    # the storming job, with its Slurm user, account and name
    storm = _query(api, 'jobio_job_metadata_ops_per_second{jobid="7001"}')
    assert storm[0]["metric"]["user"] == "ana" and storm[0]["metric"]["account"] == "physics"
    assert storm[0]["metric"]["job_name"] == "stormer"
    assert float(storm[0]["value"][1]) == pytest.approx(215_000 / live.PERIOD)
    # load outside jobs by kind: cp on a login node and :3008:c06 (no job of 3008 there)
    assert _value(api, 'jobio_unattributed_bytes_per_second{kind="user",direction="write"}') \
        == pytest.approx(250 * live.MIB / live.PERIOD)
    assert _value(api, 'jobio_unattributed_metadata_ops_per_second{kind="system"}') == \
        pytest.approx(77 / live.PERIOD)
    # accounts and health
    assert _value(api, 'jobio_account_metadata_ops_per_second{account="physics"}') > 0
    assert _value(api, 'jobio_collector_last_read_timestamp_seconds{collector="oss1"}') == last
    assert _value(api, 'jobio_problems_total{source="jobstats"}') == 1
    assert _value(api, "jobio_data_age_seconds") >= 0


def test_every_dashboard_query_runs_against_prometheus(prometheus):
    _, api, _, _ = prometheus
    board = json.loads(DASHBOARD.read_text())
    assert board["panels"] and board["title"]
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    variables = {v["name"]: v for v in board.get("templating", {}).get("list", [])}
    assert exprs
    for v in variables.values():
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", q)
            assert m, q
            assert _query(api, m.group(1)), f"variable {v['name']}: no series for {q}"
    for e in exprs:
        concrete = (e.replace("$__rate_interval", "1m").replace("$__range", "5m")
                    .replace("${fs:regex}", live.FS).replace("$fs", live.FS)
                    .replace("$top", "10"))
        assert "$" not in concrete, e
        deadline = time.monotonic() + 15  # range functions need two scrapes in their window
        while not (found := _query(api, concrete)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert found, f"no data for dashboard query {e}"


def test_series_stay_bounded_and_scrape_is_plain_text(db_dsn):
    live.load(db_dsn)
    out = subprocess.run([JOBIO, "--dsn", db_dsn, "exporter", "--once", "--top-jobs", "1"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    samples = [ln for ln in out.splitlines() if ln and not ln.startswith("#")]
    jobs = {re.search(r'jobid="(\d+)"', ln).group(1) for ln in samples
            if ln.startswith("jobio_job_")}
    # top 1 by write, by read and by metadata: at most three jobs
    assert jobs <= {"7001", "7002", "7003"} and 1 <= len(jobs) <= 3
    assert "7001" in jobs  # the metadata storm
    assert len(samples) < 500


def test_a_bad_listen_address_is_one_line(db_dsn):
    r = subprocess.run([JOBIO, "--dsn", db_dsn, "exporter", "--listen", "localhost:notaport"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "notaport" in r.stderr


def test_each_exported_job_has_the_least_and_most_of_its_figures(db_dsn):
    """jobio_job_*_least / _most (report.load.span): where no `:uid:host` delta was shared
    between jobs of the user, both are the figure; the exported jobs have each pair."""
    live.load(db_dsn)
    out = subprocess.run([JOBIO, "--dsn", db_dsn, "exporter", "--once"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    values: dict[tuple[str, str, str], float] = {}
    for ln in out.splitlines():
        m = re.match(r'(jobio_job_(?:bytes|metadata_ops)_per_second(?:_least|_most)?)\{'
                     r'(.*)\} (\S+)$', ln)
        if m:
            job = re.search(r'jobid="(\d+)"', m.group(2)).group(1)
            d = re.search(r'direction="(\w+)"', m.group(2))
            values[(m.group(1), job, d.group(1) if d else "")] = float(m.group(3))
    jobs = {k[1] for k in values}
    assert {"7001", "7002", "7003"} <= jobs
    for job in jobs:
        for name, direction in (("bytes", "read"), ("bytes", "write"), ("metadata_ops", "")):
            fig = values[(f"jobio_job_{name}_per_second", job, direction)]
            for side in ("least", "most"):
                assert values[(f"jobio_job_{name}_per_second_{side}", job, direction)] == fig
    assert values[("jobio_job_bytes_per_second_most", "7003", "write")] > 0
