"""Splitting fused QKV projections into heads and concatenating heads back (prefill and decode forms)."""

from __future__ import annotations

from typing import Any

import torch

from .compute import output, per_device
from .errors import TTError, refuse_options
from .memory import MemoryConfig
from .tensor import Tensor, require_device, require_dtype, require_layout
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout


def _head_dim(op: str, width: int, num_heads: int, num_kv_heads: int) -> int:
    total = num_heads + 2 * num_kv_heads
    if width % total:
        raise TTError(op, f"width {width} does not split into {num_heads} q + 2x{num_kv_heads} kv heads")
    hd = width // total
    if hd % TILE_SIZE:
        raise TTError(op, f"head_dim {hd} must be a multiple of {TILE_SIZE}")
    return hd


@device_op(kernel_replay=True)
def nlp_create_qkv_heads(
    input: Tensor,  # noqa: A002
    input_kv: Tensor | None = None,
    *,
    num_heads: int,
    num_kv_heads: int | None = None,
    transpose_k_heads: bool = False,
    kv_tied: bool = False,
    memory_config: MemoryConfig | None = None,
    output_tensors: Any = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """[B, 1, S, (nh + 2 nkv) * hd] -> Q [B, nh, S, hd], K [B, nkv, S, hd] (or [B, nkv, hd, S]), V [B, nkv, S, hd]."""
    op = "experimental.nlp_create_qkv_heads"
    input_tensor = input
    require_device(op, input_tensor, input_kv)
    refuse_options(op, input_kv=input_kv is not None, kv_tied=kv_tied, output_tensors=output_tensors)
    require_layout(op, "input_tensor", input_tensor, Layout.TILE)
    nkv = num_kv_heads or num_heads
    if input_tensor.shape.rank != 4 or input_tensor.shape[1] != 1:
        raise TTError(op, f"input must be [B, 1, S, width], got {tuple(input_tensor.shape)}")
    hd = _head_dim(op, input_tensor.shape[-1], num_heads, nkv)

    def split(x: torch.Tensor, lo: int, n: int) -> torch.Tensor:
        b, _, s, _ = x.shape
        return x[..., lo * hd : (lo + n) * hd].reshape(b, s, n, hd).transpose(1, 2).contiguous()

    q = output(input_tensor, per_device(lambda x: split(x, 0, num_heads), input_tensor), memory_config=memory_config)
    k = output(input_tensor, per_device(lambda x: split(x, num_heads, nkv), input_tensor), memory_config=memory_config)
    if transpose_k_heads:
        k = Tensor.make([s.transpose(-1, -2).contiguous() for s in k._shards], k.dtype, k.layout, k.device_or_none,
                        k.memory_config())
    v = output(input_tensor, per_device(lambda x: split(x, num_heads + nkv, nkv), input_tensor),
               memory_config=memory_config)
    return q, k, v


@device_op(kernel_replay=True)
def nlp_create_qkv_heads_decode(
    input_tensor: Tensor,
    *,
    num_heads: int,
    num_kv_heads: int | None = None,
    output_tensors: Any = None,
    overlap_qk_coregrid: bool = True,
    batch_offset: Tensor | None = None,
    slice_size: int | None = None,
    memory_config: MemoryConfig | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """[1, 1, B, (nh + 2 nkv) * hd] -> Q [1, B, nh, hd], K [1, B, nkv, hd], V [1, B, nkv, hd] (heads padded to 32)."""
    op = "experimental.nlp_create_qkv_heads_decode"
    require_device(op, input_tensor)
    refuse_options(op, output_tensors=output_tensors, batch_offset=batch_offset, slice_size=slice_size)
    require_layout(op, "input_tensor", input_tensor, Layout.TILE)
    require_dtype(op, "input_tensor", input_tensor, (DataType.BFLOAT16, DataType.FLOAT32))
    nkv = num_kv_heads or num_heads
    if input_tensor.shape.rank != 4 or input_tensor.shape[0] != 1 or input_tensor.shape[1] != 1:
        raise TTError(op, f"input must be [1, 1, B, width], got {tuple(input_tensor.shape)}")
    if num_heads > TILE_SIZE or nkv > TILE_SIZE:
        raise TTError(op, f"at most {TILE_SIZE} heads per device, got {num_heads} q / {nkv} kv")
    hd = _head_dim(op, input_tensor.shape[-1], num_heads, nkv)

    def split(x: torch.Tensor, lo: int, n: int) -> torch.Tensor:
        return x.narrow(-1, lo * hd, n * hd).reshape(1, x.shape[2], n, hd)

    parts = ((0, num_heads), (num_heads, nkv), (num_heads + nkv, nkv))
    return tuple(
        output(input_tensor, per_device(lambda x, lo=lo, n=n: split(x, lo, n), input_tensor),
               memory_config=memory_config)
        for lo, n in parts
    )


@device_op(kernel_replay=True)
def nlp_concat_heads(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None) -> Tensor:
    """[B, nh, S, hd] -> [B, 1, S, nh * hd]."""
    op = "experimental.nlp_concat_heads"
    require_device(op, input_tensor)
    require_layout(op, "input_tensor", input_tensor, Layout.TILE)
    b, nh, s, hd = input_tensor.shape
    return output(input_tensor, per_device(lambda x: x.transpose(1, 2).reshape(b, 1, s, nh * hd), input_tensor),
                  memory_config=memory_config)


@device_op(kernel_replay=True)
def nlp_concat_heads_decode(
    input_tensor: Tensor, *, num_heads: int, memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None, sub_core_grids: Any = None
) -> Tensor:
    """[1, B, nh(padded), hd] -> [1, 1, B, num_heads * hd], dropping the padded heads."""
    op = "experimental.nlp_concat_heads_decode"
    require_device(op, input_tensor)
    refuse_options(op, output_tensor=output_tensor)
    require_layout(op, "input_tensor", input_tensor, Layout.TILE)
    _, b, nh, hd = input_tensor.shape
    if num_heads > nh:
        raise TTError(op, f"num_heads {num_heads} > {nh} heads in the input")
    return output(input_tensor,
                  per_device(lambda x: x.narrow(2, 0, num_heads).reshape(1, 1, b, num_heads * hd), input_tensor),
                  memory_config=memory_config)
