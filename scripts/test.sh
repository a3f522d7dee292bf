#!/usr/bin/env bash
# The whole test suite, set-up included: installs what the tests need, lints, runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
SLURM_IO_EXTRAS=test bash scripts/setup.sh
bash scripts/setup-slurm.sh
.venv/bin/ruff check slurm_io tests bench
# everything the tests need is installed above: a skip would hide a missing step, so it fails
# (tests/conftest.py) -- except the tests that read ../shared when it is absent (tests/shared.py)
SLURM_IO_FORBID_SKIPS=1 exec .venv/bin/python -m pytest "$@"
