"""`jobio top`: the right job first, the columns, filters, past moments, unattributed load."""

from __future__ import annotations

import json
import re

import psycopg
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.report import top as top_mod
from tests.views import data

AT = "2026-11-18T11:00:30"  # between two reads: shows the read of 11:00:00


def _top(dsn: str, *args: str) -> list[str]:
    r = CliRunner().invoke(main, ["--dsn", dsn, "top", "--once", "--at", AT, *args])
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()


def _rows(lines: list[str]) -> list[list[str]]:
    i = next(k for k, ln in enumerate(lines) if ln.startswith("JOBID"))
    return [ln.split() for ln in lines[i + 1:] if ln.strip()]


def test_top_once_the_streaming_job_first_with_its_columns(views_dsn):
    lines = _top(views_dsn)
    assert "2026-11-18T11:00:00" in lines[0] and "(interval 120 s)" in lines[0]
    assert lines[3].split() == ["JOBID", "USER", "WRITE_MB", "READ_MB", "META_OPS", "REQS",
                                "NODES", "WORK_DIR"]
    rows = _rows(lines)
    # carol's job: 2 x 20000 MiB + 1000 MiB recovered from `:2003:n03`, 2 x 5000 MiB read
    assert rows[0] == ["103", "carol", f"{41_000 * data.MIB / 1e6:.1f}",
                       f"{10_000 * data.MIB / 1e6:.1f}", "80", "51000", "2",
                       "/scratch/carol/stream"]
    # frank's job-missing writes: his unattributed load; eve's rsync; the host's system load
    # (neither has a job record nor a passwd entry here: they are shown by uid)
    text = "\n".join(lines)
    assert re.search(r"^\(no job\)\s+uid 2006\s+524\.3\s+0\.0\s+0\s+500\s+1\s+-$", text, re.M)
    assert re.search(r"^\(no job\)\s+uid 2005\s+0\.0\s+3145\.7 .* rsync$", text, re.M)
    assert re.search(r"^\(system\)\s+n06\s+0\.0\s+0\.0\s+10\s+0\s+1\s+-$", text, re.M)


def test_sort_keys_and_filters(views_dsn):
    assert _rows(_top(views_dsn, "--sort", "meta"))[0][:2] == ["101", "alice"]
    assert _rows(_top(views_dsn, "--sort", "reqs"))[0][0] == "103"
    assert _rows(_top(views_dsn, "--sort", "read"))[0][0] == "103"
    mdt = _rows(_top(views_dsn, "--kind", "MDT", "--sort", "write"))
    assert {r[0] for r in mdt} >= {"101", "104", "(system)"}
    assert all(r[2] == "0.0" for r in mdt)
    bob = _rows(_top(views_dsn, "--user", "bob"))
    assert [r[:2] for r in bob] == [["102", "bob"]]
    assert _top(views_dsn, "--fs", "nosuchfs")[0].startswith("jobio top: no I/O stored")


def test_at_a_quiet_moment_and_json(views_dsn):
    # 13:30: only gina's job 105 still runs
    r = CliRunner().invoke(main, ["--dsn", views_dsn, "top", "--json", "--at",
                                  "2026-11-18T13:30"])
    assert r.exit_code == 0, r.output
    j = json.loads(r.stdout)
    assert [x["jobid"] for x in j["rows"]] == ["105"]
    assert j["rows"][0]["write_bytes"] == 100 * data.MIB and j["rows"][0]["user"] == "gina"


def test_top_function_adds_up(views_dsn):
    with psycopg.connect(views_dsn) as conn:
        t = top_mod.top(conn, at=data.T10 + 1830, interval=120.0, limit=None)
    assert t.at == data.T10 + 1800
    for key in ("write_bytes", "read_bytes", "meta_ops", "reqs"):
        assert sum(getattr(r, key) for r in t.rows) == \
            __import__("pytest").approx(getattr(t.total, key))


def test_in_a_pipe_frames_follow_and_replay_steps_by_speed(views_dsn):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    jobio = str(Path(sys.executable).with_name("jobio"))
    # -d 0.3 --speed 400: 120 s of data (one collector interval) per refresh
    p = subprocess.Popen([jobio, "--dsn", views_dsn, "top", "--at", AT, "-d", "0.3",
                          "--speed", "400"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(0.5)
    deadline = time.monotonic() + 30
    out = ""
    assert p.stdout is not None
    while out.count("jobio top ") < 2 and time.monotonic() < deadline:
        out += p.stdout.readline()
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "Traceback" not in err
    frames = (out + rest).split("jobio top ")[1:]
    assert "2026-11-18T11:00:00" in frames[0] and "2026-11-18T11:02:00" in frames[1]
    assert "103" in frames[0]
