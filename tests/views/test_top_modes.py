"""`jobio top` beyond lltop: grouping, any counter, rates, --minrate, and the interactive
screen driven in a real terminal (tmux)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import needs
from tests.views import data

AT = "2026-11-18T11:00:30"
JOBIO = str(Path(sys.executable).with_name("jobio"))


def _run(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([JOBIO, "--dsn", dsn, "top", "--once", "--at", AT, *args],
                          capture_output=True, text=True, timeout=60)


def _rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.split()[:1] in (["JOBID"], ["USER"],
                                                                   ["ACCOUNT"], ["HOST"], ["FS"]))
    return [ln.split() for ln in lines[i + 1:] if ln.strip()]


def _json(dsn: str, *args: str) -> dict:
    r = _run(dsn, "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_group_by_user_account_host_and_fs_add_up_to_the_total(views_dsn):
    total = _json(views_dsn)["total"]
    for by in ("user", "account", "host", "fs"):
        j = _json(views_dsn, "--group", by, "-n", "100")
        assert j["by"] == by
        for key in ("write_bytes", "read_bytes", "meta_ops", "reqs"):
            assert sum(r[key] for r in j["rows"]) == pytest.approx(total[key], abs=len(j["rows"]))
    users = {r["key"]: r for r in _json(views_dsn, "--group", "user")["rows"]}
    # carol's line: her job's direct writes plus the `:2003:n03` share, 2 nodes
    assert users["carol"]["write_bytes"] == 41_000 * data.MIB and users["carol"]["jobs"] == 1
    accounts = {r["key"] for r in _json(views_dsn, "--group", "account")["rows"]}
    assert accounts == {"acct", "(no job)"}
    fs = _json(views_dsn, "--group", "fs")["rows"]
    assert [r["key"] for r in fs] == [data.FS]
    hosts = _rows(_run(views_dsn, "--group", "host").stdout)
    assert hosts[0][0] in ("n03", "n04") and hosts[0][1] == "1"


def test_sort_by_any_counter_shows_its_column(views_dsn):
    r = _run(views_dsn, "--sort", "mkdir")
    assert r.returncode == 0, r.stderr
    head = next(ln for ln in r.stdout.splitlines() if ln.startswith("JOBID")).split()
    assert "MKDIR" in head
    first = _rows(r.stdout)[0]
    assert first[:2] == ["101", "alice"] and first[head.index("MKDIR")] == "2000"
    bad = _run(views_dsn, "--sort", "nosuchcounter")
    assert bad.returncode == 2 and "nosuchcounter" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_rates_and_minrate(views_dsn):
    r = _run(views_dsn, "--rate")
    head = next(ln for ln in r.stdout.splitlines() if ln.startswith("JOBID")).split()
    assert head[2] == "WRITE_MB/s"
    first = _rows(r.stdout)[0]
    assert first[0] == "103" and float(first[2]) == pytest.approx(41_000 * data.MIB / 1e6 / 120,
                                                                  abs=0.05)
    # 1 MB/s: carol's stream (358 MB/s) and frank's writes (4.4 MB/s), not bob's 4 KiB writes
    kept = _json(views_dsn, "--minrate", "1000000")["rows"]
    assert {r["key"] for r in kept} == {"103", "(no job)"}
    assert all(r["rates"]["write_bytes"] >= 1e6 for r in kept)


@needs.program("tmux")
def test_interactive_screen_in_tmux_refreshes_and_changes_sort_on_a_key(views_dsn, tmp_path):
    sock = f"jobio-top-{os.getpid()}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    cmd = f"{JOBIO} --dsn '{views_dsn}' top --at {AT} -d 0.5 --speed 240"

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "top"], capture_output=True,
                              text=True, timeout=10).stdout

    def wait_for(pred, what: str) -> str:
        deadline = time.monotonic() + 30
        s = ""
        while time.monotonic() < deadline:
            s = screen()
            if pred(s):
                return s
            time.sleep(0.2)
        raise AssertionError(f"{what} not seen; screen:\n{s}\nstderr:\n"
                             f"{err.read_text() if err.exists() else ''}")

    def first_row(s: str) -> list[str]:
        lines = s.splitlines()
        i = next(k for k, ln in enumerate(lines) if ln.split()[:1] in (["JOBID"], ["USER"]))
        return lines[i + 1].split()

    err = tmp_path / "stderr"
    subprocess.run([*tmux, "new-session", "-d", "-s", "top", "-x", "150", "-y", "40",
                    f"env TERM=xterm PATH='{os.environ['PATH']}' {cmd} 2>{err}"], check=True,
                   timeout=30)
    try:
        s = wait_for(lambda s: "sort write" in s and "JOBID" in s, "the first screen")
        assert first_row(s)[:2] == ["103", "carol"]
        assert "q quit" in s
        # refreshed in place: the replay moves on by one interval per refresh
        wait_for(lambda s: "2026-11-18T11:04:00" in s, "a later interval")
        for _ in range(2):  # write -> read -> meta
            subprocess.run([*tmux, "send-keys", "-t", "top", "s"], check=True, timeout=10)
        s = wait_for(lambda s: "sort meta" in s, "the sort change")
        assert first_row(s)[:2] == ["101", "alice"]
        subprocess.run([*tmux, "send-keys", "-t", "top", "g"], check=True, timeout=10)
        s = wait_for(lambda s: "by user" in s, "grouping by user")
        assert first_row(s)[0] == "alice"
        subprocess.run([*tmux, "send-keys", "-t", "top", "q"], check=True, timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and subprocess.run(
                [*tmux, "has-session", "-t", "top"], capture_output=True).returncode == 0:
            time.sleep(0.2)
        assert subprocess.run([*tmux, "has-session", "-t", "top"],
                              capture_output=True).returncode != 0, "q did not quit"
        assert "Traceback" not in err.read_text()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10)
