#!/usr/bin/env bash
# The whole test suite, set-up included: installs what the tests need, lints, runs pytest.
#
# The real-Slurm tests run once per Slurm release: 22.05 on the host (setup-slurm.sh), 24.11
# and 26.05 in Debian chroots (setup-slurm-chroot.sh; built once, then cached on the
# machine). SLURM_IO_SLURM selects releases for local work, e.g. SLURM_IO_SLURM=22.05 or
# SLURM_IO_SLURM=24.11,26.05 (default: all three).
set -euo pipefail
cd "$(dirname "$0")/.."
export SLURM_IO_SLURM=${SLURM_IO_SLURM:-22.05,24.11,26.05}
SLURM_IO_EXTRAS=test bash scripts/setup.sh
IFS=, read -ra releases <<<"$SLURM_IO_SLURM"
for r in "${releases[@]}"; do
  t0=$(date +%s)
  case "$r" in
    22.05) bash scripts/setup-slurm.sh >/dev/null ;;
    *) bash scripts/setup-slurm-chroot.sh "$r" >/dev/null ;;
  esac
  echo "Slurm $r testbed ready in $(( $(date +%s) - t0 )) s"
done
.venv/bin/ruff check slurm_io tests bench
# everything the tests need is installed above: a skip would hide a missing step, so it fails
# (tests/conftest.py) -- except the tests that read ../shared when it is absent (tests/shared.py)
SLURM_IO_FORBID_SKIPS=1 exec .venv/bin/python -m pytest "$@"
