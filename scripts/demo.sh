#!/usr/bin/env bash
# The main job on the embedded default: set up, start a private PostgreSQL, simulate a
# cluster, collect it with `jobio collect --from`, and print what was stored.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/jobio demo "$@"
