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
    """Round `x` to the values representable in `dtype` (bfloat8_b or bfloat4_b); returns float32 of x's shape."""
    x = x.to(torch.float32)
    n = x.shape[-1] if x.dim() else 1
    if n % BLOCK_FLOAT_GROUP == 0:
        return _quantize_bits(x.reshape(-1, BLOCK_FLOAT_GROUP), dtype).reshape(x.shape)
    return _quantize_reference(x, dtype)


def _quantize_bits(blocks: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """The hot path: the same rounding from the fp32 bit fields in a few integer ops.

    Adding then subtracting 1.5 * 2^(23 + shared_exp - frac_bits) leaves each value rounded to a multiple of the
    block's step with the FPU's round-to-nearest-even (the sum stays inside one binade whose ulp is the step); a
    value rounding to zero comes out as +0. Blocks whose exponent puts that constant past fp32's range (|x| >~
    2^111, inf) take the reference path, block by block (each block's rounding depends on that block alone), the
    others stay on this one. NaNs (e.g. the rows of empty decode slots) round as zeros do, on this path."""
    frac_bits = _FRAC_BITS[dtype]
    magnitude = blocks.view(torch.int32) & 0x7FFFFFFF  # |x|'s bits: ordered as |x| is
    shared = magnitude.amax(dim=1, keepdim=True) >> 23  # the block's largest exponent
    lowest, highest = torch.aminmax(shared)
    if int(highest) > 254 - (23 - frac_bits):
        nan = torch.isnan(blocks)
        if bool(nan.any()):
            # The packer stores a NaN as a zero, and one counts as a zero in its block's exponent (the reference
            # path reads both only through |x| flushed below the smallest normal and the sign of x < 0).
            return _quantize_bits(blocks.masked_fill(nan, 0.0), dtype)
        bad = (shared > 254 - (23 - frac_bits)).reshape(-1)
        out = _quantize_bits(blocks.masked_fill(bad[:, None], 0.0), dtype)
        idx = bad.nonzero().reshape(-1)
        out[idx] = _quantize_reference(blocks[idx], dtype)
        return out
    # Denormals flush to zero. In a block whose exponent is frac_bits + 2 or more a denormal is below half the step
    # and rounds to +0 below as a flushed one does, so the flush is needed only where some block's is lower.
    flushed = blocks * (magnitude >= (1 << 23)) if int(lowest) < frac_bits + 2 else blocks
    magic = (((shared + (23 - frac_bits)) << 23) | (1 << 22)).view(torch.float32)
    # Largest magnitude (2^(frac_bits+1) - 1) * step: exponent = shared, mantissa all ones in the kept bits.
    limit = ((shared << 23) | ((1 << 23) - (1 << (23 - frac_bits)))).view(torch.float32)
    rounded = (flushed + magic) - magic
    return torch.clamp(rounded, min=-limit, max=limit)


def _quantize_reference(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Straightforward form of the rounding, for any shape and exponent range.

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
