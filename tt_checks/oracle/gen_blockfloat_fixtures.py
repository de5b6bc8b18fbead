"""Records bfloat8_b / bfloat4_b host packing of the real ttnn into tests/fixtures/blockfloat_ttnn_0.81.1.npz.

Runs under the real ttnn 0.81.1 (Python 3.12 venv, see README.md here); needs numpy only. Every input is exactly
representable in bfloat16, so the fixture fixes the packer's rounding alone. Cases: normal values, a wide exponent
range, blocks mixing tiny and large magnitudes, constructed rounding ties (even and odd), special values (zeros,
signed zeros, tiny/denormal range, near the bf16 maximum), and a shape that needs tile padding.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import ttnn

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "blockfloat_ttnn_0.81.1.npz"
FORMATS = {"bfloat8_b": (ttnn.bfloat8_b, 6), "bfloat4_b": (ttnn.bfloat4_b, 2)}


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bfloat16 (ties to even), returned as float32."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def pack(x: np.ndarray, dtype) -> np.ndarray:
    t = ttnn.Tensor(x.reshape(-1).tolist(), list(x.shape), dtype, ttnn.TILE_LAYOUT)
    return np.array(t.to_list(), dtype=np.float32).reshape(x.shape)


def tie_cases(rng: np.random.Generator, frac_bits: int, shape: tuple) -> np.ndarray:
    """Blocks whose first value fixes the shared exponent at 2^0 and whose other values sit exactly halfway between
    two representable magnitudes (odd and even lower neighbours) or exactly on one."""
    step = 2.0 ** -frac_bits
    n = int(np.prod(shape))
    x = np.empty(n, dtype=np.float32)
    for i in range(0, n, 16):
        block = np.empty(16, dtype=np.float32)
        block[0] = 1.0 + step * rng.integers(0, 2**frac_bits)  # normal value with exponent 0
        m = rng.integers(0, 2 ** (frac_bits + 1) - 1, size=15)
        kind = rng.integers(0, 3, size=15)
        # halfway (m + 0.5) * step: ties between m and m+1; m even or odd; some exactly representable
        vals = np.where(kind == 0, (m + 0.5) * step, np.where(kind == 1, m * step, (m + 0.25) * step))
        # smaller-exponent ties: halfway after the extra shift of a value two binades down
        small = rng.random(15) < 0.3
        vals = np.where(small, (m % 8 + 0.5) * step, vals)
        block[1:] = vals * np.where(rng.random(15) < 0.5, -1, 1)
        x[i : i + 16] = block
    return to_bf16(x).reshape(shape)


def cases(frac_bits: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1234 + frac_bits)
    shape = (1, 2, 64, 64)
    out = {
        "normal": to_bf16(rng.standard_normal(shape).astype(np.float32)),
        "wide_range": to_bf16((rng.standard_normal(shape) * 2.0 ** rng.integers(-40, 40, shape)).astype(np.float32)),
        "mixed_magnitude": to_bf16(
            (rng.standard_normal(shape) * np.where(rng.random(shape) < 0.1, 1000.0, 0.01)).astype(np.float32)),
        "rounding_ties": tie_cases(rng, frac_bits, shape),
        "near_saturation": to_bf16(  # magnitudes just below the next power of two round up past the top code
            (np.sign(rng.standard_normal(shape)) * (2.0 - 2.0 ** -rng.integers(1, 9, shape))
             * 2.0 ** rng.integers(-3, 3, shape)).astype(np.float32)),
        "padded_shape": to_bf16(rng.standard_normal((1, 2, 40, 48)).astype(np.float32) * 3),
    }
    special = np.zeros(shape, dtype=np.float32).reshape(-1)
    choices = np.array([0.0, -0.0, 1e-38, -1e-38, 1e-40, 3.0e38, -3.0e38, 1.0, -1.0, 2.0**-126, 2.0**-120, 65504.0],
                       dtype=np.float32)
    special[:] = choices[rng.integers(0, len(choices), special.size)]
    out["special_values"] = to_bf16(special).reshape(shape)
    return out


def main() -> None:
    arrays = {}
    total = {}
    for name, (dtype, frac_bits) in FORMATS.items():
        for case, x in cases(frac_bits).items():
            arrays[f"{name}__{case}__input"] = x
            arrays[f"{name}__{case}__output"] = pack(x, dtype)
            total[name] = total.get(name, 0) + x.size
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): values per format {total}", file=sys.stderr)


if __name__ == "__main__":
    main()
