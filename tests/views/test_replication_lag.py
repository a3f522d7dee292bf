"""The replication lag a reader of a standby reports (docs/deploy.md "Readers on a standby"):
in `jobio show`'s text next to "figures may grow", as `replication_lag` in its JSON, and not
at all without `read_dsn`. Pure: the end-to-end test with a real standby is
tests/site/test_standby.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from slurm_io import config
from slurm_io.report.jobreport import JobReport
from slurm_io.report.show import render

QUALITY = {"read_mean_size": None, "read_small_share": None, "read_kb_ops": None,
           "write_mean_size": None, "write_small_share": None, "write_kb_ops": None,
           "metadata_ops": 0}
DOC = {"job": 42, "jobid": "42", "start": "2026-11-18T10:00:00", "end": "2026-11-18T11:00:00",
       "complete": False, "quality": QUALITY, "totals": {"read_bytes": 5}}


def test_no_standby_no_note_and_no_field() -> None:
    r = JobReport.from_json(DOC, now=0.0)
    assert r.replication_lag is None
    assert "replication_lag" not in r.as_json()
    text = render(r)
    assert "figures may grow]" in text and "standby" not in text


def test_the_lag_is_shown_next_to_figures_may_grow_and_survives_json() -> None:
    r = dataclasses.replace(JobReport.from_json(DOC, now=0.0), replication_lag=2.5)
    doc = r.as_json()
    assert doc["replication_lag"] == 2.5
    assert JobReport.from_json(doc, now=0.0).replication_lag == 2.5  # the service's clients
    line = next(x for x in render(r).splitlines() if "figures may grow" in x)
    assert line.endswith("figures may grow]  [read from a standby 2.5 s behind the primary]")


def test_read_dsn_is_a_config_key(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('dsn = "host=db1"\nread_dsn = "host=db2"\n')
    cfg = config.load(path)
    assert (cfg.dsn, cfg.read_dsn) == ("host=db1", "host=db2")
