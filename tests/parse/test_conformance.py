"""Every capture in ../shared/fixtures/jobstats parses without a problem (when present)."""

from __future__ import annotations

import pytest

from slurm_io.parse.jobstats import Parser, parse
from tests.shared import SHARED, shared_params

FIXTURES = SHARED / "fixtures" / "jobstats"
FILES = sorted(p for p in FIXTURES.glob("*") if p.suffix != ".md") if FIXTURES.is_dir() else []


@pytest.mark.parametrize("path", shared_params(FILES), ids=lambda p: p.name[:60] if p else "-")
def test_shared_capture_parses_completely(path, monkeypatch):
    text = path.read_text()
    r = parse(text)
    n_ids = sum(1 for line in text.splitlines() if line.lstrip().startswith("- job_id:"))
    assert r.n_entries == n_ids
    assert not r.problems
    for entries in r.targets.values():
        for e in entries:
            assert e.names, e.raw_id
            assert all(v >= 0 for v in e.samples)
            for name in ("read_bytes", "write_bytes"):
                if name in e.names:
                    assert name in e.stats
    monkeypatch.setattr(Parser, "_fast", lambda self, chunk: False)
    assert parse(text).targets == r.targets
