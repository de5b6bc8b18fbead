"""Prefill attention: scaled_dot_product_attention (causal, GQA, sliding window) and its chunked form that reads
keys and values from the paged KV cache (long prompts, prefix-cache hits).

One device op validates both in ttnn 0.81.1 (sdpa_device_operation.cpp), so they share most rules; each op registers
them under its own name, as its errors name the op called. Q [b, nqh, S, dh] and K/V [b, nkv, S, dh] are TILE and
interleaved (DRAM or L1); chunked K/V are caches [blocks, nkv, block, dh] read through an int32 page table
[b, pages]. The output takes Q's shape and dtype, TILE, in `memory_config` or else DRAM (not Q's memory).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import torch

from . import sdpa_cb
from .allocator import page_bytes
from .compute import f32, output, per_device, reference_precision
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, BufferType, MemoryConfig
from .paged import check_blocks, gather_pages
from .rules import Rule, rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout, round_up

_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B)
_SRC = "transformer/sdpa/device/sdpa_device_operation.cpp"
_FACTORY = "transformer/sdpa/device/sdpa_program_factory.cpp"
_BINDING = "transformer/sdpa/sdpa_nanobind.cpp"
_LAUNCH = "ttnn/cpp/ttnn/device_operation.hpp"

# The messages of the rules both ops check.
_HOST = "Device Operations expect device tensors as inputs"
_ON_DEVICE = "Operands to SDPA need to be on device"
_TILIZED = "Inputs to SDPA must be tilized"
_DTYPE = "Data type of input tensor must be BFLOAT16, BFLOAT8_B, or BFLOAT4_B and is {}"
_INTERLEAVED = "Operands to SDPA need to be DRAM/L1 interleaved"
_KV_HEADS = "K and V num_heads must match. Got K: {}, V: {}"
_KV_HIDDEN = "K and V hidden dim must match. Got K: {}, V: {}"
_GQA = ("Q num_heads must be >= K num_heads and divisible by K num_heads, and K num_heads must be greater than 0. "
        "Got Q: {}, K: {}")
_Q_CHUNK = "q_chunk_size must be a positive multiple of TILE_SIZE. Got q_chunk_size: {}, TILE_SIZE: {}"
_K_CHUNK = "k_chunk_size must be a positive multiple of TILE_SIZE. Got k_chunk_size: {}, TILE_SIZE: {}"
_PAD_BATCH = "Padding is not supported on the batch dimension"
_PAD_HEADS = "Padding is not supported on the num_heads dimension"
_PAD_HEAD_DIM = "Padding is not supported on the head_dim dimension"
_GRID = "Provided grid must not contain more cores than the device. Got {} cores, expected at most {} cores."
_HOST_Q = "a host K or V fails the launch's device-tensor check first, and ttnn 0.81.1 segfaults on a host Q (measured)"
_TILE_PADS = "TILE pads only the last two dims, so a tensor's batch and heads are never padded"

# ---------------- scaled_dot_product_attention ----------------
P = rules("transformer.scaled_dot_product_attention", _SRC)
# The host code pre-scales a mask by 1/scale with a binary multiply before the device op runs.
P_MASK_HOST = P("Input tensor A must be on device, got storage type: {}", "sdpa-prefill/mask-host",
                "sdpa-prefill/non-causal-mask", source="eltwise/binary_ng/device/binary_ng_device_operation.cpp")
P_HOST = P(_HOST, "sdpa-prefill/k-host", "sdpa-prefill/ok", source=_LAUNCH)
P_ON_DEVICE = P(_ON_DEVICE, unreachable=_HOST_Q)
P_TILIZED = P(_TILIZED, "sdpa-prefill/k-row-major", "sdpa-prefill/ok")
P_DTYPE = P(_DTYPE, "sdpa-prefill/q-fp32", "sdpa-prefill/ok")
P_INTERLEAVED = P(_INTERLEAVED, "sdpa-prefill/q-height-sharded", "sdpa-prefill/l1-inputs")
P_CAUSAL_MASK = P("is_causal and attn_mask cannot both be present. Got is_causal: {}, attn_mask: {}",
                  "sdpa-prefill/causal-with-mask", "sdpa-prefill/non-causal-mask")
P_WINDOW_MASK = P("sliding_window_size and attn_mask cannot both be present; bake the sliding-window mask into "
                  "attn_mask. Got sliding_window_size: {}, attn_mask: {}", "sdpa-prefill/window-with-mask",
                  "sdpa-prefill/non-causal-mask")
P_MASK_ON_DEVICE = P("When mask is provided to SDPA, the tensor must be on device",
                     unreachable="a host mask fails the pre-scaling multiply first")
P_MASK_TILIZED = P("When mask is provided to SDPA, it must be tilized", "sdpa-prefill/mask-row-major",
                   "sdpa-prefill/non-causal-mask")
P_MASK_DTYPE = P("When mask is provided to SDPA, it must be in BF16, BFP8, or BFP4 dataformat",
                 "sdpa-prefill/mask-fp32", "sdpa-prefill/batch-2-mask-per-head")
P_MASK_DRAM = P("When mask is provided to SDPA, it must be in DRAM", "sdpa-prefill/mask-l1",
                "sdpa-prefill/non-causal-mask")
P_MASK_BATCH = P("Mask batch dim must either be 1 (to be broadcasted across all batches) or must match Q batch "
                 "dimension", "sdpa-prefill/mask-batch-3", "sdpa-prefill/batch-2-mask-per-head")
P_MASK_HEADS = P("Mask num_heads must either be 1 (to be broadcasted across all heads) or must match Q heads "
                 "dimension", "sdpa-prefill/mask-heads-2", "sdpa-prefill/batch-2-mask-per-head")
P_MASK_Q_LEN = P("Mask sequence length must match Q sequence length", "sdpa-prefill/mask-q-len-64",
                 "sdpa-prefill/non-causal-mask")
P_MASK_K_LEN = P("Mask sequence length must match K sequence length", "sdpa-prefill/mask-k-len-64",
                 "sdpa-prefill/non-causal-mask")
# The attention sink: one logit per Q head, [1, nqh, 1, 1] (its logical shape's dims 0..3 are read as given).
P_SINK_TILE = P("Attention sink must be tilized", "sdpa-prefill/sink/row-major", "sdpa-prefill/sink/ok")
P_SINK_DTYPE = P("Attention sink must be in BF16, BFP8, or BFP4 dataformat", "sdpa-prefill/sink/fp32",
                 "sdpa-prefill/sink/bfp8")
P_SINK_DRAM = P("Attention sink must be in DRAM", "sdpa-prefill/sink/l1", "sdpa-prefill/sink/ok")
P_SINK_BATCH = P("Attention sink batch dimension must be 1. Got {}", "sdpa-prefill/sink/batch-2",
                 "sdpa-prefill/sink/2d", "sdpa-prefill/sink/ok")
P_SINK_HEADS = P("Attention sink num_heads must match Q num_heads. Got sink: {}, Q: {}", "sdpa-prefill/sink/kv-heads",
                 "sdpa-prefill/sink/ok")
P_SINK_SEQ = P("Attention sink sequence dimension must be 1. Got {}", "sdpa-prefill/sink/seq-32",
               "sdpa-prefill/sink/ok")
P_SINK_HIDDEN = P("Attention sink hidden dimension must be 1. Got {}", "sdpa-prefill/sink/width-32",
                  "sdpa-prefill/sink/ok")
P_CAUSAL_SEQ = P("Causal SDPA requires Q and K to have the same sequence length. Got Q: {}, K: {}",
                 "sdpa-prefill/causal-k-256", "sdpa-prefill/non-causal-k-256")
P_KV_BATCH = P("K and V batch must match. Got K: {}, V: {}", "sdpa-prefill/kv-batch-1",
               "sdpa-prefill/batch-2-mask-per-head")
P_KV_HEADS = P(_KV_HEADS, "sdpa-prefill/v-heads-4", "sdpa-prefill/ok")
P_KV_SEQ = P("K and V sequence length must match. Got K: {}, V: {}", "sdpa-prefill/v-seq-256",
             "sdpa-prefill/non-causal-k-256")
P_KV_HIDDEN = P(_KV_HIDDEN, "sdpa-prefill/k-hd-128", "sdpa-prefill/ok")
P_GQA = P(_GQA, "sdpa-prefill/9q-2kv", "sdpa-prefill/2q-4kv", "sdpa-prefill/9q-3kv")
P_Q_CHUNK = P(_Q_CHUNK, "sdpa-prefill/q-chunk-48", "sdpa-prefill/ok")
P_K_CHUNK = P(_K_CHUNK, "sdpa-prefill/k-chunk-0", "sdpa-prefill/ok")
P_PAD_BATCH = P(_PAD_BATCH, unreachable=_TILE_PADS)
P_PAD_HEADS = P(_PAD_HEADS, unreachable=_TILE_PADS)
P_PAD_HEAD_DIM = P(_PAD_HEAD_DIM, "sdpa-prefill/hd-48", "sdpa-prefill/ok")
P_GRID = P(_GRID, "sdpa-prefill/grid-9x9", "sdpa-prefill/ok", source=_FACTORY)

# ---------------- chunked_scaled_dot_product_attention ----------------
C = rules("transformer.chunked_scaled_dot_product_attention", _SRC)
# The binding takes scale as a C++ float without conversion: a Python float an fp32 does not hold exactly (or an
# int) matches no signature (TypeError); round it first (tt_models.layouts.fp32_representable).
C_SCALE = C("{}(): incompatible function arguments. Called with: {}", "sdpa-chunked/scale-0.1", "sdpa-chunked/ok",
            source=_BINDING)
C_START = C("chunk_start_idx (int) is required for legacy chunked SDPA. For flexible path use "
            "chunk_start_idx_tensor=...", "sdpa-chunked/no-start", "sdpa-chunked/start-tensor", source=_BINDING)
C_HOST = C(_HOST, "sdpa-chunked/page-table-host", "sdpa-chunked/ok", source=_LAUNCH)
C_ON_DEVICE = C(_ON_DEVICE, unreachable=_HOST_Q)
C_TILIZED = C(_TILIZED, "sdpa-chunked/cache-row-major", "sdpa-chunked/ok")
C_DTYPE = C(_DTYPE, "sdpa-chunked/q-fp32", "sdpa-chunked/block-32-q-bfp8")
C_INTERLEAVED = C(_INTERLEAVED, "sdpa-chunked/cache-height-sharded", "sdpa-chunked/ok")
C_ONE_START = C("chunked mode accepts only one of chunk_start_idx (scalar) or chunk_start_idx_tensor; both were "
                "provided", unreachable="given both, the binding passes on only the tensor (measured: "
                                        "sdpa-chunked/start-scalar-and-tensor is accepted)")
C_START_NONNEG = C("chunk_start_idx must be non-negative", "sdpa-chunked/start-negative", "sdpa-chunked/ok")
C_START_TENSOR_DEVICE = C("chunk_start_idx tensor must be on device",
                          unreachable="a host tensor fails the launch's device-tensor check first")
C_START_TENSOR_INT32 = C("chunk_start_idx tensor must be int32. Got {}", "sdpa-chunked/start-tensor-uint32",
                         "sdpa-chunked/start-tensor")
C_START_TENSOR_SHAPE = C("chunk_start_idx tensor must have shape [1]. Got {}", "sdpa-chunked/start-tensor-2",
                         "sdpa-chunked/start-tensor")
C_PT_DEVICE = C("Page table tensor must be on device",
                unreachable="a host page table fails the launch's device-tensor check first")
C_PT_ROW_MAJOR = C("Page table must be row major", "sdpa-chunked/page-table-tile", "sdpa-chunked/ok")
C_PT_INT32 = C("Page table must be int32", "sdpa-chunked/page-table-uint32", "sdpa-chunked/ok")
C_NO_MASK = C("Attention mask should not be provided in chunked mode - masking is handled internally",
              unreachable="the Python API has no attn_mask argument")
C_PAGE_SIZE = C("K page size must match V page size. Got K: {}, V: {}", "sdpa-chunked/v-block-32",
                "sdpa-chunked/ok")
C_PT_BATCH = C("Page table batch size must match input batch size. Got Page table: {}, Input: {}",
               "sdpa-chunked/page-table-2-rows", "sdpa-chunked/mqa-batch-2-window")
C_KV_HEADS = C(_KV_HEADS, "sdpa-chunked/v-heads-4", "sdpa-chunked/ok")
C_KV_HIDDEN = C(_KV_HIDDEN, "sdpa-chunked/cache-hd-128", "sdpa-chunked/ok")
C_GQA = C(_GQA, "sdpa-chunked/6q-4kv", "sdpa-chunked/ok")
C_Q_CHUNK = C(_Q_CHUNK, "sdpa-chunked/q-chunk-48", "sdpa-chunked/ok")
C_K_CHUNK = C(_K_CHUNK, "sdpa-chunked/k-chunk-0", "sdpa-chunked/ok")
C_START_Q_CHUNK = C("chunk_start_idx must be a multiple of q_chunk_size. Got chunk_start_idx: {}, q_chunk_size: {}",
                    "sdpa-chunked/start-32-q-chunk-64", "sdpa-chunked/start-32-chunks-32")
C_START_K_CHUNK = C("chunk_start_idx must be a multiple of k_chunk_size. Got chunk_start_idx: {}, k_chunk_size: {}",
                    "sdpa-chunked/start-32-k-chunk-64", "sdpa-chunked/start-32-chunks-32")
C_PAGES = C("K's sequence length must be >= Q's sequence length + chunk_start_idx. Got K: {}, Q: {}, "
            "chunk_start_idx: {}", "sdpa-chunked/pages-short", "sdpa-chunked/sink/l1-pages-short",
            "sdpa-chunked/pages-exact")
C_PAGES_TENSOR = C("K's sequence length must be >= Q's sequence length. Got K: {}, Q: {}",
                   "sdpa-chunked/start-tensor-pages-short", "sdpa-chunked/start-tensor")
# The attention sink (GPT-OSS): the unchunked op's rules, checked after the chunked-mode rules and before the
# padding (sdpa-chunked/sink/l1-pages-short, sdpa-chunked/sink/l1-hd-48 show the order).
C_SINK_TILE = C("Attention sink must be tilized", "sdpa-chunked/sink/row-major", "sdpa-chunked/sink/ok")
C_SINK_DTYPE = C("Attention sink must be in BF16, BFP8, or BFP4 dataformat", "sdpa-chunked/sink/fp32",
                 "sdpa-chunked/sink/bfp8")
C_SINK_DRAM = C("Attention sink must be in DRAM", "sdpa-chunked/sink/l1", "sdpa-chunked/sink/l1-hd-48",
                "sdpa-chunked/sink/ok")
C_SINK_BATCH = C("Attention sink batch dimension must be 1. Got {}", "sdpa-chunked/sink/batch-2",
                 "sdpa-chunked/sink/2d", "sdpa-chunked/sink/ok")
C_SINK_HEADS = C("Attention sink num_heads must match Q num_heads. Got sink: {}, Q: {}",
                 "sdpa-chunked/sink/kv-heads", "sdpa-chunked/sink/ok")
C_SINK_SEQ = C("Attention sink sequence dimension must be 1. Got {}", "sdpa-chunked/sink/seq-32",
               "sdpa-chunked/sink/ok")
C_SINK_HIDDEN = C("Attention sink hidden dimension must be 1. Got {}", "sdpa-chunked/sink/width-32",
                  "sdpa-chunked/sink/ok")
C_PAD_BATCH = C(_PAD_BATCH, unreachable=_TILE_PADS)
C_PAD_HEADS = C(_PAD_HEADS, unreachable=_TILE_PADS)
C_PAD_HEAD_DIM = C(_PAD_HEAD_DIM, "sdpa-chunked/hd-48", "sdpa-chunked/ok")
# The program reads page-table rows into a circular buffer in 32-byte units: a tensor start reads whole rows
# (pages * 4 bytes), a scalar start the buffer's pages (a row rounded up to its buffer's alignment: 32 B in DRAM,
# 16 B in L1).
C_PT_STICK = C("page table stick size must be a multiple of 32", "sdpa-chunked/start-tensor-page-table-4",
               "sdpa-chunked/start-tensor", source=_FACTORY)
C_PT_PAGE = C("page table page size in bytes must be a multiple of 32 due to address alignment",
              "sdpa-chunked/page-table-l1-4", "sdpa-chunked/page-table-l1-8", source=_FACTORY)
C_GRID = C(_GRID, "sdpa-chunked/grid-9x9", "sdpa-chunked/ok", source=_FACTORY)


class IncompatibleArguments(TTError, TypeError):
    """An argument no signature of the binding takes: nanobind raises TypeError before the op runs."""


def _check_inputs(host: Rule, tilized: Rule, dtype: Rule, interleaved: Rule, q: Tensor, k: Tensor, v: Tensor,
                  *others: Tensor | None) -> None:
    """The launch refuses host tensors; then each of Q, K, V in turn is tiled, bf16/bfp8/bfp4 and interleaved."""
    for t in (q, k, v, *others):
        host.require(t is None or not isinstance(t, Tensor) or t.device_or_none is not None)
    require_device(host.op, q, k, v, *others)  # deallocated inputs, inputs on several devices
    for t in (q, k, v):
        tilized.require(t.layout == Layout.TILE)
        dtype.require(t.dtype in _DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
        interleaved.require(not t.is_sharded())


def _check_heads(gqa: Rule, nqh: int, nkv: int) -> None:
    gqa.require(0 < nkv <= nqh and nqh % nkv == 0, nqh, nkv)


def _check_chunks(q_chunk: Rule, k_chunk: Rule, program_config: Any) -> None:
    if program_config is not None:
        qc, kc = program_config.q_chunk_size, program_config.k_chunk_size
        q_chunk.require(qc > 0 and qc % TILE_SIZE == 0, qc, TILE_SIZE)
        k_chunk.require(kc > 0 and kc % TILE_SIZE == 0, kc, TILE_SIZE)


def _check_padding(pad_head_dim: Rule, *tensors: Tensor) -> None:
    # Only the sequence may be padded; a head_dim that is not a tile multiple is.
    for t in tensors:
        pad_head_dim.require(t.padded_shape[3] == t.shape[3])


def _check_sink(tile: Rule, dtype: Rule, dram: Rule, batch: Rule, heads: Rule, seq: Rule, hidden: Rule,
                sink: Tensor, nqh: int) -> None:
    """The attention sink: [1, nqh, 1, 1] (its logical dims 0..3 as given), tiled bf16/bfp8/bfp4 in DRAM."""
    tile.require(sink.layout == Layout.TILE)
    dtype.require(sink.dtype in _DTYPES or reference_precision(sink))
    dram.require(sink.memory_config().buffer_type == BufferType.DRAM)
    ss = tuple(sink.shape)
    batch.require(ss[0] == 1, ss[0])
    heads.require(len(ss) < 2 or ss[1] == nqh, ss[1] if len(ss) > 1 else None, nqh)
    seq.require(len(ss) < 3 or ss[2] == 1, ss[2] if len(ss) > 2 else None)
    hidden.require(len(ss) < 4 or ss[3] == 1, ss[3] if len(ss) > 3 else None)


def _check_grid(grid: Rule, program_config: Any, q: Tensor) -> None:
    if program_config is not None:
        g = program_config.compute_with_storage_grid_size
        gx, gy = q.device_or_none.chip.grid
        grid.require(g.x * g.y <= gx * gy, g.x * g.y, gx * gy)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_pos: torch.Tensor, k_valid_upto: torch.Tensor | None,
           scale: float, causal: bool, window: int | None, mask: torch.Tensor | None = None,
           sink: torch.Tensor | None = None) -> torch.Tensor:
    """Attention in fp32 with explicit positions. q [b, nqh, s, d]; k [b, nkv, t, d]; v [b, nkv, t, dv]; q_pos
    [b, s] absolute positions of the queries; key j sits at position j. sink [nqh]: one more logit per head (already
    scaled) that joins the softmax denominator and has no value row."""
    b, nqh, s, d = q.shape
    nkv, t = k.shape[1], k.shape[2]
    g = nqh // nkv
    if mask is None and sink is None:
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
        # The mask's heads are 1 (broadcast) or all nqh query heads, grouped here by the kv head they share.
        per_head = mask.shape[1] != 1
        mask_b = b if mask.shape[0] == b else 1
        scores = scores + f32(mask).reshape(mask_b, nkv if per_head else 1, g if per_head else 1, s, t)
    if sink is not None:
        sinks = f32(sink).reshape(1, nkv, g, 1, 1).expand(b, nkv, g, s, 1)
        probs = torch.softmax(torch.cat([scores, sinks], dim=-1), dim=-1)[..., :t].nan_to_num(0.0)
    else:
        probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # fully masked rows attend to nothing
    out = torch.matmul(probs.reshape(b, nkv, g * s, t), f32(v))
    return out.reshape(b, nqh, s, v.shape[-1])


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
    q, k, v, mask = input_tensor_q, input_tensor_k, input_tensor_v, attn_mask
    if mask is not None and isinstance(mask, Tensor):
        P_MASK_HOST.require(mask.device_or_none is not None, "StorageType::HOST")
    sink = attention_sink
    _check_inputs(P_HOST, P_TILIZED, P_DTYPE, P_INTERLEAVED, q, k, v, mask, sink)
    refuse_options(op, cu_window_seqlens=cu_window_seqlens,
                   windowed_q_token_offset=windowed_q_token_offset,
                   windowed_q_token_offset_tensor=windowed_q_token_offset_tensor,
                   output_concat_heads=output_concat_heads, attn_mask_block_map=attn_mask_block_map)
    has_mask = mask is not None
    P_CAUSAL_MASK.require(not (is_causal and has_mask), str(bool(is_causal)).lower(), str(has_mask).lower())
    window = sliding_window_size or 0
    P_WINDOW_MASK.require(not (window > 0 and has_mask), window, str(has_mask).lower())
    b, nqh, s, d = q.shape
    nkv, sk = k.shape[1], k.shape[2]
    if mask is not None:
        P_MASK_TILIZED.require(mask.layout == Layout.TILE)
        P_MASK_DTYPE.require(mask.dtype in _DTYPES or reference_precision(mask))
        P_MASK_DRAM.require(mask.memory_config().buffer_type == BufferType.DRAM)
        P_MASK_BATCH.require(mask.shape[0] in (1, b))
        P_MASK_HEADS.require(mask.shape[1] in (1, nqh))
        P_MASK_Q_LEN.require(mask.shape[2] == s)
        P_MASK_K_LEN.require(mask.shape[3] == sk)
    if sink is not None:
        _check_sink(P_SINK_TILE, P_SINK_DTYPE, P_SINK_DRAM, P_SINK_BATCH, P_SINK_HEADS, P_SINK_SEQ, P_SINK_HIDDEN,
                    sink, nqh)
    if is_causal:
        P_CAUSAL_SEQ.require(s == sk, s, sk)
    P_KV_BATCH.require(k.shape[0] == b and v.shape[0] == b, k.shape[0], v.shape[0])
    P_KV_HEADS.require(v.shape[1] == nkv, nkv, v.shape[1])
    P_KV_SEQ.require(v.shape[2] == sk, sk, v.shape[2])
    P_KV_HIDDEN.require(k.shape[3] == d and v.shape[3] == d, k.shape[3], v.shape[3])
    _check_heads(P_GQA, nqh, nkv)
    _check_chunks(P_Q_CHUNK, P_K_CHUNK, program_config)
    _check_padding(P_PAD_HEAD_DIM, q, k, v)
    _check_grid(P_GRID, program_config, q)
    dev = q.device_or_none
    sdpa_cb.check(op, dev, sdpa_cb.prefill_bytes(q, k, d, program_config=program_config, kernel=compute_kernel_config,
                                                 grid=sdpa_cb.grid_of(program_config, dev), causal=is_causal,
                                                 page_table_cols=None, mask=mask, v=v))
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    qpos = torch.arange(s).expand(b, s)

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, m: Any, sk_: Any) -> torch.Tensor:
        # The sink joins each head's softmax as logit scale * sink[0, h, 0, 0], as the kernel scales it.
        sinks = None if sk_ is None else f32(sk_).reshape(-1)[:nqh] * sc
        return attend(qq, kk, vv, qpos, None, sc, is_causal, sliding_window_size, m, sinks)

    return output(q, per_device(compute, q, k, v, mask, sink), q.dtype, Layout.TILE,
                  memory_config or DRAM_MEMORY_CONFIG)


def _binds_as_float(x: Any) -> bool:
    """Whether nanobind passes x to a C++ float without conversion: a Python float that survives the round trip
    through fp32 (NaN included), or None for an optional."""
    if x is None:
        return True
    if not isinstance(x, float) or isinstance(x, bool):
        return False
    if x != x:
        return True
    try:
        return struct.unpack("f", struct.pack("f", x))[0] == x
    except OverflowError:
        return False


def _page_table_row_bytes(pt: Tensor) -> int:
    """The bytes of one page-table page (row) in its buffer: the row rounded up to the buffer type's alignment."""
    chip = pt.device_or_none.chip
    align = chip.dram_alignment if pt.memory_config().buffer_type == BufferType.DRAM else chip.l1_alignment
    return round_up(page_bytes(pt.dtype, pt.layout, pt.shape[-1]), align)


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
    paged cache (which must already hold this chunk's keys and values). attention_sink [1, nqh, 1, 1]: as in
    scaled_dot_product_attention, scale * sink joins each head's softmax denominator (0.81.1's kernel adds it to
    the running max and sum after the last K chunk, chunked or not)."""
    op = "transformer.chunked_scaled_dot_product_attention"
    q, kc, vc, pt, start_t = input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, chunk_start_idx_tensor
    sink = attention_sink
    if not _binds_as_float(scale):
        raise IncompatibleArguments(op, C_SCALE.message.format(
            f"ttnn.{op}", f"chunked_scaled_dot_product_attention(..., scale={scale!r})"))
    C_START.require(chunk_start_idx is not None or start_t is not None)
    # Given both, the binding passes on the tensor.
    legacy = start_t is None
    _check_inputs(C_HOST, C_TILIZED, C_DTYPE, C_INTERLEAVED, q, kc, vc, pt, start_t, sink)
    refuse_options(op, paged_cache_geometry=paged_cache_geometry)
    if legacy:
        C_START_NONNEG.require(chunk_start_idx >= 0)
    else:
        C_START_TENSOR_INT32.require(start_t.dtype == DataType.INT32, f"DataType::{start_t.dtype.name}")
        C_START_TENSOR_SHAPE.require(tuple(start_t.shape) == (1,), f"Shape({list(start_t.shape)})")
    C_PT_ROW_MAJOR.require(pt.layout == Layout.ROW_MAJOR)
    C_PT_INT32.require(pt.dtype == DataType.INT32)
    b, nqh, s, d = q.shape
    nkv, bs = kc.shape[1], kc.shape[2]
    C_PAGE_SIZE.require(vc.shape[2] == bs, bs, vc.shape[2])
    C_PT_BATCH.require(pt.shape[0] == b, pt.shape[0], b)
    C_KV_HEADS.require(vc.shape[1] == nkv, nkv, vc.shape[1])
    C_KV_HIDDEN.require(kc.shape[3] == d and vc.shape[3] == d, kc.shape[3], vc.shape[3])
    _check_heads(C_GQA, nqh, nkv)
    _check_chunks(C_Q_CHUNK, C_K_CHUNK, program_config)
    if legacy and program_config is not None:
        qch, kch = program_config.q_chunk_size, program_config.k_chunk_size
        C_START_Q_CHUNK.require(chunk_start_idx % qch == 0, chunk_start_idx, qch)
        C_START_K_CHUNK.require(chunk_start_idx % kch == 0, chunk_start_idx, kch)
    kv_len = pt.shape[1] * bs
    if legacy:
        C_PAGES.require(kv_len >= s + chunk_start_idx, kv_len, s, chunk_start_idx)
    else:
        C_PAGES_TENSOR.require(kv_len >= s, kv_len, s)
    if sink is not None:
        _check_sink(C_SINK_TILE, C_SINK_DTYPE, C_SINK_DRAM, C_SINK_BATCH, C_SINK_HEADS, C_SINK_SEQ, C_SINK_HIDDEN,
                    sink, nqh)
    _check_padding(C_PAD_HEAD_DIM, q, kc, vc)
    if legacy:
        C_PT_PAGE.require(_page_table_row_bytes(pt) % 32 == 0)
    else:
        C_PT_STICK.require(pt.shape[1] * 4 % 32 == 0)
    _check_grid(C_GRID, program_config, q)
    dev = q.device_or_none
    grid = sdpa_cb.grid_of(program_config, dev)
    sdpa_cb.check(op, dev, sdpa_cb.prefill_bytes(q, kc, d, program_config=program_config,
                                                 kernel=compute_kernel_config, grid=grid, causal=True,
                                                 page_table_cols=pt.shape[1], mask=None, v=vc))
    if not legacy:
        # The device reads the start at run time; here it is read once per call.
        chunk_start_idx = int(start_t.shard(0).reshape(-1)[0])
        if chunk_start_idx + s > kv_len:  # nothing checks it: the device would read past the user's pages
            raise TTError(op, f"chunk_start_idx_tensor holds {chunk_start_idx}: the chunk ends past the "
                              f"{kv_len} positions the page table maps")
    end = chunk_start_idx + s
    nblocks = -(-end // bs)
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    qpos = (torch.arange(s) + chunk_start_idx).expand(b, s)

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, table: torch.Tensor,
                sk_: Any) -> torch.Tensor:
        blocks = table[:, :nblocks]
        check_blocks(op, blocks, kk.shape[0])
        keys = gather_pages(kk, blocks)[:, :, :end]
        vals = gather_pages(vv, blocks)[:, :, :end]
        sinks = None if sk_ is None else f32(sk_).reshape(-1)[:nqh] * sc
        return attend(qq, keys, vals, qpos, None, sc, True, sliding_window_size, None, sinks)

    return output(q, per_device(compute, q, kc, vc, pt, sink), q.dtype, Layout.TILE,
                  memory_config or DRAM_MEMORY_CONFIG)
