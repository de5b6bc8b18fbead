#!/usr/bin/env bash
# Tenstorrent's own ttnn unit tests against the simulator (developer measurement; needs GitHub for the fetch).
#   ./tt_checks/tt_metal_unit/run.sh                 # fetch what is missing, verify, run all, rewrite the JSON summary
#   ./tt_checks/tt_metal_unit/run.sh --files softmax # run a subset (does not rewrite the JSON)
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python tt_checks/tt_metal_unit/fetch.py
exec .venv/bin/python tt_checks/tt_metal_unit/run.py "$@"
