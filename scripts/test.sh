#!/usr/bin/env bash
# The whole test suite, set-up included: installs what the tests need, lints, runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
SLURM_IO_EXTRAS=test bash scripts/setup.sh
bash scripts/setup-slurm.sh
.venv/bin/ruff check slurm_io tests bench
exec .venv/bin/python -m pytest "$@"
