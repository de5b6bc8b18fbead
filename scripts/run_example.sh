#!/usr/bin/env bash
# The main job: set up (idempotent), then offline inference of SmolLM2-135M-Instruct through vLLM on the TT platform
# (the simulated TT device unless real ttnn sees a device). Extra args go to examples/offline_inference_tt.py.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python examples/offline_inference_tt.py --greedy_sampling --max_tokens 64 --max_seqs_in_batch 8 \
    --max_model_len 1024 "$@"
