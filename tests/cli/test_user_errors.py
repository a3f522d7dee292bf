"""A person's mistakes with the installed `jobio`: one line on stderr and a non-zero exit,
never a traceback; sacct's time forms and `field%N` widths work as in sacct; text from
Slurm cannot drive the terminal.

The database holds the small cluster of tests/views/data.py (jobs 101-105 on 2026-11-18).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.cli.installed import assert_one_line_error, jobio
from tests.views import data

AT = "2026-11-18T11:00:00+00:00"


@pytest.fixture(scope="module")
def site(pg_dsn: str, _migrated_template: str, tmp_path_factory) -> Iterator[list[str]]:
    """`--dsn DB` of a database with the views' cluster, and an empty configuration."""
    from tests.conftest import _fresh_database

    cfg = tmp_path_factory.mktemp("cfg") / "config.toml"
    cfg.write_text("")
    for dsn in _fresh_database(pg_dsn, _migrated_template):
        data.load(dsn)
        yield ["--config", str(cfg), "--dsn", dsn]


@pytest.mark.parametrize("args", [
    ["show", "-u", "alice", "-S", "2026-13-45"],
    ["usage", "-E", "tomorrowish"],
    ["usage", "-S", "02/30"],
    ["usage", "-S", "now", "-E", "now-1day"],
    ["show", "-u", "alice", "-S", "2026-11-19", "-E", "2026-11-18"],
    ["attribute", "--since", "yesterday-ish"],
    ["top", "--once", "--at", "25:00"],
    ["slowdown", "-u", "alice", "-S", "now-2fortnights"],
    ["lassi", "compute", "-S", "2026-02-30"],
    ["lassi", "compute", "--date", "today", "-S", "today"],
    ["lassi", "compute", "-S", "2026-11-18", "-E", "2026-11-10"],
], ids=lambda a: " ".join(a))
def test_a_bad_time_is_one_line_naming_the_option(site: list[str], args: list[str]) -> None:
    line = assert_one_line_error(jobio(*site, *args), "jobio: error:")
    assert "-S" in line or "-E" in line or "--since" in line or "--at" in line \
        or "--date" in line


def test_daily_with_an_impossible_day_is_one_line(site: list[str], tmp_path: Path) -> None:
    assert_one_line_error(jobio(*site, "daily", "--date", "2026-02-30", "--out",
                                str(tmp_path)), "--date", "2026-02-30")


@pytest.mark.parametrize(("args", "needle"), [
    (["101", "-P", "-o", "jobid,bogus"], "unknown field 'bogus'"),
    (["101", "-o", "JobID,ReadBytes%x"], "unknown field 'ReadBytes%x'"),
    (["101", "-o", "JobID%0"], "width 0"),
    (["12x34"], "12x34"),
    (["show", "12x34"], "not a job id: '12x34'"),
    (["show"], "give job ids"),
    (["--bogus-flag", "usage"], "--bogus-flag"),
    (["nosuchcommand"], "nosuchcommand"),
    (["top", "--sort", "size"], "size"),
    (["daily"], "--out"),
    (["db", "prune", "--older-than", "90"], "--older-than"),
    (["db", "pack", "--min-age", "6"], "--min-age"),
    (["db", "nosuch"], "nosuch"),
    (["lassi", "compute", "--a", "x"], "--a"),
], ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_unknown_fields_ids_and_options_are_one_line(site: list[str], args: list[str],
                                                      needle: str) -> None:
    assert_one_line_error(jobio(*site, *args), needle)


def test_an_unknown_job_is_one_line_and_exit_1(site: list[str]) -> None:
    proc = jobio(*site, "99999")
    assert proc.returncode == 1
    assert_one_line_error(proc, "job 99999: no such job")


def test_sacct_mmddyy_and_other_sacct_times_select_the_same_range(site: list[str]) -> None:
    iso = json.loads(jobio(*site, "usage", "-S", "2026-11-18", "-E", "2026-11-19",
                           "--json").stdout)
    for start, end in (("111826", "111926"), ("11/18/26", "11/19/26"),
                       ("11.18.26-00:00", "11.19.26 midnight")):
        proc = jobio(*site, "usage", "-S", start, "-E", end, "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["totals"] == iso["totals"]
    assert iso["totals"]["write_bytes"] > 0


def test_format_widths_make_a_sacct_table_and_are_ignored_with_p(site: list[str]) -> None:
    shown = {r["jobid"]: r["totals"] for r in json.loads(jobio(*site, "101", "102",
                                                                "--json").stdout)}
    opens = [str(shown[j].get("open", 0)) for j in ("101", "102")]
    w_open = max(len("open"), *map(len, opens))  # no width: as wide as the widest value
    table = jobio(*site, "101", "102", "-o", "jobid,jobname%-8,read_bytes%20,open")
    assert table.returncode == 0, table.stderr
    head, rule, *rows = table.stdout.splitlines()
    assert rule == " ".join("-" * w for w in (5, 8, 20, w_open))
    assert head == f"jobid jobname  {'read_bytes':>20} {'open':>{w_open}}"
    assert rows == [f"{j:>5} {name:<8} {shown[j].get('read_bytes', 0):>20} {o:>{w_open}}"
                    for j, name, o in (("101", "storm", opens[0]), ("102", "smallw", opens[1]))]
    parsable = jobio(*site, "101", "-P", "-o", "jobid,read_bytes%20,Open")
    assert parsable.returncode == 0, parsable.stderr
    head, row = parsable.stdout.splitlines()
    assert head == "jobid|read_bytes|Open"
    assert row == f"101|{shown['101'].get('read_bytes', 0)}|{opens[0]}"


def test_a_value_longer_than_its_width_is_cut_with_a_plus(site: list[str]) -> None:
    proc = jobio(*site, "103", "-n", "-o", "jobname%4,nodelist%5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["str+ n03,+"]


def test_an_unexpected_error_is_one_line_and_v_shows_the_traceback(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    dead = ["--config", str(cfg), "--dsn",
            "host=/nonexistent/slurm-io dbname=slurmio connect_timeout=2"]
    proc = jobio(*dead, "usage", drop=("SLURM_IO_TRACEBACK",))
    line = assert_one_line_error(proc, "jobio: error:", "/nonexistent/slurm-io")
    assert "-v" in line
    verbose = jobio(*dead, "-v", "usage", drop=("SLURM_IO_TRACEBACK",))
    assert verbose.returncode == 1
    assert "Traceback" in verbose.stderr
    assert verbose.stderr.splitlines()[-1].startswith("jobio: error:")


def test_escape_sequences_in_job_names_and_work_dirs_are_shown_escaped(
        site: list[str]) -> None:
    evil_name, evil_dir = "x\x1b]0;owned\x07", "/scratch/\x1b[2J\x1b[31mred"
    dsn = site[-1]
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE job SET name = %s, work_dir = %s WHERE job_raw = 103",
                     (evil_name, evil_dir))
    try:
        for args in (["103"], ["103", "-P", "-o", "jobid,jobname"],
                     ["103", "-o", "jobid,jobname%30"],
                     ["top", "--once", "--at", AT, "-n", "50"]):
            proc = jobio(*site, *args)
            assert proc.returncode == 0, proc.stderr
            assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
            assert "\\x1b" in proc.stdout, (args, proc.stdout)
    finally:
        with psycopg.connect(dsn) as conn:
            conn.execute("UPDATE job SET name = 'stream', work_dir = '/scratch/carol/stream'"
                         " WHERE job_raw = 103")


@pytest.mark.parametrize("args", [[], ["db"], ["lassi"]], ids=["jobio", "db", "lassi"])
def test_a_group_without_a_command_prints_its_help_not_an_error(args: list[str]) -> None:
    proc = jobio(*args)
    text = proc.stdout + proc.stderr
    assert text.startswith(f"Usage: {' '.join(['jobio', *args])} [OPTIONS] COMMAND")
    assert "jobio: error" not in text and "Commands:" in text


def test_jobio_web_on_a_taken_port_or_out_of_range_is_one_line(site: list[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert_one_line_error(jobio(*site, "web", "--port", str(port)), "jobio: error:",
                              f"cannot listen on 127.0.0.1:{port}")
    assert_one_line_error(jobio(*site, "web", "--port", "70000"), "jobio: error:", "--port")
