"""paged_scaled_dot_product_attention_decode: each user's query attends over its positions 0..cur_pos inclusive,
read from the paged K/V caches through its page-table row.

Q [1, B, heads, hd] (heads padded to 32 in TILE) in DRAM or height-sharded; K/V caches in DRAM. The batch is the page
table's row count. Rows of users at position -1 are skipped by the device and left unwritten: here they read as NaN,
so no caller can rely on them.

Non-causal (is_causal=False): every user attends over the whole span of its page-table row (pages * block_size
positions; cur_pos is not read), with an optional additive attn_mask [Bm, 1, heads, span]: user b reads mask plane
b % Bm (Bm = the mask's dim 0), row h for Q head h. The device adds the mask to the raw Q.K scores and scales after,
so a finite mask value m shifts a logit by scale * m. attention_sink [padded heads, 32] (bf16, TILE, DRAM): column 0
of row h is a per-head logit that joins head h's softmax denominator (again multiplied by scale on the device, which
is why callers pass sink / scale) and takes no value row. cache_position_modulo M (a positive multiple of the block,
at least the sliding window): a ring-buffer cache, position p read from slot p % M of the row's blocks (a range longer
than M reads slots again, as the device does). spec_multi_pos_tiles T (MQA, a bf16 DRAM Q of T padded head tiles):
T candidate positions per user, cur_pos [B * T] in ascending groups; Q row tile j of user b (heads 32j..32j+31)
attends over 0..cur_pos[b * T + j].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from . import sdpa_cb
from .compute import derived_from, output, per_device, reference_precision
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, BufferType, MemoryConfig, TensorMemoryLayout
from .paged import check_blocks
from .program_configs import SDPAProgramConfig
from .rules import Rule, rules
from .tensor import Tensor
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

_IL, _HS = TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED
_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B)
R = rules("transformer.paged_scaled_dot_product_attention_decode",
          "transformer/sdpa_decode/device/sdpa_decode_device_operation.cpp")
ON_DEVICE = R("Operands to SDPA need to be on device!",
              unreachable="ttnn 0.81.1 segfaults on a host input before validating it (measured)")
DTYPE = R("Unsupported data type {}.", "sdpa-decode/q-fp32", "sdpa-decode/k-fp32", "sdpa-decode/ok")
KV_TILE = R("Inputs to SDPA must be tilized except for Q", "sdpa-decode/v-row-major", "sdpa-decode/ok")
RM_Q_SHARDED = R("ROW_MAJOR Q is only supported when Q is HEIGHT_SHARDED in L1; interleaved ROW_MAJOR Q is not "
                 "supported. Convert Q to TILE layout or shard it.", "sdpa-decode/q-row-major-dram",
                 "sdpa-decode/ok")
RM_Q_OUTPUT = R("ROW_MAJOR Q produces a ROW_MAJOR output, which requires a HEIGHT_SHARDED output memory config; "
                "got {}", "sdpa-decode/q-row-major-sharded", "sdpa-decode/mqa-q-row-major-32-heads-sharded-output")
RM_Q_CB = R("Cannot set circular buffer size to {}. This is larger than the associated dynamically allocated L1 "
            "buffer bank size of {} B", "sdpa-decode/mqa-q-row-major-sharded-output",
            "sdpa-decode/mqa-q-row-major-32-heads-sharded-output", source="tt_metal/impl/buffers/circular_buffer.cpp")
Q_SHARDED_HS = R("Q tensor memory layout must be HEIGHT_SHARDED when sharded but got {}",
                 "sdpa-decode/q-width-sharded", "sdpa-decode/q-height-sharded")
Q_DRAM = R("Q tensor buffer type must be DRAM when not sharded but got {}", "sdpa-decode/q-l1", "sdpa-decode/ok")
KV_DRAM = R("Input tensor {} buffer type must be DRAM but got {}", "sdpa-decode/k-l1", "sdpa-decode/ok")
OUT_HS = R("Output memory config layout must be HEIGHT_SHARDED when sharded but got {}",
           "sdpa-decode/output-width-sharded", "sdpa-decode/output-l1")
CAUSAL_NO_MASK = R("attn_mask must not be provided when is_causal=True. Pass is_causal=False to use an explicit "
                   "mask.", "sdpa-decode/causal-with-mask", "sdpa-decode/ok")
CUR_POS_NEEDED = R("Must have cur_pos tensor for paged attention in causal mode", "sdpa-decode/no-cur-pos",
                   "sdpa-decode/ok")
CUR_POS_INT32 = R("Expect cur_pos to be INT32, got {}", "sdpa-decode/cur-pos-uint32", "sdpa-decode/ok")
CUR_POS_RM = R("Expect cur_pos to be ROW_MAJOR, got {}",
               unreachable="a TILE position tensor of B entries is padded to 32 rows, which the last-dim rule "
                           "checks first")
CUR_POS_LAST_DIM = R("cur_pos tensor must hold all positions in its last dim (e.g. [B] or [1, B]), got shape {}",
                     "sdpa-decode/cur-pos-tile", "sdpa-decode/cur-pos-1xB")
CUR_POS_BATCH = R("cur_pos must have batch size equal to Q, got {} and {}", "sdpa-decode/cur-pos-16",
                  "sdpa-decode/ok")
PT_INT32 = R("Error: SDPA currently only supports INT32 datatype", "sdpa-decode/page-table-uint32",
             "sdpa-decode/page-table-l1")
PT_RM = R("Page table tensor layout must be ROW_MAJOR but got {}", "sdpa-decode/page-table-tile", "sdpa-decode/ok")
SAME_BLOCK = R("K and V must have same block size", "sdpa-decode/v-block-32", "sdpa-decode/ok")
SAME_HIDDEN = R("Q, K, V must have same hidden size", "sdpa-decode/q-hd-64-cache-128", "sdpa-decode/ok")
K_CHUNK_POW2 = R("User provided k_chunk_size must be power of 2, got: {}", "sdpa-decode/k-chunk-48",
                 "sdpa-decode/k-chunk-128", source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
K_CHUNK_32 = R("User provided k_chunk_size must be multiple of 32, got: {}", "sdpa-decode/k-chunk-16",
               "sdpa-decode/k-chunk-128", source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
SAME_HEADS = R("Flash decode expects K and V to have same number of heads, but got {} and {}",
               "sdpa-decode/v-4-heads", "sdpa-decode/ok")
GQA_NO_SHARDED_OUT = R("Sharded output not supported for GQA", "sdpa-decode/gqa-sharded-output",
                       "sdpa-decode/mqa-sharded-output")
GQA_BF16_Q = R("GQA expects BFLOAT16 input tensor, but got {}", "sdpa-decode/gqa-q-bfp8", "sdpa-decode/mqa-q-bfp8")
GQA_MULTIPLE = R("GQA expects Q to have a multiple of K heads, but got {} and {}", "sdpa-decode/9q-2kv",
                 "sdpa-decode/9q-3kv")
MASK_PADDED_HEADS = R("Expect same number of padded heads in mask as in Q, got {} and {}",
                      "sdpa-decode-opt/mask/heads-40", "sdpa-decode-opt/mask/row-major", "sdpa-decode-opt/mask/3d",
                      "sdpa-decode-opt/mask/ok")
MASK_HEADS = R("Expect same number of heads in mask as in Q, got {} and {}", "sdpa-decode-opt/mask/heads-16",
               "sdpa-decode-opt/mask/heads-32-padded", "sdpa-decode-opt/mask/ok")
MASK_K_CHUNK = R("Must provide k_chunk_size if using attention mask!", "sdpa-decode-opt/mask/chunk-0",
                 "sdpa-decode-opt/mask/chunk-128")
MASK_CHUNK_MULTIPLE = R("Mask sequence length must be multiple of chunk size, got: {} and {}",
                        "sdpa-decode-opt/mask/span-96-chunk-64", "sdpa-decode-opt/mask/chunk-512",
                        "sdpa-decode-opt/mask/span-256-chunk-64")
MASK_DTYPE = R("Unsupported data type for mask tensor: {}.", "sdpa-decode-opt/mask/fp32", "sdpa-decode-opt/mask/bfp4")
NONCAUSAL_K_CHUNK = R("Must provide k_chunk_size if paged and non-causal!", "sdpa-decode-opt/no-mask/chunk-0",
                      "sdpa-decode-opt/no-mask/chunk-128")
SPAN_CHUNK_MULTIPLE = R("K sequence length must be multiple of chunk size, got: {} and {}",
                        "sdpa-decode-opt/no-mask/span-192-chunk-128", "sdpa-decode-opt/no-mask/span-192-chunk-64")
MOD_POSITIVE = R("cache_position_modulo must be > 0 when provided", "sdpa-decode-opt/modulo/zero",
                 "sdpa-decode-opt/modulo/ok")
MOD_BLOCK = R("cache_position_modulo ({}) must be a multiple of effective block_size ({})",
              "sdpa-decode-opt/modulo/not-block-multiple", "sdpa-decode-opt/modulo/ok")
MOD_WINDOW = R("cache_position_modulo ({}) must be >= sliding_window_size ({}); a tighter capacity would let the SDPA "
               "attention range wrap multiple times and double-count positions.", "sdpa-decode-opt/modulo/window-wider",
               "sdpa-decode-opt/modulo/window")
_SPEC = "sdpa-decode-opt/spec/"
SPEC_CAUSAL = R("spec_multi_pos_tiles requires is_causal", _SPEC + "non-causal", _SPEC + "mask", _SPEC + "ok")
SPEC_MASK = R("spec_multi_pos_tiles is not supported with an explicit attn_mask",
              unreachable="a mask needs is_causal=False, which spec_multi_pos_tiles refuses first")
SPEC_MQA = R("spec_multi_pos_tiles requires num_kv_heads == 1, got {}", _SPEC + "gqa", _SPEC + "ok")
SPEC_BF16 = R("spec_multi_pos_tiles requires a BFLOAT16 Q tensor, got {}", _SPEC + "q-bfp8", _SPEC + "ok")
SPEC_UNSHARDED = R("spec_multi_pos_tiles requires an unsharded (DRAM interleaved) Q tensor",
                   _SPEC + "q-height-sharded", _SPEC + "ok")
SPEC_WINDOW = R("spec_multi_pos_tiles is not supported with sliding_window_size", _SPEC + "window", _SPEC + "ok")
SPEC_ROWS = R("spec_multi_pos_tiles={}: Q must have {} padded rows per batch (one 32-row tile per candidate), got {}",
              _SPEC + "t2-32-heads", _SPEC + "t1-64-heads", _SPEC + "t2-40-heads")
SPEC_FULL_TILES = R("spec_multi_pos_tiles requires full 32x32 tiles (use_half_tile must be false), but Q has {} "
                    "logical heads", _SPEC + "16-heads", _SPEC + "ok")
SPEC_ENTRIES = R("spec_multi_pos_tiles={}: cur_pos must have {} entries (B={} groups of {}), got {}",
                 _SPEC + "cur-pos-32-for-t2", _SPEC + "cur-pos-1x64")
SPEC_ASCENDING = R("spec_multi_pos_tiles={}: cur_pos entries within candidate group {} must be non-decreasing, but "
                   "entry {} ({}) > entry {} ({}); the reader derives the group's KV scan range from the group's last "
                   "entry, so a non-ascending group would silently drop KV.",
                   unreachable="it reads the positions' values, and a mock device's tensors read back as zeros")
SPEC_CHUNK = R("spec_multi_pos_tiles requires a power-of-2 k chunk size in tiles, got {}",
               unreachable="the host requires a user k_chunk_size to be a power of 2 and a multiple of 32 first, and "
                           "0 (chosen per position) passes")
SPEC_HEADS_PER_CORE = R("spec_multi_pos_tiles requires num_heads_per_core == 1",
                        unreachable="MQA, required first, puts one kv head on a core")
SINK_RANK = R("Attention sink must have 2 dimensions", "sdpa-decode-opt/sink/4d", "sdpa-decode-opt/sink/1d")
SINK_HEADS = R("Attention sink must have the same padded num heads as Q but got {}", "sdpa-decode-opt/sink/heads-64",
               "sdpa-decode-opt/sink/heads-33", "sdpa-decode-opt/sink/logical-8x1")
SINK_WIDTH = R("Attention sink must be a single tile wide, but got {}", "sdpa-decode-opt/sink/width-64",
               "sdpa-decode-opt/sink/ok")
SINK_BF16 = R("Attention sink must by a BF16 tensor, but got {}", "sdpa-decode-opt/sink/bfp8",
              "sdpa-decode-opt/sink/fp32", "sdpa-decode-opt/sink/ok")
SINK_TILE = R("Attention sink must be in TILE layout, but got {}", "sdpa-decode-opt/sink/row-major",
              "sdpa-decode-opt/sink/ok")
SINK_DRAM = R("Attention sink must be in DRAM memory, but got {}", "sdpa-decode-opt/sink/l1",
              "sdpa-decode-opt/sink/height-sharded", "sdpa-decode-opt/sink/ok")
GRID_FITS = R("Cores available ({}) exceeds grid size ({})", "sdpa-decode/grid-9x9", "sdpa-decode/grid-8x8",
              source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
GRID_BATCH = R("Cores available ({}) must be >= batch size ({})", "sdpa-decode/grid-4x4", "sdpa-decode/grid-8x4",
               source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")


def _padded(t: Tensor) -> tuple[int, ...]:
    """The device's padded shape: a rank-1 TILE tensor is padded to a [32, w] tile row, as ttnn does."""
    shape = tuple(t.padded_shape)
    if t.layout == Layout.TILE and len(shape) == 1:
        return (TILE_SIZE, shape[0])
    return shape


def _k_chunk(program_config: Any) -> int:
    """The chunk size the op runs with: the config's (0 lets the kernel choose, in causal mode), else 32."""
    return program_config.k_chunk_size if program_config is not None else TILE_SIZE


@dataclass(frozen=True)
class DecodeRules:
    """The rules the paged decode ops share, by role: each op registers its own (their errors name it), and the
    checks below apply them in the device's order (ttnn_sim.mla passes multi-latent attention's)."""

    rm_q_sharded: Rule
    rm_q_output: Rule
    rm_q_cb: Rule
    q_sharded_hs: Rule
    q_dram: Rule
    kv_dram: Rule
    out_hs: Rule
    cur_pos_needed: Rule | None  # None: the unpaged MLA op, whose positions may be a list and which has no table
    cur_pos_int32: Rule | None
    cur_pos_last_dim: Rule
    cur_pos_rm: Rule | None
    pt_int32: Rule | None
    pt_rm: Rule | None
    gqa_no_sharded_out: Rule
    gqa_bf16_q: Rule
    gqa_multiple: Rule
    sink_rank: Rule
    sink_heads: Rule
    sink_width: Rule
    sink_bf16: Rule
    sink_tile: Rule
    sink_dram: Rule
    grid_fits: Rule
    grid_batch: Rule


def check_placement(r: DecodeRules, q: Tensor, kv: tuple[Tensor | None, ...], out_mc: MemoryConfig) -> None:
    """Where Q, the caches and the output may live."""
    qmc = q.memory_config()
    if q.layout == Layout.ROW_MAJOR:
        r.rm_q_sharded.require(qmc.memory_layout == _HS and qmc.buffer_type == BufferType.L1)
        r.rm_q_output.require(out_mc.memory_layout == _HS, f"TensorMemoryLayout::{out_mc.memory_layout.name}")
        # The output is staged a tile row at a time in a circular buffer placed on the output shard itself.
        if out_mc.shard_spec is not None:
            sh, sw = out_mc.shard_spec.shape
            cb, shard_bytes = (sw // TILE_SIZE) * 2048, sh * sw * 2
            r.rm_q_cb.require(cb <= shard_bytes, cb, shard_bytes)
    if qmc.is_sharded():
        r.q_sharded_hs.require(qmc.memory_layout == _HS, f"TensorMemoryLayout::{qmc.memory_layout.name}")
    else:
        r.q_dram.require(qmc.buffer_type == BufferType.DRAM, f"BufferType::{qmc.buffer_type.name}")
    for i, t in enumerate(kv, start=1):
        if t is not None:
            bt = t.memory_config().buffer_type
            r.kv_dram.require(bt == BufferType.DRAM, i, f"BufferType::{bt.name}")
    if out_mc.is_sharded():
        r.out_hs.require(out_mc.memory_layout == _HS, f"TensorMemoryLayout::{out_mc.memory_layout.name}")


def check_cur_pos(r: DecodeRules, cur_pos: Tensor | None) -> tuple[int, ...]:
    """A causal paged decode's positions tensor (its batch is checked by the caller); returns its padded shape."""
    r.cur_pos_needed.require(cur_pos is not None)
    r.cur_pos_int32.require(cur_pos.dtype == DataType.INT32, f"DataType::{cur_pos.dtype.name}")
    padded = cur_pos.padded_shape
    r.cur_pos_last_dim.require(all(d == 1 for d in padded[:-1]), padded)
    r.cur_pos_rm.require(cur_pos.layout == Layout.ROW_MAJOR, f"Layout::{cur_pos.layout.name}")
    return padded


def check_page_table(r: DecodeRules, pt: Tensor) -> None:
    r.pt_int32.require(pt.dtype == DataType.INT32)
    r.pt_rm.require(pt.layout == Layout.ROW_MAJOR, f"Layout::{pt.layout.name}")


def check_gqa(r: DecodeRules, q: Tensor, nkv: int, out_mc: MemoryConfig) -> None:
    if nkv > 1:
        r.gqa_no_sharded_out.require(not out_mc.is_sharded())
        r.gqa_bf16_q.require(q.dtype == DataType.BFLOAT16 or reference_precision(q), f"DataType::{q.dtype.name}")
        r.gqa_multiple.require(q.shape[2] % nkv == 0, q.shape[2], nkv)


def check_sink(r: DecodeRules, sink: Tensor | None, q_padded: tuple[int, ...]) -> None:
    """The attention sink: [padded heads, 32] bf16 TILE in DRAM."""
    if sink is None:
        return
    s_padded = _padded(sink)
    r.sink_rank.require(len(s_padded) == 2)
    r.sink_heads.require(s_padded[0] == q_padded[2], s_padded[0])
    r.sink_width.require(s_padded[1] == TILE_SIZE, s_padded[1])
    r.sink_bf16.require(sink.dtype == DataType.BFLOAT16, f"DataType::{sink.dtype.name}")
    r.sink_tile.require(sink.layout == Layout.TILE, f"Layout::{sink.layout.name}")
    bt = sink.memory_config().buffer_type
    r.sink_dram.require(bt == BufferType.DRAM, f"BufferType::{bt.name}")


def check_grid(r: DecodeRules, program_config: Any, q: Tensor, users: int) -> None:
    if program_config is not None:
        g = program_config.compute_with_storage_grid_size
        gx, gy = q.device_or_none.chip.grid
        r.grid_fits.require(g.x * g.y <= gx * gy, g.x * g.y, gx * gy)
        r.grid_batch.require(g.x * g.y >= users, g.x * g.y, users)


PAGED = DecodeRules(RM_Q_SHARDED, RM_Q_OUTPUT, RM_Q_CB, Q_SHARDED_HS, Q_DRAM, KV_DRAM, OUT_HS, CUR_POS_NEEDED,
                    CUR_POS_INT32, CUR_POS_LAST_DIM, CUR_POS_RM, PT_INT32, PT_RM, GQA_NO_SHARDED_OUT,
                    GQA_BF16_Q, GQA_MULTIPLE, SINK_RANK, SINK_HEADS, SINK_WIDTH, SINK_BF16, SINK_TILE, SINK_DRAM,
                    GRID_FITS, GRID_BATCH)


def _validate(q: Tensor, kc: Tensor, vc: Tensor, pt: Tensor, cur_pos: Tensor | None, attn_mask: Tensor | None,
              sink: Tensor | None, is_causal: bool, out_mc: MemoryConfig, program_config: Any, modulo: int | None,
              window: int | None, spec: int) -> int:
    for t in (q, kc, vc, pt, cur_pos, attn_mask, sink):
        ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    # The host checks a user-given chunk size before the device operation validates anything.
    if program_config is not None and program_config.k_chunk_size:
        k = program_config.k_chunk_size
        K_CHUNK_POW2.require(k & (k - 1) == 0, k)
        K_CHUNK_32.require(k % TILE_SIZE == 0, k)
    k_chunk = _k_chunk(program_config)
    for t in (q, kc, vc):
        DTYPE.require(t.dtype in _DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
    KV_TILE.require(kc.layout == Layout.TILE and vc.layout == Layout.TILE)
    check_placement(PAGED, q, (kc, vc), out_mc)
    q_padded = _padded(q)
    if is_causal:
        CAUSAL_NO_MASK.require(attn_mask is None)
    elif attn_mask is not None:
        m_padded = _padded(attn_mask)
        MASK_PADDED_HEADS.require(m_padded[2] == q_padded[2], m_padded[2], q_padded[2])
        MASK_HEADS.require(attn_mask.shape[2] == q.shape[2], attn_mask.shape[2], q.shape[2])
        MASK_K_CHUNK.require(k_chunk > 0)
        MASK_CHUNK_MULTIPLE.require(m_padded[3] % k_chunk == 0, m_padded[3], k_chunk)
        MASK_DTYPE.require(attn_mask.dtype in _DTYPES, f"DataType::{attn_mask.dtype.name}")
    users = pt.shape[0]
    if spec:
        SPEC_CAUSAL.require(is_causal)
        SPEC_MASK.require(attn_mask is None)
        SPEC_MQA.require(kc.shape[1] == 1, kc.shape[1])
        SPEC_BF16.require(q.dtype == DataType.BFLOAT16, f"DataType::{q.dtype.name}")
        SPEC_UNSHARDED.require(not q.is_sharded())
        SPEC_WINDOW.require(not window)
        SPEC_ROWS.require(q_padded[2] == spec * TILE_SIZE, spec, spec * TILE_SIZE, q_padded[2])
        SPEC_FULL_TILES.require(q.shape[2] > 16, q.shape[2])
    if is_causal:
        padded = check_cur_pos(PAGED, cur_pos)
        if spec:
            SPEC_ENTRIES.require(padded[-1] == users * spec, spec, users * spec, users, spec, padded[-1])
            groups = cur_pos.shard(0).reshape(-1)[: users * spec].to(torch.int64).reshape(users, spec) % (1 << 32)
            for b, j in torch.nonzero(groups[:, :-1] > groups[:, 1:]).tolist():
                SPEC_ASCENDING.require(False, spec, b, b * spec + j, int(groups[b, j]), b * spec + j + 1,
                                       int(groups[b, j + 1]))
        elif not cur_pos.is_sharded():
            CUR_POS_BATCH.require(padded[-1] == users, padded[-1], users)
    check_page_table(PAGED, pt)
    SAME_BLOCK.require(kc.shape[2] == vc.shape[2])
    SAME_HIDDEN.require(kc.shape[-1] == q.shape[-1] and vc.shape[-1] == q.shape[-1])
    if modulo is not None:
        block = _padded(kc)[2]
        MOD_POSITIVE.require(modulo > 0)
        MOD_BLOCK.require(modulo % block == 0, modulo, block)
        if window:
            MOD_WINDOW.require(modulo >= window, modulo, window)
    if not is_causal:
        NONCAUSAL_K_CHUNK.require(k_chunk > 0)
        span = pt.shape[1] * _padded(kc)[2]
        SPAN_CHUNK_MULTIPLE.require(span % k_chunk == 0, span, k_chunk)
    nkv = kc.shape[1]
    SAME_HEADS.require(nkv == vc.shape[1], nkv, vc.shape[1])
    check_gqa(PAGED, q, nkv, out_mc)
    check_sink(PAGED, sink, q_padded)
    if spec:
        k = _k_chunk(program_config) // TILE_SIZE
        SPEC_CHUNK.require(k & (k - 1) == 0, k)
        SPEC_HEADS_PER_CORE.require(True)
    check_grid(PAGED, program_config, q, users)
    return users


def _tile_padded(t: torch.Tensor, padded: tuple[int, ...]) -> torch.Tensor:
    """t's values in its tile-padded shape (the padding reads as zeros, as a tensor made by from_torch holds)."""
    if t.dim() == 1:  # a rank-1 tensor is one row of its tile row
        t = t.reshape(1, -1)
    return torch.nn.functional.pad(t, (0, padded[-1] - t.shape[-1], 0, padded[-2] - t.shape[-2]))


def _mask_rows(mask: torch.Tensor, padded: tuple[int, ...], tiled: bool, users: int, pnh: int,
               span: int) -> torch.Tensor:
    """[users, pnh, span]: the mask values each user's reader fetches. The reader walks the mask's tiles as if it
    were [Bm, pnh, span] with Bm = dim 0: user b's row tile r, column tile c is tile (b % Bm) * (pnh / 32) * (span / 32)
    + r * (span / 32) + c of the buffer. That is row h of plane b for a [Bm, 1, pnh, span] mask; any other shape is
    read through the same arithmetic, and a tile past the buffer's end reads as NaN (whatever lies beyond)."""
    st, pnht = span // TILE_SIZE, pnh // TILE_SIZE
    if not tiled:  # row-major pages are sticks, not tiles: the tile reads land on unrelated data
        return torch.full((users, pnh, span), float("nan"))
    full = _tile_padded(mask.float(), padded)
    rows, wt = full.numel() // padded[-1], padded[-1] // TILE_SIZE
    tiles = full.reshape(rows // TILE_SIZE, TILE_SIZE, wt, TILE_SIZE).permute(0, 2, 1, 3).reshape(-1, TILE_SIZE,
                                                                                                  TILE_SIZE)
    b = torch.arange(users)[:, None, None] % padded[0]
    ids = b * (pnht * st) + torch.arange(pnht)[None, :, None] * st + torch.arange(st)[None, None, :]
    inside = ids < tiles.shape[0]
    got = tiles[ids.clamp(max=tiles.shape[0] - 1)]
    got = got.masked_fill(~inside[..., None, None], float("nan"))
    return got.permute(0, 1, 3, 2, 4).reshape(users, pnh, span)


def _attend(qg: torch.Tensor, keys: torch.Tensor, vals: torch.Tensor, allowed: torch.Tensor,
            mask_rows: torch.Tensor | None, sinks: torch.Tensor | None, sc: float, dt: torch.dtype) -> torch.Tensor:
    """Decode attention of qg [n, nkv, g, hd] (the g query heads sharing a kv head) over keys / vals [n, nkv, t, hd]
    where allowed [n|1, 1, 1|g, t]: the paged and the unpaged op share it. bf16 operands with fp32 scores and
    softmax, probabilities rounded to bf16 for the PV product, as the device's kernel keeps them in bf16 circular
    buffers (fp32 throughout only at reference precision). mask_rows [n, nh, t] is added to the raw Q.K scores before
    the scale, as the kernel adds it; sinks [nh] are one more logit per head, scale * sink[h], with no value row.
    Returns [n, nkv, g, hd]."""
    n, nkv, g, _ = qg.shape
    t = keys.shape[2]
    if mask_rows is None and sinks is None:
        if keys.dtype != dt:
            keys, vals = keys.to(dt), vals.to(dt)
        return torch.nn.functional.scaled_dot_product_attention(qg.to(dt), keys, vals, attn_mask=allowed, scale=sc)
    scores = qg.float() @ keys.float().transpose(-1, -2)  # [users, nkv, g, t], raw Q.K
    if mask_rows is not None:  # added before the scale, as the kernel adds it to the raw scores
        scores = scores + mask_rows.reshape(n, nkv, g, t)
    logits = (scores * sc).masked_fill(~allowed, float("-inf"))
    if sinks is not None:  # one more logit per head, scale * sink[h, 0], with no value row
        logits = torch.cat([logits, (sinks.reshape(1, nkv, g, 1) * sc).expand(n, -1, -1, -1)], dim=-1)
    probs = torch.softmax(logits, dim=-1)[..., :t]
    if dt == torch.bfloat16:
        probs = probs.to(torch.bfloat16)
    return (probs.float() @ vals.float()).to(dt)


def _finish(res: torch.Tensor, live: torch.Tensor | None, users: int, nh: int, hd: int) -> torch.Tensor:
    """[1, users, nh, hd] from the first n users' results; skipped users' rows (and users past the last live one)
    are left unwritten by the device: NaN here."""
    n = res.shape[0]
    res = res.view(1, n, nh, hd)
    if live is not None:  # skipped users: the device leaves their rows unwritten
        res = res.masked_fill(~live[None, :, None, None], float("nan"))
    if n < users:
        res = torch.cat([res, res.new_full((1, users - n, nh, hd), float("nan"))], dim=1)
    return res


@device_op(kernel_replay=True)
def paged_scaled_dot_product_attention_decode(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    input_tensor_v: Tensor,
    page_table_tensor: Tensor,
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
    paged_cache_geometry: Any = None,
    cache_position_modulo: int | None = None,
    spec_multi_pos_tiles: Any = None,
) -> Tensor:
    """Q [1, B, nh, hd] attends over its user's positions 0..cur_pos inclusive (causal; a user at -1 gets undefined
    rows) or over its page-table row's whole span (is_causal=False, optionally with attn_mask); attention_sink adds a
    per-head logit to each softmax denominator."""
    op = "transformer.paged_scaled_dot_product_attention_decode"
    q, kc, vc = input_tensor_q, input_tensor_k, input_tensor_v
    out_mc = memory_config or DRAM_MEMORY_CONFIG
    refuse_options(op, paged_cache_geometry=paged_cache_geometry)
    mask, sink, modulo, spec = attn_mask, attention_sink, cache_position_modulo, spec_multi_pos_tiles or 0
    users = _validate(q, kc, vc, page_table_tensor, cur_pos_tensor, mask, sink, is_causal, out_mc, program_config,
                      modulo, sliding_window_size, spec)
    dev = q.device_or_none
    sdpa_cb.check(op, dev, sdpa_cb.decode_bytes(
        q, kc, vc, kc.shape[-1], users, paged=True, mla=False, program_config=program_config,
        kernel=compute_kernel_config, grid=sdpa_cb.grid_of(program_config, dev), causal=is_causal,
        pages=page_table_tensor.shape[1], out_sharded=out_mc.is_sharded(), window=sliding_window_size,
        sink=sink is not None))
    return paged_decode(op, q, kc, vc, None, page_table_tensor, cur_pos_tensor, mask, sink, users, is_causal, scale,
                        sliding_window_size, out_mc, modulo, spec)


# ---------------------------------------------------------------------------------------------------------------
# Unpaged decode: transformer.scaled_dot_product_attention_decode, K/V [B, nkv, S, hd] (one cache per user, or one
# shared by all users with share_cache). The device operation is the paged one's (SdpaDecodeDeviceOperation), with
# the unpaged branch of its validation; the rules below were measured on the real ttnn 0.81.1 on the mock N150
# (tt_checks/tt_metal_unit/probes/sdpa_decode_unpaged.py, corpus cases sdpa-decode-unpaged/*).
# ---------------------------------------------------------------------------------------------------------------
RU = rules("transformer.scaled_dot_product_attention_decode",
           "transformer/sdpa_decode/device/sdpa_decode_device_operation.cpp")
_U = "sdpa-decode-unpaged/"
U_ON_DEVICE = RU("Operands to SDPA need to be on device!",
                 unreachable="ttnn 0.81.1 segfaults on a host input before validating it (measured)")
U_K_CHUNK_POW2 = RU("User provided k_chunk_size must be power of 2, got: {}", _U + "k-chunk-48", _U + "ok",
                    source="transformer/sdpa_decode/sdpa_decode.cpp")
U_K_CHUNK_32 = RU("User provided k_chunk_size must be multiple of 32, got: {}", _U + "k-chunk-16", _U + "ok",
                  source="transformer/sdpa_decode/sdpa_decode.cpp")
U_CHUNK_CALC = RU("Chunk size must be multiple of 32, but the maximum calculated k_chunk_size is: {}",
                  _U + "seq-100", _U + "seq-96", source="transformer/sdpa_decode/sdpa_decode.cpp")
U_DTYPE = RU("Unsupported data type {}.", _U + "q-fp32", _U + "k-fp32", _U + "ok")
U_KV_TILE = RU("Inputs to SDPA must be tilized except for Q", _U + "v-row-major", _U + "ok")
U_RM_Q_SHARDED = RU("ROW_MAJOR Q is only supported when Q is HEIGHT_SHARDED in L1; interleaved ROW_MAJOR Q is not "
                    "supported. Convert Q to TILE layout or shard it.", _U + "q-row-major-dram", _U + "ok")
U_RM_Q_OUTPUT = RU("ROW_MAJOR Q produces a ROW_MAJOR output, which requires a HEIGHT_SHARDED output memory config; "
                   "got {}", _U + "q-row-major-sharded", _U + "q-height-sharded")
U_Q_SHARDED_HS = RU("Q tensor memory layout must be HEIGHT_SHARDED when sharded but got {}",
                    _U + "q-width-sharded", _U + "q-height-sharded")
U_Q_DRAM = RU("Q tensor buffer type must be DRAM when not sharded but got {}", _U + "q-l1", _U + "ok")
U_KV_DRAM = RU("Input tensor {} buffer type must be DRAM but got {}", _U + "k-l1", _U + "ok")
U_OUT_HS = RU("Output memory config layout must be HEIGHT_SHARDED when sharded but got {}",
              _U + "output-width-sharded", _U + "output-height-sharded")
U_MASK_PADDED_HEADS = RU("Expect same number of padded heads in mask as in Q, got {} and {}",
                         _U + "mask/heads-32", _U + "mask/ok")
U_MASK_HEADS = RU("Expect same number of heads in mask as in Q, got {} and {}", _U + "mask/heads-40",
                  _U + "mask/ok")
U_MASK_SEQ = RU("Expect same sequence length in mask as in K, got {} and {}", _U + "mask/seq-1024", _U + "mask/ok")
U_MASK_K_CHUNK = RU("Must provide k_chunk_size if using attention mask!",
                    unreachable="the host always passes a chunk size > 0 (the user's, or the largest power-of-2 "
                                "divisor of S up to 512)")
U_MASK_CHUNK_MULTIPLE = RU("Mask sequence length must be multiple of chunk size, got: {} and {}",
                           _U + "mask/chunk-4096", _U + "mask/ok")
U_MASK_DTYPE = RU("Unsupported data type for mask tensor: {}.", _U + "mask/fp32", _U + "mask/ok")
U_CAUSAL_NO_MASK = RU("attn_mask must not be provided when is_causal=True. Pass is_causal=False to use an explicit "
                      "mask.", _U + "causal-with-mask", _U + "mask/ok")
U_SHARE_K = RU("Share cache expects K to have batch size of 1, but got {}", _U + "share-cache-k-batch-8",
               _U + "share-cache")
U_SHARE_V = RU("Share cache expects V to have batch size of 1, but got {}", _U + "share-cache-v-batch-8",
               _U + "share-cache")
U_K_BATCH = RU("K tensor batch size ({}) must equal B ({})", _U + "k-batch-4", _U + "ok")
U_V_BATCH = RU("V tensor batch size ({}) must equal B ({})", _U + "v-batch-4", _U + "ok")
U_Q_DIM0 = RU("Q tensor batch size must be 1 for decode mode but got {}", _U + "q-dim0-2", _U + "ok")
U_SAME_SEQ = RU("K and V tensors must have the same sequence length. K: {}, V: {}", _U + "v-seq-512", _U + "ok")
U_CHUNK_GIVEN = RU("Must provide k_chunk_size if non-causal!",
                   unreachable="the host always passes a chunk size > 0")
U_CHUNK_TILE = RU("Chunk size must be multiple of 32, got: {}",
                  unreachable="the host refuses a chunk size that is not a multiple of 32 first")
U_SEQ_CHUNK = RU("K sequence length must be multiple of chunk size, got: {} and {}", _U + "k-chunk-2048",
                 _U + "seq-96")
U_K_HD = RU("K tensor hidden dimension ({}) must equal Q tensor hidden dimension ({})", _U + "k-hd-64", _U + "ok")
U_V_HD = RU("V tensor hidden dimension ({}) must equal Q tensor hidden dimension ({})", _U + "v-hd-64", _U + "ok")
U_CUR_POS_MAX = RU("cur_pos must be <= K sequence dim", _U + "cur-pos-S", _U + "cur-pos-S-1")
U_CUR_POS_LAST_DIM = RU("cur_pos tensor must hold all positions in its last dim (e.g. [B] or [1, B]), got shape {}",
                        _U + "cur-pos-8x1", _U + "cur-pos-1x8")
U_SAME_HEADS = RU("Flash decode expects K and V to have same number of heads, but got {} and {}",
                  _U + "v-4-heads", _U + "gqa")
U_GQA_NO_SHARDED_OUT = RU("Sharded output not supported for GQA", _U + "gqa-sharded-output",
                          _U + "output-height-sharded")
U_GQA_BF16_Q = RU("GQA expects BFLOAT16 input tensor, but got {}", _U + "gqa-q-bfp8", _U + "gqa")
U_GQA_MULTIPLE = RU("GQA expects Q to have a multiple of K heads, but got {} and {}", _U + "9q-2kv", _U + "gqa")
U_SINK_RANK = RU("Attention sink must have 2 dimensions", _U + "sink/4d", _U + "sink/ok")
U_SINK_HEADS = RU("Attention sink must have the same padded num heads as Q but got {}", _U + "sink/heads-64",
                  _U + "sink/ok")
U_SINK_WIDTH = RU("Attention sink must be a single tile wide, but got {}", _U + "sink/width-64", _U + "sink/ok")
U_SINK_BF16 = RU("Attention sink must by a BF16 tensor, but got {}", _U + "sink/bfp8", _U + "sink/ok")
U_SINK_TILE = RU("Attention sink must be in TILE layout, but got {}", _U + "sink/row-major", _U + "sink/ok")
U_SINK_DRAM = RU("Attention sink must be in DRAM memory, but got {}", _U + "sink/l1", _U + "sink/ok")
U_GRID_FITS = RU("Cores available ({}) exceeds grid size ({})", _U + "grid-9x9", _U + "ok",
                 source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
U_GRID_BATCH = RU("Cores available ({}) must be >= batch size ({})", _U + "grid-4x1", _U + "ok",
                  source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
U_CUR_POS_COUNT = RU("cur_pos tensor must have at least one position per batch ({}), got shape {}",
                     _U + "cur-pos-tensor-4", _U + "cur-pos-tensor-16",
                     source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
U_CUR_POS_LIST = RU("vector::_M_range_check: __n (which is {}) >= this->size() (which is {})",
                    _U + "cur-pos-list-4", _U + "no-cur-pos", _U + "cur-pos-list-16",
                    source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")


def max_pow2_divisor_chunk(s: int) -> int:
    """sdpa_decode.cpp's get_chunk_size: the largest power-of-2 divisor of s (at least 2), at most 512."""
    i = 1
    while i < s and s % (1 << (i + 1)) == 0:
        i += 1
    return min(512, 1 << i)


def _validate_unpaged(q: Tensor, k: Tensor, v: Tensor, cur_pos: list[int], cur_pos_tensor: Tensor | None,
                      attn_mask: Tensor | None, sink: Tensor | None, is_causal: bool, out_mc: MemoryConfig,
                      program_config: Any, share_cache: bool | None) -> int:
    """SdpaDecodeDeviceOperation's checks for an unpaged call, in 0.81.1's order; returns the chunk size."""
    for t in (q, k, v, cur_pos_tensor, attn_mask, sink):
        U_ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    s = k.shape[-2]
    if program_config is not None and program_config.k_chunk_size > 0:
        k_chunk = program_config.k_chunk_size
        U_K_CHUNK_POW2.require(k_chunk & (k_chunk - 1) == 0, k_chunk)
        U_K_CHUNK_32.require(k_chunk % TILE_SIZE == 0, k_chunk)
    else:
        k_chunk = max_pow2_divisor_chunk(s)
        U_CHUNK_CALC.require(k_chunk % TILE_SIZE == 0, k_chunk)
    for t in (q, k, v):
        U_DTYPE.require(t.dtype in _DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
    U_KV_TILE.require(k.layout == Layout.TILE and v.layout == Layout.TILE)
    qmc = q.memory_config()
    if q.layout == Layout.ROW_MAJOR:
        U_RM_Q_SHARDED.require(qmc.memory_layout == _HS and qmc.buffer_type == BufferType.L1)
        U_RM_Q_OUTPUT.require(out_mc.memory_layout == _HS, f"TensorMemoryLayout::{out_mc.memory_layout.name}")
        raise TTError("transformer.scaled_dot_product_attention_decode",
                      "a ROW_MAJOR Q is not modelled by the simulator for the unpaged op")
    if qmc.is_sharded():
        U_Q_SHARDED_HS.require(qmc.memory_layout == _HS, f"TensorMemoryLayout::{qmc.memory_layout.name}")
    else:
        U_Q_DRAM.require(qmc.buffer_type == BufferType.DRAM, f"BufferType::{qmc.buffer_type.name}")
    for i, t in ((1, k), (2, v)):
        bt = t.memory_config().buffer_type
        U_KV_DRAM.require(bt == BufferType.DRAM, i, f"BufferType::{bt.name}")
    if out_mc.is_sharded():
        U_OUT_HS.require(out_mc.memory_layout == _HS, f"TensorMemoryLayout::{out_mc.memory_layout.name}")
    q_padded, k_padded, v_padded = _padded(q), _padded(k), _padded(v)
    if is_causal:
        U_CAUSAL_NO_MASK.require(attn_mask is None)
    elif attn_mask is not None:
        m_padded = _padded(attn_mask)
        U_MASK_PADDED_HEADS.require(m_padded[2] == q_padded[2], m_padded[2], q_padded[2])
        U_MASK_HEADS.require(attn_mask.shape[2] == q.shape[2], attn_mask.shape[2], q.shape[2])
        U_MASK_SEQ.require(m_padded[3] == k_padded[2], m_padded[3], k_padded[2])
        U_MASK_K_CHUNK.require(k_chunk > 0)
        U_MASK_CHUNK_MULTIPLE.require(m_padded[3] % k_chunk == 0, m_padded[3], k_chunk)
        U_MASK_DTYPE.require(attn_mask.dtype in _DTYPES, f"DataType::{attn_mask.dtype.name}")
    if cur_pos_tensor is not None:
        padded = cur_pos_tensor.padded_shape
        U_CUR_POS_LAST_DIM.require(all(d == 1 for d in padded[:-1]), f"Shape({list(padded)})")
    b = q_padded[1]
    if share_cache:
        U_SHARE_K.require(k_padded[0] == 1, k_padded[0])
        U_SHARE_V.require(v_padded[0] == 1, v_padded[0])
    else:
        U_K_BATCH.require(k_padded[0] == b, k_padded[0], b)
        U_V_BATCH.require(v_padded[0] == b, v_padded[0], b)
    U_Q_DIM0.require(q_padded[0] == 1, q_padded[0])
    U_SAME_SEQ.require(k_padded[-2] == v_padded[-2], k_padded[-2], v_padded[-2])
    U_CHUNK_GIVEN.require(k_chunk > 0)
    U_CHUNK_TILE.require(k_chunk % TILE_SIZE == 0, k_chunk)
    U_SEQ_CHUNK.require(k_padded[2] % k_chunk == 0, k_padded[2], k_chunk)
    U_K_HD.require(k_padded[-1] == q_padded[-1], k_padded[-1], q_padded[-1])
    U_V_HD.require(v_padded[-1] == q_padded[-1], v_padded[-1], q_padded[-1])
    for p in cur_pos:
        U_CUR_POS_MAX.require(p < k_padded[-2])
    nkv = k_padded[1]
    U_SAME_HEADS.require(nkv == v_padded[1], nkv, v_padded[1])
    if nkv > 1:
        U_GQA_NO_SHARDED_OUT.require(not out_mc.is_sharded())
        U_GQA_BF16_Q.require(q.dtype == DataType.BFLOAT16 or reference_precision(q), f"DataType::{q.dtype.name}")
        U_GQA_MULTIPLE.require(q.shape[2] % nkv == 0, q.shape[2], nkv)
    if sink is not None:
        s_padded = _padded(sink)
        U_SINK_RANK.require(len(s_padded) == 2)
        U_SINK_HEADS.require(s_padded[0] == q_padded[2], s_padded[0])
        U_SINK_WIDTH.require(s_padded[1] == TILE_SIZE, s_padded[1])
        U_SINK_BF16.require(sink.dtype == DataType.BFLOAT16, f"DataType::{sink.dtype.name}")
        U_SINK_TILE.require(sink.layout == Layout.TILE, f"Layout::{sink.layout.name}")
        bt = sink.memory_config().buffer_type
        U_SINK_DRAM.require(bt == BufferType.DRAM, f"BufferType::{bt.name}")
    if program_config is not None:
        g = program_config.compute_with_storage_grid_size
        gx, gy = q.device_or_none.chip.grid
        U_GRID_FITS.require(g.x * g.y <= gx * gy, g.x * g.y, gx * gy)
        U_GRID_BATCH.require(g.x * g.y >= b, g.x * g.y, b)
    if is_causal:
        check_positions(U_CUR_POS_COUNT, U_CUR_POS_LIST, cur_pos_tensor, cur_pos, b)
    return k_chunk


def check_positions(count: Rule, from_list: Rule, cur_pos_tensor: Tensor | None, cur_pos: list[int], b: int) -> None:
    """The unpaged program factory reads one position per user: from the tensor, else from the list (an index past
    its end is std::vector's range check)."""
    if cur_pos_tensor is not None:
        count.require(cur_pos_tensor.padded_shape[-1] >= b, b, f"Shape({list(cur_pos_tensor.shape)})")
    else:
        from_list.require(len(cur_pos) >= b, len(cur_pos), len(cur_pos))


@device_op(kernel_replay=True)
def scaled_dot_product_attention_decode(
    input_tensor_q: Tensor,
    input_tensor_k: Tensor,
    input_tensor_v: Tensor,
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
    share_cache: bool | None = None,
) -> Tensor:
    """Q [1, B, nh, hd] over unpaged K/V [B, nkv, S, hd]: causal, user b attends over its positions 0..cur_pos[b]
    inclusive (cur_pos_tensor when given, else the cur_pos list; -1 in the tensor skips the user, whose rows are left
    unwritten), with an optional sliding window; non-causal, over all S positions with an optional additive attn_mask
    [B, 1, nh, S] (read as the paged op reads it: added to the raw scores before the scale). attention_sink as in the
    paged op. share_cache: one K/V of batch 1 for every user (the output then has K's batch, as 0.81.1's
    compute_output_specs gives it). The math is the paged op's (_attend)."""
    op = "transformer.scaled_dot_product_attention_decode"
    q, k, v = input_tensor_q, input_tensor_k, input_tensor_v
    positions = list(cur_pos or [])
    if any(not isinstance(p, int) or p < 0 or p >= 1 << 32 for p in positions):
        # 0.81.1's binding takes cur_pos as a list of uint32: nanobind refuses anything else before the op runs.
        raise TypeError(f"ttnn.{op}(): incompatible function arguments (cur_pos must be a list of uint32, got "
                        f"{positions})")
    out_mc = memory_config or DRAM_MEMORY_CONFIG
    mask, sink = attn_mask, attention_sink
    _validate_unpaged(q, k, v, positions, cur_pos_tensor, mask, sink, is_causal, out_mc, program_config, share_cache)
    dev = q.device_or_none
    sdpa_cb.check(op, dev, sdpa_cb.decode_bytes(
        q, k, v, k.shape[-1], _padded(k)[0], paged=False, mla=False, program_config=program_config,
        kernel=compute_kernel_config, grid=sdpa_cb.grid_of(program_config, dev), causal=is_causal, pages=0,
        out_sharded=out_mc.is_sharded(), window=sliding_window_size, sink=sink is not None,
        positions_tensor=cur_pos_tensor is not None))
    users = _padded(k)[0]  # compute_output_specs: the output's batch is K's
    return unpaged_decode(q, k, v, None, positions, cur_pos_tensor, mask, sink, users, is_causal, scale,
                          sliding_window_size, out_mc, share_cache=bool(share_cache))


def unpaged_decode(q: Tensor, k: Tensor, v: Tensor | None, head_dim_v: int | None, positions: list[int],
                   cur_pos_tensor: Tensor | None, mask: Tensor | None, sink: Tensor | None, users: int,
                   is_causal: bool, scale: float | None, sliding_window_size: int | None, out_mc: MemoryConfig, *,
                   share_cache: bool = False) -> Tensor:
    """The unpaged decode kernel after validation, shared with multi-latent attention (ttnn_sim.mla): causal, user
    b attends over its positions 0..cur_pos[b] inclusive (cur_pos_tensor when given, else the positions list; -1
    in the tensor skips the user, whose rows are left unwritten), with an optional sliding window; non-causal, over
    all S positions with an optional additive mask [B, 1, nh, S] (read as the paged op reads it: added to the raw
    scores before the scale). v None reads the values from K, its first head_dim_v columns in whole tiles, as
    paged_decode does. The math is the paged op's (_attend)."""
    nkv, s, hd = k.shape[1], k.shape[2], k.shape[3]
    nh = q.shape[2]
    pnh = _padded(q)[2]
    g = nh // nkv
    sc = scale if scale is not None else 1.0 / math.sqrt(hd)
    dv = hd if head_dim_v is None else head_dim_v
    dv_read = dv // TILE_SIZE * TILE_SIZE if v is None else dv
    mask_geometry = (_padded(mask), mask.layout == Layout.TILE) if mask is not None else None
    sink_padded = _padded(sink) if sink is not None else None
    list_pos = torch.tensor(positions[:users] if positions else [0], dtype=torch.int64)

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor | None, cp: torch.Tensor | None,
                mm: torch.Tensor | None, ss: torch.Tensor | None) -> torch.Tensor:
        dt = torch.float32 if torch.float32 in (qq.dtype, kk.dtype) else torch.bfloat16
        live, n = None, users
        if is_causal:
            pos = cp.reshape(-1)[:users].to(torch.int64) if cp is not None else list_pos
            lo, top = (int(x) for x in torch.aminmax(pos))
            if top < 0:
                return torch.full((1, users, nh, dv), float("nan"))
            if lo < 0:
                live = pos >= 0
                n = int(torch.nonzero(live)[-1]) + 1
                live, pos = live[:n], pos[:n].clamp(min=0)
                if bool(live.all()):
                    live = None
            # Only the 32-row tiles up to the furthest position are read, as the kernel walks K/V chunk by chunk.
            t = min(s, (top // TILE_SIZE + 1) * TILE_SIZE)
            kpos = torch.arange(t)
            allowed = kpos <= pos[:, None]
            if sliding_window_size is not None:
                allowed &= kpos > pos[:, None] - sliding_window_size
            allowed = allowed[:, None, None, :]
        else:
            t = s
            kpos = torch.arange(t)
            allowed = torch.ones(1, t, dtype=torch.bool)
            if sliding_window_size:
                allowed &= kpos > s - 1 - sliding_window_size
            allowed = allowed[:, None, None, :]
        kb = kk[:1].expand(n, -1, -1, -1) if share_cache else kk[:n]
        keys = kb[:, :, :t]
        if vv is None:  # multi-latent attention: V is the first columns of each cached row
            vals = keys[..., :dv_read]
        else:
            vals = (vv[:1].expand(n, -1, -1, -1) if share_cache else vv[:n])[:, :, :t]
        qg = qq[:, :n].reshape(n, nkv, g, hd)
        rows = None
        if mm is not None:
            rows = _mask_rows(mm, mask_geometry[0], mask_geometry[1], n, pnh, t)[:, :nh]
        sinks = _tile_padded(ss.float(), sink_padded)[:nh, 0] if ss is not None else None
        res = _finish(_attend(qg, keys, vals, allowed, rows, sinks, sc, dt), live, users, nh, dv_read)
        if dv_read < dv:  # columns past V's last whole tile: never written
            res = torch.nn.functional.pad(res, (0, dv - dv_read), value=float("nan"))
        return res

    shards = per_device(compute, q, k, v, cur_pos_tensor if is_causal else None, mask, sink)
    return output(q, shards, q.dtype, q.layout, out_mc)


def paged_decode(op: str, q: Tensor, kc: Tensor, vc: Tensor | None, head_dim_v: int | None, page_table: Tensor,
                 cur_pos: Tensor | None, mask: Tensor | None, sink: Tensor | None, users: int, is_causal: bool,
                 scale: float | None, sliding_window_size: int | None, out_mc: MemoryConfig, modulo: int | None = None,
                 spec: int = 0) -> Tensor:
    """The paged decode kernel after validation, shared with multi-latent attention (ttnn_sim.mla): vc None reads
    the values from the key cache, its first head_dim_v columns (whole tiles of them: the kernel counts V's width in
    tiles, so columns past the last whole tile are left unwritten, NaN here)."""
    nb, nkv, bs, hd = kc.shape
    if bs % TILE_SIZE:
        raise TTError(op, f"the simulator models whole-tile cache blocks only (block_size {bs})")
    nh = q.shape[2]
    pnh = _padded(q)[2]
    sc = scale if scale is not None else 1.0 / math.sqrt(hd)
    width = page_table.shape[1]
    span_len = width * bs
    g = nh // nkv
    tiles_per_block = bs // TILE_SIZE
    spans: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
    mask_geometry = (_padded(mask), mask.layout == Layout.TILE) if mask is not None else None
    sink_padded = _padded(sink) if sink is not None else None
    dv = hd if head_dim_v is None else head_dim_v
    dv_read = dv // TILE_SIZE * TILE_SIZE  # V's width in whole tiles, as the kernel counts it

    def span(ntiles: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For the first ntiles tiles of a user's history: each tile's logical block, its row offset in the
        [blocks * heads * tiles, 32 * hd] view of the cache (per kv head) relative to its block, and the key
        positions they hold. With cache_position_modulo the tile index wraps first: position p is read from slot
        p % modulo, however often the range wraps."""
        if ntiles not in spans:
            tiles = torch.arange(ntiles)
            if modulo:
                tiles = tiles % (modulo // TILE_SIZE)
            offset = torch.arange(nkv)[:, None] * tiles_per_block + tiles % tiles_per_block
            spans[ntiles] = (tiles // tiles_per_block, offset[None], torch.arange(ntiles * TILE_SIZE))
        return spans[ntiles]

    def gather(pt: torch.Tensor, ntiles: int, live: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        block_of, offset, kpos = span(ntiles)
        if int(block_of.max()) >= width:  # the device reads past the row's page-table entries
            raise TTError(op, f"positions up to {ntiles * TILE_SIZE - 1} need block {int(block_of.max())}; the page "
                              f"table has {width} columns")
        blocks = pt[:, block_of]
        if live is not None:
            blocks = blocks * live[:, None]  # an empty slot reads block 0; its rows are discarded
        check_blocks(op, blocks, nb)
        # One gather from the [blocks * heads * tiles, 32 * hd] view lands each head's history contiguously.
        return (blocks[:, None, :] * (nkv * tiles_per_block) + offset).reshape(-1), kpos

    def plan(pt: torch.Tensor, cp: torch.Tensor | None) -> tuple | None:
        """Gather index of every user's K/V tiles, the attention mask and the live users (None: no live user)."""
        if cp is None:  # non-causal: every position of the row's span (the window ending at its last position)
            idx, kpos = gather(pt, span_len // TILE_SIZE, None)
            allowed = torch.ones(1, kpos.numel(), dtype=torch.bool)
            if sliding_window_size:
                allowed &= kpos > span_len - 1 - sliding_window_size
            return idx, kpos.numel(), allowed[:, None, None, :], None, users
        if spec:
            # Row tile j of user b (heads 32j..32j+31) is bounded by cur_pos[b * T + j]; the group's last entry sets
            # the scan range (and -1 there skips the user).
            bounds = cp.reshape(-1)[: users * spec].reshape(users, spec).long()
            pos = bounds[:, -1]
            rows = bounds[:, torch.arange(nh) // TILE_SIZE]  # [users, nh]
        else:
            pos = cp.reshape(-1)[:users]
        lo, top = (int(v) for v in torch.aminmax(pos))
        if top < 0:
            return None
        live = None
        n = users
        if lo < 0:
            live = pos >= 0
            # Users past the last live one are left out: their rows are undefined whatever is computed.
            n = int(torch.nonzero(live)[-1]) + 1
            live, pos, pt = live[:n], pos[:n].clamp(min=0), pt[:n]
            if spec:
                rows = rows[:n]
            if bool(live.all()):
                live = None
        # Only the 32-row tiles up to the furthest position are read, as the kernel walks K/V chunk by chunk.
        idx, kpos = gather(pt, top // TILE_SIZE + 1, live)
        if spec:
            return idx, kpos.numel(), (kpos <= rows.clamp(min=0)[..., None])[:, None], live, n
        allowed = kpos <= pos[:, None]
        if sliding_window_size is not None:
            allowed &= kpos > pos[:, None] - sliding_window_size
        return idx, kpos.numel(), allowed[:, None, None, :], live, n

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, pt: torch.Tensor, cp: torch.Tensor | None,
                mm: torch.Tensor | None, ss: torch.Tensor | None) -> torch.Tensor:
        cp = cp if is_causal else None
        # Every layer reads through the same table at the same positions: planned once per version of the two.
        key = f"sdpa_decode:{nb},{nkv},{bs},{users},{sliding_window_size},{is_causal},{modulo},{spec},{nh}"
        p = derived_from(key, (pt, cp), lambda: plan(pt, cp))
        if p is None:
            return torch.full((1, users, nh, dv), float("nan"))
        idx, t, allowed, live, n = p
        # bf16 operands with fp32 scores and softmax, probabilities rounded to bf16 for the PV product, as the
        # device's kernel keeps them in bf16 circular buffers (fp32 throughout only at reference precision).
        dt = torch.float32 if torch.float32 in (qq.dtype, kk.dtype) else torch.bfloat16
        if vv is None:  # multi-latent attention: V is the first columns of each cached row
            keys = kk.reshape(-1, TILE_SIZE * hd).index_select(0, idx).view(n, nkv, t, hd)
            vals = keys[..., :dv_read]
        else:  # V's rows have its own width (head_dim_v for an explicit MLA V)
            keys, vals = (c.reshape(-1, TILE_SIZE * c.shape[-1]).index_select(0, idx).view(n, nkv, t, c.shape[-1])
                          for c in (kk, vv))
        qg = qq[:, :n].reshape(n, nkv, g, hd)  # the g query heads sharing a kv head, as g rows of one head
        rows = None
        if mm is not None:
            rows = _mask_rows(mm, mask_geometry[0], mask_geometry[1], users, pnh, t)[:n, :nh]
        sinks = _tile_padded(ss.float(), sink_padded)[:nh, 0] if ss is not None else None
        res = _finish(_attend(qg, keys, vals, allowed, rows, sinks, sc, dt), live, users, nh, dv_read)
        if dv_read < dv:  # columns past V's last whole tile: never written
            res = torch.nn.functional.pad(res, (0, dv - dv_read), value=float("nan"))
        return res

    shards = per_device(compute, q, kc, vc, page_table, cur_pos if is_causal else None, mask, sink)
    return output(q, shards, q.dtype, q.layout, out_mc)
