#!/usr/bin/env bash
# The project's test command: set up (idempotent), lint, run the test suite. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check .
# Two workers by default (TT_TEST_WORKERS; 0 runs in this process): a simulator test keeps about one and a half
# cores busy, a vLLM test (its engine core computing, the test process waiting) about one, so two at a time fill a
# 2-core machine. A test file stays on one worker, so module-scoped engines start once; each worker holds at most a
# few SmolLM2 engines (about 2 GB each), which is what bounds the count.
WORKERS="${TT_TEST_WORKERS:-2}"
# One torch thread per process when several run: OpenMP threads spinning on a busy core cost far more than the
# second thread gives one process (measured: the simulator's SmolLM2 tests take 64 s on two threads, 75 s on one).
if [ "$WORKERS" != 0 ] && [ "$WORKERS" != 1 ]; then
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
fi
exec .venv/bin/python -m pytest -q -ra --durations=25 -n "$WORKERS" --dist loadfile "$@"
