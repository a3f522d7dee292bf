"""`jobio slowdown`: gina's "sim" ran 3 h during the storm and 1 h the day before."""

from __future__ import annotations

import json

from click.testing import CliRunner

from slurm_io.cli import main
from tests.views.test_daily import assert_not_blank


def test_slowdown_table_json_and_plot(views_dsn, tmp_path):
    args = ["--dsn", views_dsn, "slowdown", "-u", "gina", "-S", "2026-11-10", "-E",
            "2026-11-20"]
    r = CliRunner().invoke(main, [*args, "--name", "sim", "--png", str(tmp_path / "s.png")])
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "user gina, jobs with name 'sim': 2 run(s), 2026-11-17 .. 2026-11-18" in out
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.startswith("  9")
             or ln.startswith("  10")}
    assert lines["91"][3] == "01:00:00" and lines["105"][3] == "03:00:00"
    assert "(slowest 3.0x the fastest)" in out
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    (g,) = json.loads(r.stdout)
    fast, slow = g["jobs"]
    assert (fast["job"], slow["job"]) == (91, 105)
    # the storm's hours raise the filesystem's MDS risk during the slow run
    assert slow["fs_risk_mds"] > fast["fs_risk_mds"]
    assert fast["covered"] == slow["covered"] == 1.0  # LASSi hours for every hour of both
    assert_not_blank(tmp_path / "s.png", (600, 300))


def test_slowdown_of_nobody(views_dsn):
    r = CliRunner().invoke(main, ["--dsn", views_dsn, "slowdown", "-u", "nobody", "-S",
                                  "2026-11-10"])
    assert r.exit_code == 1
    assert "no finished jobs of nobody" in r.stdout
