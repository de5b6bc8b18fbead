#!/usr/bin/env bash
# The project's test command: set up (idempotent), lint, run the test suite. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q -ra "$@"
