"""bfloat8_b / bfloat4_b block-float rounding, as the TT host packer does it.

Sixteen consecutive values along the last dim (one row of a 16x16 tile face) share the largest 8-bit exponent E of the
block. Each value keeps a sign and a magnitude of 7 (bfp8) or 3 (bfp4) bits that includes the explicit leading one,
so value = +-m * 2^(E - 127 - frac_bits). Smaller values lose (E - e) more bits. Rounding is to nearest even on the
shifted significand, m saturates at its maximum, denormal inputs are flushed to zero, and zero is always +0.
"""

from __future__ import annotations

import torch

from .types import BLOCK_FLOAT_GROUP, DataType

# Fraction bits kept after the explicit leading one.
_FRAC_BITS = {DataType.BFLOAT8_B: 6, DataType.BFLOAT4_B: 2}
_MIN_NORMAL = 2.0**-126


def quantize_block_float(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Round `x` to the values representable in `dtype` (bfloat8_b or bfloat4_b); returns float32 of x's shape.

    |x| / 2^(E - frac_bits) is exact in float32 (a power-of-two division whose result is below 2^8), so rounding it
    half-to-even is exactly the packer's round-to-nearest-even of the shifted integer significand."""
    frac_bits = _FRAC_BITS[dtype]
    max_mag = float((1 << (frac_bits + 1)) - 1)
    x = x.to(torch.float32)
    shape = x.shape
    if x.dim() == 0:
        x = x.reshape(1)
    n = x.shape[-1]
    pad = (-n) % BLOCK_FLOAT_GROUP
    if pad:
        # Tile padding is zero, and a zero never raises a block's shared exponent.
        x = torch.nn.functional.pad(x, (0, pad))
    blocks = x.reshape(*x.shape[:-1], -1, BLOCK_FLOAT_GROUP)
    mag = blocks.abs()
    mag = torch.where(mag >= _MIN_NORMAL, mag, 0.0)  # denormals flush to zero (inf/nan cannot be stored on TT)
    _, e = torch.frexp(mag.amax(dim=-1, keepdim=True))  # max = f * 2^e with f in [0.5, 1): shared exponent e - 1
    step = torch.ldexp(torch.ones_like(mag[..., :1]), e - 1 - frac_bits)
    m = torch.round(mag / step).clamp_(max=max_mag)
    out = m * step
    # Signs are kept for non-zero magnitudes only: a value that rounds to zero packs as +0.
    out = torch.where((blocks < 0) & (m > 0), -out, out).reshape(x.shape)
    if pad:
        out = out[..., :n]
    return out.reshape(shape)
