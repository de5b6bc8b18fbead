"""paged_scaled_dot_product_attention_decode: each user's query attends over its positions 0..cur_pos inclusive,
read from the paged K/V caches through its page-table row.

Q [1, B, heads, hd] (heads padded to 32 in TILE) in DRAM or height-sharded; K/V caches in DRAM. The batch is the page
table's row count. Rows of users at position -1 are skipped by the device and left unwritten: here they read as NaN,
so no caller can rely on them.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .compute import derived_from, output, per_device, reference_precision
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, BufferType, MemoryConfig, TensorMemoryLayout
from .paged import check_blocks
from .program_configs import SDPAProgramConfig
from .rules import rules
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
GRID_FITS = R("Cores available ({}) exceeds grid size ({})", "sdpa-decode/grid-9x9", "sdpa-decode/grid-8x8",
              source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")
GRID_BATCH = R("Cores available ({}) must be >= batch size ({})", "sdpa-decode/grid-4x4", "sdpa-decode/grid-8x4",
               source="transformer/sdpa_decode/device/sdpa_decode_program_factory.cpp")


def _validate(q: Tensor, kc: Tensor, vc: Tensor, pt: Tensor, cur_pos: Tensor | None, attn_mask: Any,
              is_causal: bool, out_mc: MemoryConfig, program_config: Any) -> int:
    for t in (q, kc, vc, pt, cur_pos):
        ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    for t in (q, kc, vc):
        DTYPE.require(t.dtype in _DTYPES or reference_precision(t), f"DataType::{t.dtype.name}")
    KV_TILE.require(kc.layout == Layout.TILE and vc.layout == Layout.TILE)
    qmc = q.memory_config()
    if q.layout == Layout.ROW_MAJOR:
        RM_Q_SHARDED.require(qmc.memory_layout == _HS and qmc.buffer_type == BufferType.L1)
        RM_Q_OUTPUT.require(out_mc.memory_layout == _HS, f"TensorMemoryLayout::{out_mc.memory_layout.name}")
        # The output is staged a tile row at a time in a circular buffer placed on the output shard itself.
        if out_mc.shard_spec is not None:
            sh, sw = out_mc.shard_spec.shape
            cb, shard_bytes = (sw // TILE_SIZE) * 2048, sh * sw * 2
            RM_Q_CB.require(cb <= shard_bytes, cb, shard_bytes)
    if qmc.is_sharded():
        Q_SHARDED_HS.require(qmc.memory_layout == _HS, f"TensorMemoryLayout::{qmc.memory_layout.name}")
    else:
        Q_DRAM.require(qmc.buffer_type == BufferType.DRAM, f"BufferType::{qmc.buffer_type.name}")
    for i, t in ((1, kc), (2, vc)):
        bt = t.memory_config().buffer_type
        KV_DRAM.require(bt == BufferType.DRAM, i, f"BufferType::{bt.name}")
    if out_mc.is_sharded():
        OUT_HS.require(out_mc.memory_layout == _HS, f"TensorMemoryLayout::{out_mc.memory_layout.name}")
    if is_causal:
        CAUSAL_NO_MASK.require(attn_mask is None)
        CUR_POS_NEEDED.require(cur_pos is not None)
    users = pt.shape[0]
    if cur_pos is not None:
        CUR_POS_INT32.require(cur_pos.dtype == DataType.INT32, f"DataType::{cur_pos.dtype.name}")
        padded = cur_pos.padded_shape
        CUR_POS_LAST_DIM.require(all(d == 1 for d in padded[:-1]), padded)
        CUR_POS_RM.require(cur_pos.layout == Layout.ROW_MAJOR, f"Layout::{cur_pos.layout.name}")
        if not cur_pos.is_sharded():
            CUR_POS_BATCH.require(padded[-1] == users, padded[-1], users)
    PT_INT32.require(pt.dtype == DataType.INT32)
    PT_RM.require(pt.layout == Layout.ROW_MAJOR, f"Layout::{pt.layout.name}")
    SAME_BLOCK.require(kc.shape[2] == vc.shape[2])
    SAME_HIDDEN.require(kc.shape[-1] == q.shape[-1] and vc.shape[-1] == q.shape[-1])
    if program_config is not None and program_config.k_chunk_size:
        k = program_config.k_chunk_size
        K_CHUNK_POW2.require(k & (k - 1) == 0, k)
        K_CHUNK_32.require(k % TILE_SIZE == 0, k)
    nkv = kc.shape[1]
    SAME_HEADS.require(nkv == vc.shape[1], nkv, vc.shape[1])
    if nkv > 1:
        GQA_NO_SHARDED_OUT.require(not out_mc.is_sharded())
        GQA_BF16_Q.require(q.dtype == DataType.BFLOAT16 or reference_precision(q), f"DataType::{q.dtype.name}")
        GQA_MULTIPLE.require(q.shape[2] % nkv == 0, q.shape[2], nkv)
    if program_config is not None:
        g = program_config.compute_with_storage_grid_size
        gx, gy = q.device_or_none.chip.grid
        GRID_FITS.require(g.x * g.y <= gx * gy, g.x * g.y, gx * gy)
        GRID_BATCH.require(g.x * g.y >= users, g.x * g.y, users)
    return users


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
    """Q [1, B, nh, hd] attends over its user's positions 0..cur_pos inclusive; a user at -1 gets undefined rows."""
    op = "transformer.paged_scaled_dot_product_attention_decode"
    q, kc, vc = input_tensor_q, input_tensor_k, input_tensor_v
    out_mc = memory_config or DRAM_MEMORY_CONFIG
    users = _validate(q, kc, vc, page_table_tensor, cur_pos_tensor, attn_mask, is_causal, out_mc, program_config)
    refuse_options(op, attn_mask=attn_mask is not None, attention_sink=attention_sink,
                   paged_cache_geometry=paged_cache_geometry, cache_position_modulo=cache_position_modulo,
                   spec_multi_pos_tiles=spec_multi_pos_tiles, non_causal=not is_causal)
    nb, nkv, bs, hd = kc.shape
    nh = q.shape[2]
    sc = scale if scale is not None else 1.0 / math.sqrt(hd)
    width = page_table_tensor.shape[1]
    g = nh // nkv
    tiles_per_block = bs // TILE_SIZE
    spans: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def span(ntiles: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For the first ntiles tiles of a user's history: each tile's logical block, its row offset in the
        [blocks * heads * tiles, 32 * hd] view of the cache (per kv head) relative to its block, and the key
        positions they hold."""
        if ntiles not in spans:
            tiles = torch.arange(ntiles)
            offset = torch.arange(nkv)[:, None] * tiles_per_block + tiles % tiles_per_block
            spans[ntiles] = (tiles // tiles_per_block, offset[None], torch.arange(ntiles * TILE_SIZE))
        return spans[ntiles]

    def plan(pt: torch.Tensor, cp: torch.Tensor) -> tuple | None:
        """Gather index of every user's K/V tiles, the attention mask and the live users (None: no live user)."""
        pos = cp.reshape(-1)[:users]
        lo, top = (int(v) for v in torch.aminmax(pos))
        if top < 0:
            return None
        if top // bs >= width:
            raise TTError(op, f"position {top} needs block {top // bs}; the page table has {width} columns")
        # Only the 32-row tiles up to the furthest position are read, as the kernel walks K/V chunk by chunk.
        block_of, offset, kpos = span(top // TILE_SIZE + 1)
        blocks = pt[:, block_of]
        live = None
        if lo < 0:
            live = pos >= 0
            blocks = blocks * live[:, None]  # an empty slot reads block 0; its rows are discarded below
            pos = pos.clamp(min=0)
        check_blocks(op, blocks, nb)
        # One gather from the [blocks * heads * tiles, 32 * hd] view lands each head's history contiguously.
        idx = (blocks[:, None, :] * (nkv * tiles_per_block) + offset).reshape(-1)
        allowed = kpos <= pos[:, None]
        if sliding_window_size is not None:
            allowed &= kpos > pos[:, None] - sliding_window_size
        return idx, kpos.numel(), allowed[:, None, None, :], live

    def compute(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, pt: torch.Tensor,
                cp: torch.Tensor) -> torch.Tensor:
        # Every layer reads through the same table at the same positions: planned once per version of the two.
        p = derived_from(f"sdpa_decode:{nb},{nkv},{bs},{users},{sliding_window_size}", (pt, cp), lambda: plan(pt, cp))
        if p is None:
            return torch.full((1, users, nh, hd), float("nan"))
        idx, t, allowed, live = p
        # bf16 operands with fp32 scores and softmax, probabilities rounded to bf16 for the PV product, as the
        # device's kernel keeps them in bf16 circular buffers (fp32 throughout only at reference precision).
        dt = torch.float32 if torch.float32 in (qq.dtype, kk.dtype) else torch.bfloat16
        keys, vals = (c.reshape(-1, TILE_SIZE * hd).index_select(0, idx).view(users, nkv, t, hd) for c in (kk, vv))
        if keys.dtype != dt:
            keys, vals = keys.to(dt), vals.to(dt)
        # The g query heads sharing a kv head attend as g "rows" of one head: no kv repetition needed.
        res = torch.nn.functional.scaled_dot_product_attention(
            qq[:, :users].reshape(users, nkv, g, hd).to(dt), keys, vals, attn_mask=allowed, scale=sc)
        res = res.view(1, users, nh, hd)
        if live is not None:  # skipped users: the device leaves their rows unwritten
            res = res.masked_fill(~live[None, :, None, None], float("nan"))
        return res

    shards = per_device(compute, q, kc, vc, page_table_tensor, cur_pos_tensor)
    return output(q, shards, q.dtype, q.layout, out_mc)

