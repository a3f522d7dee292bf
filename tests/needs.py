"""What a test needs from the machine: root, or a program that scripts/setup.sh installs.

Not a skip: a test that cannot run here fails at set-up, saying what it needs and how to get
it (`bash scripts/test.sh` as root installs and starts everything). A skipped test proves
nothing; the one skip allowed is a test that reads ../shared when it is absent
(tests/shared.py). tests/conftest.py applies these marks before each test.
"""

from __future__ import annotations

import os
import shutil

import pytest

HOW = "run `bash scripts/test.sh` as root, which installs and starts what the tests need"


def root(why: str) -> pytest.MarkDecorator:
    """The test acts as other OS users, runs daemons or makes network namespaces."""
    return pytest.mark.needs(root=why)


def program(*names: str) -> pytest.MarkDecorator:
    """The test runs one of these programs (any one found on PATH will do)."""
    return pytest.mark.needs(program=names)


def check(item: pytest.Item) -> None:
    """Fail `item` at set-up when the machine lacks what its `needs` marks ask for."""
    for mark in item.iter_markers("needs"):
        if "root" in mark.kwargs and os.geteuid() != 0:
            pytest.fail(f"needs root ({mark.kwargs['root']}): {HOW}", pytrace=False)
        names = mark.kwargs.get("program", ())
        if names and not any(shutil.which(n) for n in names):
            pytest.fail(f"needs {' or '.join(names)} on PATH: {HOW}", pytrace=False)
