"""`jobio alerts` on the known-answer cluster: the LASSi risk rule against the stored
baseline of the day before (alice's storm is ~50 times her usual metadata load)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

JOBIO = str(Path(sys.executable).with_name("jobio"))


def test_risk_rule_uses_the_stored_lassi_baseline(views_dsn, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[mail]\ndomain = "example.org"\nslurm_lookup = false\n')
    r = subprocess.run([JOBIO, "--config", str(cfg), "--dsn", views_dsn, "alerts", "--dry-run",
                        "--at", "2026-11-18T11:00:00+00:00"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "job 101 (alice): risk, metadata: dry-run to alice@example.org" in r.stdout
    assert "job 102 (bob): small_writes: dry-run" in r.stdout
    assert "LASSi risk" in r.stdout and "on scratch" in r.stdout
    # gina's modest writes and dave's few opens are nobody's problem
    assert "job 105" not in r.stdout and "job 104" not in r.stdout
    # before the storm starts nothing runs; the same moment a day earlier has no baseline
    for at in ("2026-11-18T09:30:00+00:00", "2026-11-17T11:00:00+00:00"):
        r = subprocess.run([JOBIO, "--config", str(cfg), "--dsn", views_dsn, "alerts",
                            "--dry-run", "--at", at], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and "risk" not in r.stdout, r.stdout
