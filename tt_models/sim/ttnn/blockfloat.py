"""bfloat8_b / bfloat4_b block-float rounding, as the TT host packer does it.

Sixteen consecutive values along the last dim (one row of a 16x16 tile face) share the largest 8-bit exponent E of the
block. Each value keeps a sign and a magnitude of 7 (bfp8) or 3 (bfp4) bits that includes the explicit leading one,
so value = +-m * 2^(E - 127 - frac_bits). Smaller values lose (E - e) more bits. Rounding is to nearest even on the
shifted significand, m saturates at its maximum, denormal inputs are flushed to zero, and zero is always +0.
The arithmetic is done on the integer significand so it is exact for every input exponent.
"""

from __future__ import annotations

import torch

from .types import BLOCK_FLOAT_GROUP, DataType

# Fraction bits kept after the explicit leading one.
_FRAC_BITS = {DataType.BFLOAT8_B: 6, DataType.BFLOAT4_B: 2}
_MANT_BITS = 23  # float32
# Any shift of 25 or more leaves a 24-bit significand below one half: it rounds to zero, so larger shifts are clamped.
_MAX_SHIFT = 25


def quantize_block_float(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Round `x` to the values representable in `dtype` (bfloat8_b or bfloat4_b); returns float32 of x's shape."""
    frac_bits = _FRAC_BITS[dtype]
    max_mag = (1 << (frac_bits + 1)) - 1
    x = x.to(torch.float32)
    shape = x.shape
    n = shape[-1] if x.dim() else 1
    pad = (-n) % BLOCK_FLOAT_GROUP
    if x.dim() == 0:
        x = x.reshape(1)
    if pad:
        # Tile padding is zero, and a zero never raises a block's shared exponent.
        x = torch.nn.functional.pad(x, (0, pad))
    bits = x.contiguous().view(torch.int32)
    blocks = bits.reshape(*bits.shape[:-1], -1, BLOCK_FLOAT_GROUP)

    exp = (blocks >> _MANT_BITS) & 0xFF
    mant = blocks & ((1 << _MANT_BITS) - 1)
    negative = blocks < 0
    normal = (exp > 0) & (exp < 255)
    exp = torch.where(normal, exp, torch.zeros_like(exp))  # denormals (and inf/nan, which TT cannot hold) -> 0
    shared = exp.amax(dim=-1, keepdim=True)

    significand = torch.where(normal, mant | (1 << _MANT_BITS), torch.zeros_like(mant))
    shift = (shared - exp + (_MANT_BITS - frac_bits)).clamp(max=_MAX_SHIFT)
    q = significand >> shift
    rem = significand & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    round_up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    m = (q + round_up.to(q.dtype)).clamp(max=max_mag)

    scale_exp = (shared - 127 - frac_bits).to(torch.int32)
    mag = torch.ldexp(m.to(torch.float32), scale_exp.to(torch.float32))
    mag = torch.where(shared > 0, mag, torch.zeros_like(mag))
    # A magnitude that rounds to zero packs as +0: the packer drops the sign of zero.
    out = torch.where(negative & (m > 0), -mag, mag).reshape(*x.shape)
    if pad:
        out = out[..., :n]
    return out.reshape(shape)
