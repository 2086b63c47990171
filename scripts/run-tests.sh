#!/usr/bin/env bash
# Every test tier, as `make test` runs them (after lint): scripts/run-tests.py says how (jobs
# on one lane per core, longest first by tests/durations.tsv; a budget at the end).
#
#   scripts/run-tests.sh [PYTEST ARGS...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
exec "$repo/.venv/bin/python" "$repo/scripts/run-tests.py" "$@"
