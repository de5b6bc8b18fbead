"""rotary_embedding_llama: out = x * cos + (x @ T) * sin, T applied to every 32-wide tile of head_dim.

T is the caller's transformation matrix (for Llama, the pairwise rotation T[2k, 2k+1] = 1, T[2k+1, 2k] = -1), so a
model that passes the wrong matrix or non-interleaved cos/sin gets wrong numbers here, as it would on hardware.
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import derived, f32, f32_cached, output, per_device
from .errors import TTError
from .memory import MemoryConfig
from .tensor import Tensor, require_device, require_layout
from .trace import device_op
from .types import TILE_SIZE, Layout


def _signed_permutation(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    tile = t.reshape(-1, TILE_SIZE, TILE_SIZE)[0].float()
    src = tile.abs().argmax(0)
    sign = tile.gather(0, src[None])[0]
    ok = bool(((tile != 0).sum(0) == 1).all()) and bool((sign.abs() == 1).all())
    return (src, sign) if ok else None


def signed_permutation(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(source column, sign) per output column when the first 32x32 tile of t has exactly one +-1 per column and
    zeros elsewhere (Llama's rotation matrix is one), else None."""
    return derived(t, "signed_permutation", _signed_permutation)


@device_op(kernel_replay=True)
def rotary_embedding_llama(
    input_tensor: Tensor,
    cos_cache: Tensor,
    sin_cache: Tensor,
    trans_mat: Tensor,
    is_decode_mode: bool = False,
    *,
    memory_config: MemoryConfig | None = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    op = "experimental.rotary_embedding_llama"
    require_device(op, input_tensor, cos_cache, sin_cache, trans_mat)
    for name, t in (("input_tensor", input_tensor), ("cos_cache", cos_cache), ("sin_cache", sin_cache),
                    ("trans_mat", trans_mat)):
        require_layout(op, name, t, Layout.TILE)
    x_shape, c_shape = tuple(input_tensor.shape), tuple(cos_cache.shape)
    hd = x_shape[-1]
    if hd % TILE_SIZE:
        raise TTError(op, f"head_dim {hd} must be a multiple of {TILE_SIZE}")
    if tuple(sin_cache.shape) != c_shape or c_shape[-1] != hd:
        raise TTError(op, f"cos {c_shape} / sin {tuple(sin_cache.shape)} must match and end in head_dim {hd}")
    if trans_mat.shape[-1] != TILE_SIZE or trans_mat.shape[-2] % TILE_SIZE:
        raise TTError(op, f"trans_mat must be made of 32x32 tiles, got {tuple(trans_mat.shape)}")
    if is_decode_mode:
        # x [1, B, nh, hd]; cos/sin [1, B, 1, hd]: one position per user, shared by its heads.
        if x_shape[0] != 1 or c_shape[:2] != x_shape[:2] or c_shape[2] != 1:
            raise TTError(op, f"decode mode needs x [1, B, nh, hd] and cos/sin [1, B, 1, hd]; got {x_shape}, {c_shape}")
    elif c_shape[-2] != x_shape[-2] or (len(c_shape) == 4 and c_shape[1] != 1):
        raise TTError(op, f"prefill needs cos/sin [1, 1, S, hd] with S = {x_shape[-2]}; got {c_shape}")

    def compute(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        x = f32(x)
        tiles = x.reshape(*x.shape[:-1], hd // TILE_SIZE, TILE_SIZE)
        perm = signed_permutation(t)
        if perm is None:
            rotated = tiles @ f32_cached(t).reshape(-1, TILE_SIZE, TILE_SIZE)[0]
        else:  # the same product, exactly: each output column is one input column times +-1
            rotated = tiles.index_select(-1, perm[0]).mul_(perm[1])
        # cos/sin are shared by q and k of every layer: converted once per buffer version, not per product.
        return torch.addcmul(x * f32_cached(cos), rotated.reshape(x.shape), f32_cached(sin))

    return output(input_tensor, per_device(compute, input_tensor, cos_cache, sin_cache, trans_mat),
                  memory_config=memory_config)
