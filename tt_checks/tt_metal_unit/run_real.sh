#!/bin/bash
# Run fetched tt-metal test files on the REAL ttnn 0.81.1 (.venv-ttnn) on a mock T3K, with this harness's fixtures
# (ttmetal_sim_plugin.py with TT_METAL_UNIT_REAL_TTNN=1 keeps the real ttnn instead of the simulator). A mock device
# runs no kernels, so the comparisons of values fail; what counts is whether each test's calls are accepted (a test
# that fails on its value comparison got past every call). Needs pytest in .venv-ttnn; a trace capture of a
# collective crashes the mock (segfault), so deselect the trace cases (-k "not perf ...").
#
#   tt_checks/tt_metal_unit/run_real.sh tests/nightly/t3000/ccl/test_all_gather.py -k "not perf and not async_broadcast"
#   (report: one JSON line per test in $TT_METAL_UNIT_REPORT, default /tmp/tt_metal_unit_real.jsonl)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/tt_checks/tt_metal_unit"
"$ROOT/scripts/check_real_ttnn.sh" --setup-only >/dev/null
export TT_METAL_UNIT_REAL_TTNN=1
export TT_METAL_MOCK_CLUSTER_DESC_PATH="${TT_METAL_MOCK_CLUSTER_DESC_PATH:-$ROOT/tt_checks/mock_device/clusters/T3K.yaml}"
export PYTHONPATH="$HERE:$HERE/standins:$ROOT/.cache/tt-metal-tests"
export TT_METAL_UNIT_TIMEOUT_S="${TT_METAL_UNIT_TIMEOUT_S:-300}"
export TT_METAL_UNIT_REPORT="${TT_METAL_UNIT_REPORT:-/tmp/tt_metal_unit_real.jsonl}"
export TT_METAL_CACHE="$ROOT/.cache/real_ttnn/tt_metal_cache/"
export TT_METAL_LOGGER_LEVEL=FATAL TT_LOGGER_LEVEL=off LOGURU_LEVEL=WARNING TT_BACKEND=ttnn
cd "$ROOT/.cache/tt-metal-tests"   # not the repository root: its tests/ package would shadow tt-metal's
exec "$ROOT/.venv-ttnn/bin/python" -m pytest -c "$HERE/pytest.ini" --rootdir . -p ttmetal_sim_plugin -q -rN \
  --tb=line "$@"
