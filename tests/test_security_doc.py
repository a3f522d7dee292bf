"""docs/security.md is the threat model: every door has a row that names the tests proving
its limits. A test renamed or removed would leave a row proving nothing, so the names are
checked against the suite (the same for the service's limits table in docs/service.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


def _defined_tests() -> set[str]:
    names = set()
    for path in TESTS.rglob("test_*.py"):
        names.add(path.stem)
        names.update(re.findall(r"^def (test_\w+)", path.read_text(), re.M))
    return names


@pytest.mark.parametrize("doc", ["security.md", "service.md"])
def test_every_test_a_door_row_names_exists(doc: str) -> None:
    text = (ROOT / "docs" / doc).read_text()
    named = set(re.findall(r"\b(test_\w+)", text))
    assert named, f"docs/{doc} names no test"
    missing = sorted(named - _defined_tests())
    assert not missing, f"docs/{doc} names tests that do not exist: {missing}"


def test_every_door_row_says_what_proves_it() -> None:
    rows = [line for line in (ROOT / "docs" / "security.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith(("| door", "|---"))]
    doors = [r for r in rows if r.count("|") >= 6]
    assert len(doors) >= 20, "the threat model lists fewer doors than slurm-io has"
    unproved = [r.split("|")[1].strip() for r in doors
                if not re.search(r"test_\w+|bench/\w+\.py", r.split("|")[-2])]
    assert not unproved, f"doors without a test: {unproved}"
