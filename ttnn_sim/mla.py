"""Multi-latent attention (DeepSeek's MLA): transformer.flash_mla_prefill, transformer.chunked_flash_mla_prefill and
transformer.paged_flash_multi_latent_attention_decode.

MLA caches one row per position: the compressed KV (kv_lora_rank wide) followed by the rotary part of the key, a
single KV head. With the key up-projection absorbed into the query, every query head attends over those rows as
keys, and the values are the same rows' first head_dim_v columns: the ops take K only (the decode op also takes an
explicit V of width head_dim_v). Each op is its non-MLA twin's device operation with use_mla set (0.81.1:
sdpa_device_operation.cpp, sdpa_decode_device_operation.cpp), so most rules are the twin's; the MLA ones replace the
K/V shape checks. Measured on the real ttnn 0.81.1 on a mock N150 (corpus cases mla-*, tt_checks/cases_mla.py):

- The kernels count V's width in whole tiles: columns of a head_dim_v that is not a tile multiple are never written
  (NaN here). Prefill accepts a K narrower than Q, and chunked prefill a head_dim_v wider than K or a Q of another
  head dim than the cache: the kernels then read rows at the wrong stride, so the whole output is undefined (NaN).
- head_dim_v 0 kills the process (SIGFPE in the decode program factory); refused here.
- flash_mla_prefill adds attn_mask to the raw scores before the scale (the non-MLA op pre-scales the mask by 1/scale
  on the host; this one does not).
- Default scale: 1 / sqrt(Q's head dim).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from . import attention as A
from . import sdpa_cb
from . import sdpa_decode as D
from .compute import output, per_device, reference_precision
from .errors import TTError
from .memory import DRAM_MEMORY_CONFIG, BufferType, MemoryConfig
from .paged import check_blocks, gather_pages
from .program_configs import SDPAProgramConfig
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

_DEC_SRC = "transformer/sdpa_decode/device/sdpa_decode_device_operation.cpp"
_DEC_HOST = "transformer/sdpa_decode/sdpa_decode.cpp"
_DEC_FACTORY = "transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp"
_HV_ALWAYS = "the binding requires head_dim_v as an int"
_HV_Q = "Head dimension of V must be less than or equal to head dim of Q, got {} and {}"

# ---------------- paged_flash_multi_latent_attention_decode ----------------
_D = "mla-decode/"
M = rules("transformer.paged_flash_multi_latent_attention_decode", _DEC_SRC)
M_K_CHUNK_POW2 = M(D.K_CHUNK_POW2.message, _D + "k-chunk-48", _D + "program-config", source=_DEC_HOST)
M_K_CHUNK_32 = M(D.K_CHUNK_32.message, _D + "k-chunk-16", _D + "program-config", source=_DEC_HOST)
M_V_WIDTH_HOST = M("Head dimension of the V tensor must be equal to head_dim_v parameter value, got {} and {}",
                   _D + "with-v-576", _D + "with-v", source=_DEC_HOST)
M_HV_GIVEN = M("Must provide head_dim_v for multi-latent attention decode", unreachable=_HV_ALWAYS)
M_CAUSAL = M("Multi-latent attention decode only tested for causal!", _D + "non-causal", _D + "non-causal-chunk",
             _D + "ok")
M_ON_DEVICE = M(D.ON_DEVICE.message, unreachable="as for paged_scaled_dot_product_attention_decode: 0.81.1 "
                                                 "segfaults on a host input before validating it")
M_DTYPE = M(D.DTYPE.message, _D + "q-fp32", _D + "mqa-q-bfp4-k-bfp4")
M_KV_TILE = M(D.KV_TILE.message, _D + "k-row-major", _D + "ok")
M_V_WIDTH = M("Head dimension of V must be equal to head_dim_v, got {} and {}",
              unreachable="the host checks V's width against head_dim_v first")
M_QK_WIDTH = M("Head dimension of Q must be equal to head dim of K, got {} and {}", _D + "q-hd-512", _D + "ok")
M_HV_Q = M(_HV_Q, _D + "hv-640", _D + "hv-576")
M_RM_Q_SHARDED = M(D.RM_Q_SHARDED.message, _D + "q-row-major-dram", _D + "ok")
M_RM_Q_OUTPUT = M(D.RM_Q_OUTPUT.message, _D + "q-row-major-sharded", _D + "q-row-major-32-heads-sharded-output")
M_RM_Q_CB = M(D.RM_Q_CB.message, _D + "q-row-major-sharded-output", _D + "q-row-major-32-heads-sharded-output",
              source="tt_metal/impl/buffers/circular_buffer.cpp")
M_Q_SHARDED_HS = M(D.Q_SHARDED_HS.message, _D + "q-width-sharded", _D + "q-height-sharded")
M_Q_DRAM = M(D.Q_DRAM.message, _D + "q-l1", _D + "ok")
M_KV_DRAM = M(D.KV_DRAM.message, _D + "k-l1", _D + "ok")
M_OUT_HS = M(D.OUT_HS.message, _D + "out-width-sharded", _D + "out-height-sharded")
M_CAUSAL_NO_MASK = M(D.CAUSAL_NO_MASK.message, _D + "causal-with-mask", _D + "ok")
M_CUR_POS_LAST_DIM = M(D.CUR_POS_LAST_DIM.message, _D + "cur-pos-tile", _D + "cur-pos-1xB")
M_CUR_POS_NEEDED = M(D.CUR_POS_NEEDED.message, _D + "no-cur-pos", _D + "ok")
M_CUR_POS_INT32 = M(D.CUR_POS_INT32.message, _D + "cur-pos-uint32", _D + "ok")
M_CUR_POS_RM = M(D.CUR_POS_RM.message, unreachable=D.CUR_POS_RM.unreachable)
M_CUR_POS_BATCH = M(D.CUR_POS_BATCH.message, _D + "cur-pos-16", _D + "ok")
M_PT_INT32 = M(D.PT_INT32.message, _D + "page-table-uint32", _D + "ok")
M_PT_RM = M(D.PT_RM.message, _D + "page-table-tile", _D + "ok")
M_SAME_BLOCK = M(D.SAME_BLOCK.message, unreachable="V, when given, is checked to be K's block size by the same "
                                                   "rule as the non-MLA op; an explicit V is not modelled further")
M_SAME_HEADS = M(D.SAME_HEADS.message, _D + "with-v-2-heads", _D + "with-v")
M_GQA_NO_SHARDED_OUT = M(D.GQA_NO_SHARDED_OUT.message, _D + "gqa-sharded-output", _D + "out-height-sharded")
M_GQA_BF16_Q = M(D.GQA_BF16_Q.message, _D + "gqa-q-bfp8", _D + "two-kv-heads")
M_GQA_MULTIPLE = M(D.GQA_MULTIPLE.message, _D + "9q-2kv", _D + "two-kv-heads")
M_SINK_RANK = M(D.SINK_RANK.message, _D + "sink-4d", _D + "sink")
M_SINK_HEADS = M(D.SINK_HEADS.message, _D + "sink-heads-64", _D + "sink")
M_SINK_WIDTH = M(D.SINK_WIDTH.message, _D + "sink-width-64", _D + "sink")
M_SINK_BF16 = M(D.SINK_BF16.message, _D + "sink-bfp8", _D + "sink")
M_SINK_TILE = M(D.SINK_TILE.message, _D + "sink-row-major", _D + "sink")
M_SINK_DRAM = M(D.SINK_DRAM.message, _D + "sink-l1", _D + "sink")
M_GRID_FITS = M(D.GRID_FITS.message, _D + "grid-9x9", _D + "program-config", source=_DEC_FACTORY)
M_GRID_BATCH = M(D.GRID_BATCH.message, _D + "grid-4x4", _D + "program-config", source=_DEC_FACTORY)


_MLA_DECODE = D.DecodeRules(M_RM_Q_SHARDED, M_RM_Q_OUTPUT, M_RM_Q_CB, M_Q_SHARDED_HS, M_Q_DRAM, M_KV_DRAM, M_OUT_HS,
                            M_CUR_POS_NEEDED, M_CUR_POS_INT32, M_CUR_POS_LAST_DIM, M_CUR_POS_RM,
                            M_PT_INT32, M_PT_RM, M_GQA_NO_SHARDED_OUT, M_GQA_BF16_Q, M_GQA_MULTIPLE, M_SINK_RANK,
                            M_SINK_HEADS, M_SINK_WIDTH, M_SINK_BF16, M_SINK_TILE, M_SINK_DRAM, M_GRID_FITS,
                            M_GRID_BATCH)


def _validate_decode(q: Tensor, kc: Tensor, vc: Tensor | None, hv: int, pt: Tensor, cur_pos: Tensor | None,
                     attn_mask: Tensor | None, sink: Tensor | None, is_causal: bool, out_mc: MemoryConfig,
                     program_config: Any) -> int:
    op = M.op
    # The host checks the chunk size and V's width before the device operation validates anything.
    if program_config is not None and program_config.k_chunk_size:
        k = program_config.k_chunk_size
        M_K_CHUNK_POW2.require(k & (k - 1) == 0, k)
        M_K_CHUNK_32.require(k % TILE_SIZE == 0, k)
    if vc is not None:
        M_V_WIDTH_HOST.require(vc.shape[-1] == hv, vc.shape[-1], hv)
    if hv <= 0:
        raise TTError(op, f"head_dim_v {hv}: 0.81.1's program factory divides by it (the process dies of SIGFPE, "
                          "measured)")
    M_CAUSAL.require(is_causal)
    for t in (q, kc, vc, pt, cur_pos, attn_mask, sink):
        M_ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    for t in (q, kc, vc):
        if t is not None:
            M_DTYPE.require(t.dtype in D._DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
    M_KV_TILE.require(kc.layout == Layout.TILE and (vc is None or vc.layout == Layout.TILE))
    q_padded, k_padded = D._padded(q), D._padded(kc)
    M_QK_WIDTH.require(q_padded[3] == k_padded[3], q_padded[3], k_padded[3])
    M_HV_Q.require(hv <= q_padded[3], hv, q_padded[3])
    check = _MLA_DECODE
    D.check_placement(check, q, (kc, vc), out_mc)
    M_CAUSAL_NO_MASK.require(attn_mask is None)
    users = pt.shape[0]
    padded = D.check_cur_pos(check, cur_pos)
    if not cur_pos.is_sharded():
        M_CUR_POS_BATCH.require(padded[-1] == users, padded[-1], users)
    D.check_page_table(check, pt)
    nkv = kc.shape[1]
    if vc is not None:
        M_SAME_BLOCK.require(vc.shape[2] == kc.shape[2])
        M_SAME_HEADS.require(nkv == vc.shape[1], nkv, vc.shape[1])
    D.check_gqa(check, q, nkv, out_mc)
    D.check_sink(check, sink, q_padded)
    D.check_grid(check, program_config, q, users)
    return users


@device_op(kernel_replay=True)
def paged_flash_multi_latent_attention_decode(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    input_tensor_v: Tensor | None = None,
    head_dim_v: int | None = None,
    page_table_tensor: Tensor | None = None,
    *,
    is_causal: bool = True,
    attn_mask: Tensor | None = None,
    cur_pos_tensor: Tensor | None = None,
    attention_sink: Tensor | None = None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    memory_config: MemoryConfig | None = None,
    program_config: SDPAProgramConfig | None = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    """Q [1, B, nh, dh] over the paged latent cache [blocks, nkv, block_size, dh]: user b attends over its positions
    0..cur_pos[b] (a user at -1 gets undefined rows), the values being each row's first head_dim_v columns (or V
    when given). Returns [1, B, nh, head_dim_v]."""
    op = M.op
    if head_dim_v is None or page_table_tensor is None:
        raise TypeError(f"ttnn.{op}(): incompatible function arguments (head_dim_v and page_table_tensor are "
                        "required)")
    q, kc, vc, pt = input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor
    out_mc = memory_config or DRAM_MEMORY_CONFIG
    users = _validate_decode(q, kc, vc, head_dim_v, pt, cur_pos_tensor, attn_mask, attention_sink, is_causal, out_mc,
                             program_config)
    dev = q.device_or_none
    sdpa_cb.check(op, dev, sdpa_cb.decode_bytes(
        q, kc, vc, head_dim_v, users, paged=True, mla=True, program_config=program_config,
        kernel=compute_kernel_config, grid=sdpa_cb.grid_of(program_config, dev), causal=True, pages=pt.shape[1],
        out_sharded=out_mc.is_sharded(), window=sliding_window_size, sink=attention_sink is not None))
    return D.paged_decode(op, q, kc, vc, head_dim_v, pt, cur_pos_tensor, None, attention_sink, users, True, scale,
                          sliding_window_size, out_mc)


# ---------------- flash_multi_latent_attention_decode (unpaged) ----------------
# The unpaged op is the paged one's device operation without a page table: the unpaged decode's checks (K/V batch,
# a cur_pos list or tensor, host-chosen K chunk) with MLA's widths. No model calls it (their caches are paged);
# tt-metal's MLA decode unit tests run half their cases through it. Measured: corpus cases mla-decode-unpaged/*.
_UD = "mla-decode-unpaged/"
_UNPAGED_NA = "the unpaged op takes no page table"
MU = rules("transformer.flash_multi_latent_attention_decode", _DEC_SRC)
MU_K_CHUNK_POW2 = MU(D.K_CHUNK_POW2.message, _UD + "k-chunk-48", _UD + "ok", source=_DEC_HOST)
MU_K_CHUNK_32 = MU(D.K_CHUNK_32.message, _UD + "k-chunk-16", _UD + "ok", source=_DEC_HOST)
MU_CHUNK_CALC = MU(D.U_CHUNK_CALC.message, _UD + "seq-100", _UD + "seq-96", source=_DEC_HOST)
MU_V_WIDTH_HOST = MU(M_V_WIDTH_HOST.message, _UD + "with-v-576", _UD + "with-v", source=_DEC_HOST)
MU_HV_GIVEN = MU(M_HV_GIVEN.message, unreachable=_HV_ALWAYS)
MU_HOST = MU(A._HOST, _UD + "k-host", _UD + "ok", source=A._LAUNCH)
MU_ON_DEVICE = MU(D.ON_DEVICE.message, unreachable=A._HOST_Q)
MU_CAUSAL = MU(M_CAUSAL.message, _UD + "non-causal", _UD + "non-causal-mask", _UD + "ok")
MU_DTYPE = MU(D.DTYPE.message, _UD + "q-fp32", _UD + "k-bfp4")
MU_KV_TILE = MU(D.KV_TILE.message, _UD + "k-row-major", _UD + "ok")
MU_RM_Q_SHARDED = MU(D.RM_Q_SHARDED.message, _UD + "q-row-major-dram", _UD + "q-row-major-32-heads-sharded-output")
MU_RM_Q_OUTPUT = MU(D.RM_Q_OUTPUT.message, _UD + "q-row-major-sharded", _UD + "q-row-major-32-heads-sharded-output")
MU_RM_Q_CB = MU(D.RM_Q_CB.message, _UD + "q-row-major-sharded-output", _UD + "q-row-major-32-heads-sharded-output",
                source="tt_metal/impl/buffers/circular_buffer.cpp")
MU_Q_SHARDED_HS = MU(D.Q_SHARDED_HS.message, _UD + "q-width-sharded", _UD + "q-height-sharded")
MU_Q_DRAM = MU(D.Q_DRAM.message, _UD + "q-l1", _UD + "ok")
MU_KV_DRAM = MU(D.KV_DRAM.message, _UD + "k-l1", _UD + "ok")
MU_OUT_HS = MU(D.OUT_HS.message, _UD + "out-width-sharded", _UD + "q-height-sharded-out-sharded")
MU_CAUSAL_NO_MASK = MU(D.CAUSAL_NO_MASK.message, _UD + "causal-with-mask", _UD + "ok")
MU_CUR_POS_LAST_DIM = MU(D.CUR_POS_LAST_DIM.message, _UD + "cur-pos-2-rows", _UD + "cur-pos-tile",
                         _UD + "cur-pos-1xB")
MU_K_BATCH = MU(D.U_K_BATCH.message, _UD + "k-batch-4", _UD + "ok")
MU_V_BATCH = MU(D.U_V_BATCH.message, _UD + "with-v-batch-4", _UD + "with-v")
MU_Q_DIM0 = MU(D.U_Q_DIM0.message, _UD + "q-dim0-2", _UD + "ok")
MU_SAME_SEQ = MU(D.U_SAME_SEQ.message, _UD + "with-v-seq-512", _UD + "with-v")
MU_SEQ_CHUNK = MU(D.U_SEQ_CHUNK.message, _UD + "k-chunk-2048", _UD + "seq-96-chunk-128", _UD + "ok")
MU_QK_WIDTH = MU(M_QK_WIDTH.message, _UD + "q-hd-512", _UD + "ok")
MU_HV_Q = MU(_HV_Q, _UD + "hv-640", _UD + "hv-576")
MU_CUR_POS_MAX = MU(D.U_CUR_POS_MAX.message, _UD + "cur-pos-S", _UD + "cur-pos-list")
MU_SAME_HEADS = MU(D.SAME_HEADS.message, _UD + "with-v-2-heads", _UD + "with-v")
MU_GQA_NO_SHARDED_OUT = MU(D.GQA_NO_SHARDED_OUT.message, _UD + "gqa-sharded-output", _UD + "two-kv-heads")
MU_GQA_BF16_Q = MU(D.GQA_BF16_Q.message, _UD + "gqa-q-bfp8", _UD + "two-kv-heads")
MU_GQA_MULTIPLE = MU(D.GQA_MULTIPLE.message, _UD + "9q-2kv", _UD + "16q-16kv")
MU_SINK_RANK = MU(D.SINK_RANK.message, _UD + "sink-4d", _UD + "sink")
MU_SINK_HEADS = MU(D.SINK_HEADS.message, _UD + "sink-heads-64", _UD + "sink")
MU_SINK_WIDTH = MU(D.SINK_WIDTH.message, _UD + "sink-width-64", _UD + "sink")
MU_SINK_BF16 = MU(D.SINK_BF16.message, _UD + "sink-bfp8", _UD + "sink")
MU_SINK_TILE = MU(D.SINK_TILE.message, _UD + "sink-row-major", _UD + "sink")
MU_SINK_DRAM = MU(D.SINK_DRAM.message, _UD + "sink-l1", _UD + "sink")
MU_GRID_FITS = MU(D.GRID_FITS.message, _UD + "grid-9x9", _UD + "ok", source=_DEC_FACTORY)
MU_GRID_BATCH = MU(D.GRID_BATCH.message, _UD + "grid-4x1", _UD + "ok", source=_DEC_FACTORY)
MU_CUR_POS_COUNT = MU(D.U_CUR_POS_COUNT.message, _UD + "cur-pos-4", _UD + "ok", source=_DEC_FACTORY)
MU_CUR_POS_LIST = MU(D.U_CUR_POS_LIST.message, _UD + "cur-pos-list-4", _UD + "no-cur-pos", _UD + "cur-pos-list",
                     source=_DEC_FACTORY)

_MLA_UNPAGED = D.DecodeRules(MU_RM_Q_SHARDED, MU_RM_Q_OUTPUT, MU_RM_Q_CB, MU_Q_SHARDED_HS, MU_Q_DRAM, MU_KV_DRAM,
                             MU_OUT_HS, None, None, MU_CUR_POS_LAST_DIM, None, None, None, MU_GQA_NO_SHARDED_OUT,
                             MU_GQA_BF16_Q, MU_GQA_MULTIPLE, MU_SINK_RANK, MU_SINK_HEADS, MU_SINK_WIDTH, MU_SINK_BF16,
                             MU_SINK_TILE, MU_SINK_DRAM, MU_GRID_FITS, MU_GRID_BATCH)


def _validate_unpaged(q: Tensor, k: Tensor, v: Tensor | None, hv: int, cur_pos: list[int],
                      cur_pos_tensor: Tensor | None, attn_mask: Tensor | None, sink: Tensor | None, is_causal: bool,
                      out_mc: MemoryConfig, program_config: Any) -> int:
    """The host's checks, then SdpaDecodeDeviceOperation's unpaged ones with use_mla, in 0.81.1's order; returns
    the K chunk the kernel runs with (the host's choice when the config leaves it 0)."""
    op = MU.op
    s = k.shape[-2]
    if program_config is not None and program_config.k_chunk_size > 0:
        k_chunk = program_config.k_chunk_size
        MU_K_CHUNK_POW2.require(k_chunk & (k_chunk - 1) == 0, k_chunk)
        MU_K_CHUNK_32.require(k_chunk % TILE_SIZE == 0, k_chunk)
    else:
        k_chunk = D.max_pow2_divisor_chunk(s)
        MU_CHUNK_CALC.require(k_chunk % TILE_SIZE == 0, k_chunk)
    if v is not None:
        MU_V_WIDTH_HOST.require(v.shape[-1] == hv, v.shape[-1], hv)
    if hv <= 0:
        raise TTError(op, f"head_dim_v {hv}: 0.81.1's program factory divides by it (the process dies of SIGFPE, "
                          "measured for the paged op)")
    for t in (k, v, cur_pos_tensor, attn_mask, sink):
        MU_HOST.require(t is None or t.device_or_none is not None)
    MU_CAUSAL.require(is_causal)
    for t in (q, k, v):
        if t is not None:
            MU_DTYPE.require(t.dtype in D._DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
    MU_KV_TILE.require(k.layout == Layout.TILE and (v is None or v.layout == Layout.TILE))
    D.check_placement(_MLA_UNPAGED, q, (k, v), out_mc)
    MU_CAUSAL_NO_MASK.require(attn_mask is None)
    if cur_pos_tensor is not None:
        padded = cur_pos_tensor.padded_shape
        MU_CUR_POS_LAST_DIM.require(all(d == 1 for d in padded[:-1]), f"Shape({list(padded)})")
    q_padded, k_padded = D._padded(q), D._padded(k)
    v_padded = D._padded(v) if v is not None else None
    b = q_padded[1]
    MU_K_BATCH.require(k_padded[0] == b, k_padded[0], b)
    if v_padded is not None:
        MU_V_BATCH.require(v_padded[0] == b, v_padded[0], b)
    MU_Q_DIM0.require(q_padded[0] == 1, q_padded[0])
    if v_padded is not None:
        MU_SAME_SEQ.require(k_padded[-2] == v_padded[-2], k_padded[-2], v_padded[-2])
    MU_SEQ_CHUNK.require(k_padded[2] % k_chunk == 0, k_padded[2], k_chunk)
    MU_QK_WIDTH.require(q_padded[3] == k_padded[3], q_padded[3], k_padded[3])
    MU_HV_Q.require(hv <= q_padded[3], hv, q_padded[3])
    for p in cur_pos:
        MU_CUR_POS_MAX.require(p < k_padded[-2])
    nkv = k.shape[1]
    if v is not None:
        MU_SAME_HEADS.require(nkv == v.shape[1], nkv, v.shape[1])
    D.check_gqa(_MLA_UNPAGED, q, nkv, out_mc)
    D.check_sink(_MLA_UNPAGED, sink, q_padded)
    D.check_grid(_MLA_UNPAGED, program_config, q, b)
    D.check_positions(MU_CUR_POS_COUNT, MU_CUR_POS_LIST, cur_pos_tensor, cur_pos, b)
    return k_chunk


@device_op(kernel_replay=True)
def flash_multi_latent_attention_decode(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    input_tensor_v: Tensor | None = None,
    head_dim_v: int | None = None,
    *,
    is_causal: bool = True,
    attn_mask: Tensor | None = None,
    cur_pos: list[int] | None = None,
    cur_pos_tensor: Tensor | None = None,
    attention_sink: Tensor | None = None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    memory_config: MemoryConfig | None = None,
    program_config: SDPAProgramConfig | None = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    """Q [1, B, nh, dh] over the unpaged latent cache [B, nkv, S, dh]: user b attends over its positions
    0..cur_pos[b] (the tensor when given, else the list; -1 in the tensor skips the user), the values being each
    row's first head_dim_v columns (or V when given). Returns [1, B, nh, head_dim_v]."""
    op = MU.op
    if head_dim_v is None:
        raise TypeError(f"ttnn.{op}(): incompatible function arguments (head_dim_v is required)")
    positions = list(cur_pos or [])
    if any(not isinstance(p, int) or p < 0 or p >= 1 << 32 for p in positions):
        raise TypeError(f"ttnn.{op}(): incompatible function arguments (cur_pos must be a list of uint32, got "
                        f"{positions})")
    q, k, v = input_tensor_q, input_tensor_k, input_tensor_v
    out_mc = memory_config or DRAM_MEMORY_CONFIG
    k_chunk = _validate_unpaged(q, k, v, head_dim_v, positions, cur_pos_tensor, attn_mask, attention_sink, is_causal,
                                out_mc, program_config)
    dev = q.device_or_none
    users = D._padded(q)[1]
    sdpa_cb.check(op, dev, sdpa_cb.decode_bytes(
        q, k, v, head_dim_v, users, paged=False, mla=True, program_config=program_config,
        kernel=compute_kernel_config, grid=sdpa_cb.grid_of(program_config, dev), causal=True, pages=0,
        out_sharded=out_mc.is_sharded(), window=sliding_window_size, sink=attention_sink is not None,
        k_chunk=k_chunk, positions_tensor=cur_pos_tensor is not None))
    return D.unpaged_decode(q, k, v, head_dim_v, positions, cur_pos_tensor, None, attention_sink, users, True, scale,
                            sliding_window_size, out_mc)


# ---------------- flash_mla_prefill / chunked_flash_mla_prefill ----------------
_P, _C = "mla-prefill/", "mla-chunked/"
P = rules("transformer.flash_mla_prefill", A._SRC)
P_HOST = P(A._HOST, _P + "k-host", _P + "mask-host", _P + "mask", source=A._LAUNCH)
P_HV_GIVEN = P("Must provide head_dim_v for multi-latent attention decode", unreachable=_HV_ALWAYS)
P_ON_DEVICE = P(A._ON_DEVICE, unreachable=A._HOST_Q)
P_TILIZED = P(A._TILIZED, _P + "k-row-major", _P + "q-row-major", _P + "ok")
P_DTYPE = P(A._DTYPE, _P + "q-fp32", _P + "k-bfp8")
P_INTERLEAVED = P(A._INTERLEAVED, _P + "q-height-sharded", _P + "q-l1")
P_CAUSAL_MASK = P(A.P_CAUSAL_MASK.message, _P + "causal-with-mask", _P + "mask")
P_MASK_TILIZED = P(A.P_MASK_TILIZED.message, _P + "mask-row-major", _P + "mask")
P_MASK_DTYPE = P(A.P_MASK_DTYPE.message, _P + "mask-fp32", _P + "mask-bfp8")
P_MASK_DRAM = P(A.P_MASK_DRAM.message, _P + "mask-l1", _P + "mask")
P_MASK_BATCH = P(A.P_MASK_BATCH.message, _P + "mask-batch-3", _P + "mask")
P_MASK_HEADS = P(A.P_MASK_HEADS.message, _P + "mask-heads-2", _P + "mask-per-head")
P_MASK_Q_LEN = P(A.P_MASK_Q_LEN.message, _P + "mask-q-len-128", _P + "mask")
P_MASK_K_LEN = P(A.P_MASK_K_LEN.message, _P + "mask-k-len-128", _P + "mask")
P_CAUSAL_SEQ = P(A.P_CAUSAL_SEQ.message, _P + "k-seq-128", _P + "non-causal-k-128")
P_HV_Q = P(_HV_Q, _P + "hv-640", _P + "hv-576")
# 0.81.1 prints Q's head dim as the second value (the stored source names K's dimension in the message only).
P_HV_K = P("Head dimension of V must be less than or equal to head dim of K, got {} and {}",
           _P + "k-hd-512-hv-576", _P + "k-hd-512")
P_GQA = P(A._GQA, _P + "9q-2kv", _P + "two-kv-heads")
P_Q_CHUNK = P(A._Q_CHUNK, _P + "q-chunk-48", _P + "ok")
P_K_CHUNK = P(A._K_CHUNK, _P + "k-chunk-0", _P + "k-chunk-96")
P_PAD_BATCH = P(A._PAD_BATCH, unreachable=A._TILE_PADS)
P_PAD_HEADS = P(A._PAD_HEADS, unreachable=A._TILE_PADS)
P_PAD_HEAD_DIM = P(A._PAD_HEAD_DIM, _P + "hd-48", _P + "ok")
P_GRID = P(A._GRID, _P + "grid-9x9", _P + "ok", source=A._FACTORY)

C = rules("transformer.chunked_flash_mla_prefill", A._SRC)
C_HOST = C(A._HOST, _C + "page-table-host", _C + "ok", source=A._LAUNCH)
C_HV_GIVEN = C("Must provide head_dim_v for multi-latent attention decode", unreachable=_HV_ALWAYS)
C_ON_DEVICE = C(A._ON_DEVICE, unreachable=A._HOST_Q)
C_TILIZED = C(A._TILIZED, _C + "cache-row-major", _C + "k-bf16")
C_DTYPE = C(A._DTYPE, _C + "q-fp32", _C + "k-bfp4")
C_INTERLEAVED = C(A._INTERLEAVED, _C + "q-height-sharded", _C + "q-l1")
C_START_NONNEG = C(A.C_START_NONNEG.message, _C + "start-negative", _C + "start-0")
C_PT_ROW_MAJOR = C(A.C_PT_ROW_MAJOR.message, _C + "page-table-tile", _C + "ok")
C_PT_INT32 = C(A.C_PT_INT32.message, _C + "page-table-uint32", _C + "ok")
C_PT_BATCH = C(A.C_PT_BATCH.message, _C + "page-table-2-rows", _C + "batch-2")
C_GQA = C(A._GQA, _C + "6q-4kv", _C + "two-kv-heads")
C_Q_CHUNK = C(A._Q_CHUNK, _C + "q-chunk-48", _C + "ok")
C_K_CHUNK = C(A._K_CHUNK, _C + "k-chunk-0", _C + "ok")
C_START_Q_CHUNK = C(A.C_START_Q_CHUNK.message, _C + "start-32", _C + "start-32-chunks-32")
C_START_K_CHUNK = C(A.C_START_K_CHUNK.message, _C + "start-32-k-chunk-64", _C + "start-32-chunks-32")
C_PAGES = C(A.C_PAGES.message, _C + "start-512", _C + "start-384")
C_PAD_BATCH = C(A._PAD_BATCH, unreachable=A._TILE_PADS)
C_PAD_HEADS = C(A._PAD_HEADS, unreachable=A._TILE_PADS)
C_PAD_HEAD_DIM = C(A._PAD_HEAD_DIM, _C + "hd-48", _C + "ok")
C_PT_PAGE = C(A.C_PT_PAGE.message, _C + "page-table-l1-4", _C + "page-table-l1-8", source=A._FACTORY)
C_GRID = C(A._GRID, _C + "grid-9x9", _C + "ok", source=A._FACTORY)


def _check_qk(host: Any, tilized: Any, dtype: Any, interleaved: Any, q: Tensor, k: Tensor, *others: Any) -> None:
    """The launch refuses host tensors; then Q and K (V is K) are each tiled, bf16/bfp8/bfp4 and interleaved."""
    for t in (q, k, *others):
        host.require(t is None or not isinstance(t, Tensor) or t.device_or_none is not None)
    require_device(host.op, q, k, *others)
    for t in (q, k):
        tilized.require(t.layout == Layout.TILE)
        dtype.require(t.dtype in A._DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
        interleaved.require(not t.is_sharded())


def _values(k: torch.Tensor, hv: int) -> torch.Tensor:
    """The values the kernel reads: the keys' first head_dim_v columns, counted in whole tiles."""
    return k[..., : hv // TILE_SIZE * TILE_SIZE]


def _finish(out: torch.Tensor, hv: int, defined: bool) -> torch.Tensor:
    """out [b, nqh, s, whole tiles of hv] widened to hv; columns past the last whole tile are never written, and
    nothing is defined when the kernel reads at the wrong stride."""
    if not defined:
        return torch.full((*out.shape[:-1], hv), float("nan"))
    if out.shape[-1] < hv:
        out = torch.nn.functional.pad(out, (0, hv - out.shape[-1]), value=float("nan"))
    return out


def _no_v_tensor(op: str, head_dim_v: Any) -> int:
    if isinstance(head_dim_v, Tensor):
        raise TTError(op, "the overload with an explicit V tensor is not modelled; pass head_dim_v")
    if head_dim_v <= 0:
        raise TTError(op, f"head_dim_v {head_dim_v}: V would have no whole tile")
    return head_dim_v


@device_op(kernel_replay=True)
def flash_mla_prefill(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    head_dim_v: int,
    *,
    attn_mask: Tensor | None = None,
    is_causal: bool = True,
    scale: float | None = None,
    memory_config: MemoryConfig | None = None,
    program_config: Any = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    """Q [b, nqh, s, dh] over K [b, nkv, s, dh] (causal, or non-causal with an optional attn_mask added to the raw
    scores before the scale), the values being K's first head_dim_v columns. Returns [b, nqh, s, head_dim_v]."""
    op = P.op
    q, k, mask = input_tensor_q, input_tensor_k, attn_mask
    hv = _no_v_tensor(op, head_dim_v)
    _check_qk(P_HOST, P_TILIZED, P_DTYPE, P_INTERLEAVED, q, k, mask)
    has_mask = mask is not None
    P_CAUSAL_MASK.require(not (is_causal and has_mask), str(bool(is_causal)).lower(), str(has_mask).lower())
    b, nqh, s, d = q.shape
    nkv, sk, dk = k.shape[1], k.shape[2], k.shape[3]
    if mask is not None:
        P_MASK_TILIZED.require(mask.layout == Layout.TILE)
        P_MASK_DTYPE.require(mask.dtype in A._DTYPES or reference_precision(mask))
        P_MASK_DRAM.require(mask.memory_config().buffer_type == BufferType.DRAM)
        P_MASK_BATCH.require(mask.shape[0] in (1, b))
        P_MASK_HEADS.require(mask.shape[1] in (1, nqh))
        P_MASK_Q_LEN.require(mask.shape[2] == s)
        P_MASK_K_LEN.require(mask.shape[3] == sk)
    if is_causal:
        P_CAUSAL_SEQ.require(s == sk, s, sk)
    P_HV_Q.require(hv <= q.padded_shape[3], hv, q.padded_shape[3])
    P_HV_K.require(hv <= k.padded_shape[3], hv, q.padded_shape[3])
    A._check_heads(P_GQA, nqh, nkv)
    A._check_chunks(P_Q_CHUNK, P_K_CHUNK, program_config)
    A._check_padding(P_PAD_HEAD_DIM, q, k)
    A._check_grid(P_GRID, program_config, q)
    dev = q.device_or_none
    sdpa_cb.check(op, dev, sdpa_cb.prefill_bytes(q, k, hv, program_config=program_config, kernel=compute_kernel_config,
                                                 grid=sdpa_cb.grid_of(program_config, dev), causal=is_causal,
                                                 page_table_cols=None, mask=mask))
    sc = scale if scale is not None else 1.0 / math.sqrt(q.padded_shape[3])
    qpos = torch.arange(s).expand(b, s)
    defined = dk == d  # a narrower K is read at Q's row stride

    def compute(qq: torch.Tensor, kk: torch.Tensor, m: Any) -> torch.Tensor:
        if not defined:
            return _finish(qq[..., :0], hv, False)
        # The mask joins the raw scores before the scale: (QK + m) * scale.
        mm = None if m is None else A.f32(m) * sc
        return _finish(A.attend(qq, kk, _values(kk, hv), qpos, None, sc, is_causal, None, mm), hv, True)

    return output(q, per_device(compute, q, k, mask), q.dtype, Layout.TILE, memory_config or DRAM_MEMORY_CONFIG)


@device_op()
def chunked_flash_mla_prefill(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    head_dim_v: int,
    page_table_tensor: Tensor,
    chunk_start_idx: int,
    *,
    scale: float | None = None,
    memory_config: MemoryConfig | None = None,
    program_config: Any = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    """A chunk of queries at positions chunk_start_idx.. over the latent cache's positions 0..chunk end (the cache
    must already hold this chunk's rows), causal. Returns [b, nqh, s, head_dim_v]."""
    op = C.op
    q, kc, pt = input_tensor_q, input_tensor_k, page_table_tensor
    hv = _no_v_tensor(op, head_dim_v)
    _check_qk(C_HOST, C_TILIZED, C_DTYPE, C_INTERLEAVED, q, kc, pt)
    C_START_NONNEG.require(chunk_start_idx >= 0)
    C_PT_ROW_MAJOR.require(pt.layout == Layout.ROW_MAJOR)
    C_PT_INT32.require(pt.dtype == DataType.INT32)
    b, nqh, s, d = q.shape
    nkv, bs, dk = kc.shape[1], kc.shape[2], kc.shape[3]
    C_PT_BATCH.require(pt.shape[0] == b, pt.shape[0], b)
    A._check_heads(C_GQA, nqh, nkv)
    A._check_chunks(C_Q_CHUNK, C_K_CHUNK, program_config)
    if program_config is not None:
        qch, kch = program_config.q_chunk_size, program_config.k_chunk_size
        C_START_Q_CHUNK.require(chunk_start_idx % qch == 0, chunk_start_idx, qch)
        C_START_K_CHUNK.require(chunk_start_idx % kch == 0, chunk_start_idx, kch)
    kv_len = pt.shape[1] * bs
    C_PAGES.require(kv_len >= s + chunk_start_idx, kv_len, s, chunk_start_idx)
    A._check_padding(C_PAD_HEAD_DIM, q, kc)
    C_PT_PAGE.require(A._page_table_row_bytes(pt) % 32 == 0)
    A._check_grid(C_GRID, program_config, q)
    dev = q.device_or_none
    grid = sdpa_cb.grid_of(program_config, dev)
    sdpa_cb.check(op, dev, sdpa_cb.prefill_bytes(q, kc, hv, program_config=program_config,
                                                 kernel=compute_kernel_config, grid=grid, causal=True,
                                                 page_table_cols=pt.shape[1], mask=None))
    end = chunk_start_idx + s
    nblocks = -(-end // bs)
    sc = scale if scale is not None else 1.0 / math.sqrt(q.padded_shape[3])
    qpos = (torch.arange(s) + chunk_start_idx).expand(b, s)
    defined = dk == d and hv <= dk  # otherwise the cache is read at the wrong row stride

    def compute(qq: torch.Tensor, kk: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        if not defined:
            return _finish(qq[..., :0], hv, False)
        blocks = table[:, :nblocks]
        check_blocks(op, blocks, kk.shape[0])
        keys = gather_pages(kk, blocks)[:, :, :end]
        return _finish(A.attend(qq, keys, _values(keys, hv), qpos, None, sc, True, None), hv, True)

    return output(q, per_device(compute, q, kc, pt), q.dtype, Layout.TILE, memory_config or DRAM_MEMORY_CONFIG)
