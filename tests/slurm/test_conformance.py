"""Conformance with every Slurm release's real output in ../shared/fixtures/slurm/<release>/
(22.05, 24.11, 26.05: captured from running daemons). Skipped, saying so, only when ../shared
is not beside the checkout ($SLURM_IO_SHARED names another place).

What is checked per release: every `sacct -P` capture parses without a problem; `-P` and
`--json` agree on each job they both show (JSON's gaps per release in slurm_io.slurm.
sacct_json); the fields slurm-io asks for exist under the same names (SLUID exactly from
24.11, as the seam assumes); every job state is one the job store knows; the EpilogSlurmctld
environments give start/end (23.02+) and SLUID (25.11+) that match sacct's final record.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from slurm_io.jobs.hookenv import record_from_hook_env
from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.store import ACTIVE_STATES
from slurm_io.model import JobRecord
from slurm_io.slurm.commands import SLUID_SINCE
from slurm_io.slurm.fields import SACCT_FIELDS
from slurm_io.slurm.sacct_json import parse_sacct_json
from tests.shared import SHARED, shared_file

FIXTURES = SHARED / "fixtures" / "slurm"
RELEASES = sorted(p.name for p in FIXTURES.glob("[0-9]*.[0-9]*") if p.is_dir()) or [
    "22.05", "24.11", "26.05"]
FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                          "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"})


def version(release: str) -> tuple[int, int]:
    major, minor = release.split(".")
    return int(major), int(minor)


@pytest.fixture(params=RELEASES)
def captures(request: pytest.FixtureRequest) -> Path:
    """One release's capture folder; a skip that says ../shared is absent when it is."""
    return shared_file("fixtures", "slurm", request.param)


def psv_files(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.glob("*.psv"))
            if p.read_text().split("\n", 1)[0].split("|")[0] in ("JobID", "Account")]


def final(records: list[JobRecord]) -> dict[int, JobRecord]:
    return {r.job: r for r in records if r.state in FINAL_STATES and r.end is not None}


def test_every_sacct_P_capture_parses_without_a_problem(captures):
    files = psv_files(captures)
    assert files, f"no sacct -P captures in {captures}"
    for path in files:
        records, problems = parse_sacct(path.read_text(), source="import", tz=UTC)
        assert problems == [], (path.name, problems)
        assert records, path.name
        assert all(r.job > 0 and r.jobid and r.state for r in records), path.name


def test_sacct_P_and_json_agree_on_every_job_both_show(captures):
    text = captures / "sacct_allfields_alloc.psv"
    if not text.exists():
        text = captures / "sacct_alloc.psv"
    by_text = final(parse_sacct(text.read_text(), source="import", tz=UTC)[0])
    records, problems = parse_sacct_json((captures / "sacct.json").read_text())
    assert problems == []
    by_json = final(records)
    common = sorted(set(by_text) & set(by_json))
    assert len(common) >= 5, (sorted(by_text), sorted(by_json))
    v = version(captures.name)
    for job in common:
        t, j = by_text[job], by_json[job]
        for name in ("jobid", "array_job", "array_task", "user", "account", "partition",
                     "name", "nodes", "submit", "start", "end", "state", "work_dir"):
            assert getattr(j, name) == getattr(t, name), (captures.name, job, name)
        assert j.uid is None and t.uid is not None  # JSON never has the numeric uid
        if v >= (24, 11):
            assert (j.exit_code, j.submit_line) == (t.exit_code, t.submit_line), job
        else:  # 22.05's JSON: no submit_line, and exit code 0:0 for a job that ran `exit 3`
            assert j.submit_line is None
            if t.state == "FAILED":
                assert j.exit_code != t.exit_code == "3:0", job
        if v >= (25, 11):  # 24.11's JSON has no sluid (its text sacct has)
            assert j.sluid == t.sluid and j.sluid, job


def test_the_fields_slurm_io_asks_for_exist_under_their_names(captures):
    known = set((captures / "sacct_helpformat.txt").read_text().split())
    assert set(SACCT_FIELDS) <= known, sorted(set(SACCT_FIELDS) - known)
    assert ("SLUID" in known) == (version(captures.name) >= SLUID_SINCE)


def test_every_state_in_the_captures_is_one_the_job_store_knows(captures):
    states = {r.state for p in psv_files(captures)
              for r in parse_sacct(p.read_text(), tz=UTC)[0]}
    assert states - FINAL_STATES - set(ACTIVE_STATES) == set()
    assert {"COMPLETED", "FAILED"} <= states


def _env(path: Path) -> dict[str, str]:
    lines = path.read_text().split("# ---- env | sort ----\n", 1)[1].splitlines()
    env = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {k: v for k, v in env.items() if k.startswith("SLURM_")}


def test_the_job_end_hook_gets_what_its_release_gives(captures):
    v = version(captures.name)
    sacct = final(parse_sacct((captures / "sacct_alloc.psv").read_text(), tz=UTC)[0])
    dumps = sorted((captures / "dumps").glob("epilog_slurmctld.*.ctld.env"))
    assert dumps
    checked = 0
    for path in dumps:
        record = record_from_hook_env(_env(path))
        assert (record.start is not None and record.end is not None) == (v >= (23, 2)), path
        assert (record.sluid is not None) == (v >= (25, 11)), path
        s = sacct.get(record.job)
        if s is None:
            continue
        assert (record.jobid, record.user, record.uid) == (s.jobid, s.user, s.uid), path
        if v >= (23, 2):
            assert (record.start, record.end) == (s.start, s.end), path
        if v >= (25, 11):
            assert record.sluid == s.sluid or s.sluid is None, path
        checked += 1
    assert checked >= 5
