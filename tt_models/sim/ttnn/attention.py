"""Prefill attention: scaled_dot_product_attention (causal, GQA, sliding window) and its chunked form that reads
keys and values from the paged KV cache (long prompts, prefix-cache hits)."""

from __future__ import annotations

import math
from typing import Any

import torch

from .compute import f32, output, per_device
from .errors import TTError, refuse_options
from .memory import MemoryConfig
from .paged import gather_pages, require_page_table
from .tensor import Tensor, require_device, require_layout
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout


def _sdpa_out_dtype(q: Tensor) -> DataType:
    return DataType.FLOAT32 if q.dtype == DataType.FLOAT32 else DataType.BFLOAT16


def _check_heads(op: str, nqh: int, nkv: int) -> None:
    if nqh % nkv:
        raise TTError(op, f"{nqh} query heads are not a multiple of {nkv} kv heads")


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_pos: torch.Tensor, k_valid_upto: torch.Tensor | None,
           scale: float, causal: bool, window: int | None, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Attention in fp32 with explicit positions. q [b, nqh, s, d]; k, v [b, nkv, t, d]; q_pos [b, s] absolute
    positions of the queries; key j sits at position j."""
    b, nqh, s, d = q.shape
    nkv, t = k.shape[1], k.shape[2]
    g = nqh // nkv
    if mask is None:
        # torch's fused kernel: the same fp32 math without materializing [heads, s, t] scores.
        kpos = torch.arange(t)
        qp = q_pos.reshape(b, 1, s, 1)
        allowed = kpos <= qp if causal else torch.ones(b, 1, s, t, dtype=torch.bool)
        if window is not None:
            allowed = allowed & (kpos > qp - window)
        if k_valid_upto is not None:
            allowed = allowed & (kpos <= k_valid_upto.reshape(b, 1, 1, 1))
        out = torch.nn.functional.scaled_dot_product_attention(
            f32(q), f32(k), f32(v), attn_mask=allowed, scale=scale, enable_gqa=g > 1)
        return out.nan_to_num_(0.0)  # fully masked rows attend to nothing
    qf = f32(q).reshape(b, nkv, g * s, d)
    scores = torch.matmul(qf, f32(k).transpose(-1, -2)).reshape(b, nkv, g, s, t) * scale
    kpos = torch.arange(t)
    allowed = torch.ones(b, 1, 1, s, t, dtype=torch.bool)
    qp = q_pos.reshape(b, 1, 1, s, 1)
    if causal:
        allowed &= kpos <= qp
    if window is not None:
        allowed &= kpos > qp - window
    if k_valid_upto is not None:
        allowed &= kpos <= k_valid_upto.reshape(b, 1, 1, 1, 1)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if mask is not None:
        scores = scores + f32(mask).reshape(b if mask.shape[0] == b else 1, 1, -1, s, t)[:, :, :, :, :t]
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # fully masked rows attend to nothing
    out = torch.matmul(probs.reshape(b, nkv, g * s, t), f32(v))
    return out.reshape(b, nqh, s, d)


@device_op(kernel_replay=True)
def scaled_dot_product_attention(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    input_tensor_v: Tensor,
    *,
    attn_mask: Tensor | None = None,
    is_causal: bool = True,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    memory_config: MemoryConfig | None = None,
    program_config: Any = None,
    compute_kernel_config: Any = None,
    attention_sink: Tensor | None = None,
    cu_window_seqlens: Any = None,
    windowed_q_token_offset: int | None = None,
    windowed_q_token_offset_tensor: Tensor | None = None,
    output_concat_heads: bool = False,
    attn_mask_block_map: Any = None,
) -> Tensor:
    op = "transformer.scaled_dot_product_attention"
    q, k, v = input_tensor_q, input_tensor_k, input_tensor_v
    require_device(op, q, k, v, attn_mask)
    refuse_options(op, attention_sink=attention_sink, cu_window_seqlens=cu_window_seqlens,
                   windowed_q_token_offset=windowed_q_token_offset,
                   windowed_q_token_offset_tensor=windowed_q_token_offset_tensor,
                   output_concat_heads=output_concat_heads, attn_mask_block_map=attn_mask_block_map)
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_layout(op, name, t, Layout.TILE)
    b, nqh, s, d = q.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[-1] != d:
        raise TTError(op, f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not fit [b, heads, s, d]")
    _check_heads(op, nqh, k.shape[1])
    if is_causal and k.shape[2] != s:
        raise TTError(op, f"causal attention needs equal q and k lengths, got {s} and {k.shape[2]}")
    if is_causal and attn_mask is not None:
        raise TTError(op, "attn_mask must be None when is_causal=True")
    if s % TILE_SIZE:
        raise TTError(op, f"sequence length {s} must be a multiple of {TILE_SIZE}")
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    qpos = torch.arange(s).expand(b, s)

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, m: Any) -> torch.Tensor:
        return attend(qq, kk, vv, qpos, None, sc, is_causal, sliding_window_size, m)

    return output(q, per_device(compute, q, k, v, attn_mask), _sdpa_out_dtype(q), Layout.TILE, memory_config)


@device_op()
def chunked_scaled_dot_product_attention(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    input_tensor_v: Tensor,
    page_table_tensor: Tensor,
    chunk_start_idx: int | None = None,
    *,
    chunk_start_idx_tensor: Tensor | None = None,
    scale: float | None = None,
    memory_config: MemoryConfig | None = None,
    program_config: Any = None,
    compute_kernel_config: Any = None,
    paged_cache_geometry: Any = None,
    sliding_window_size: int | None = None,
    attention_sink: Tensor | None = None,
) -> Tensor:
    """Causal attention of a chunk of queries at positions chunk_start_idx.. over keys 0..chunk end, read from the
    paged cache (which must already hold this chunk's keys and values)."""
    op = "transformer.chunked_scaled_dot_product_attention"
    q, kc, vc = input_tensor_q, input_tensor_k, input_tensor_v
    require_device(op, q, kc, vc, page_table_tensor, chunk_start_idx_tensor)
    refuse_options(op, paged_cache_geometry=paged_cache_geometry, attention_sink=attention_sink)
    if (chunk_start_idx is None) == (chunk_start_idx_tensor is None):
        raise TTError(op, "pass exactly one of chunk_start_idx and chunk_start_idx_tensor")
    if chunk_start_idx_tensor is not None:
        # The tensor form reads the start on device; here it is read once per call.
        chunk_start_idx = int(chunk_start_idx_tensor.shard(0).reshape(-1)[0])
    require_layout(op, "q", q, Layout.TILE)
    require_page_table(op, page_table_tensor)
    b, nqh, s, d = q.shape
    nkv, bs = kc.shape[1], kc.shape[2]
    _check_heads(op, nqh, nkv)
    if page_table_tensor.shape[0] != b:
        raise TTError(op, f"page table has {page_table_tensor.shape[0]} rows for batch {b}")
    if chunk_start_idx % TILE_SIZE or s % TILE_SIZE:
        raise TTError(op, f"chunk_start_idx {chunk_start_idx} and chunk length {s} must be multiples of {TILE_SIZE}")
    end = chunk_start_idx + s
    nblocks = -(-end // bs)
    if nblocks > page_table_tensor.shape[1]:
        raise TTError(op, f"chunk ends at {end}: needs {nblocks} blocks, page table has {page_table_tensor.shape[1]}")
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    qpos = (torch.arange(s) + chunk_start_idx).expand(b, s)

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, pt: torch.Tensor) -> torch.Tensor:
        keys = gather_pages(kk, pt[:, :nblocks])[:, :, :end]
        vals = gather_pages(vv, pt[:, :nblocks])[:, :, :end]
        return attend(qq, keys, vals, qpos, None, sc, True, sliding_window_size)

    return output(q, per_device(compute, q, kc, vc, page_table_tensor), _sdpa_out_dtype(q), Layout.TILE,
                  memory_config)
