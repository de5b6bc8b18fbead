"""Paged KV-cache ops: fill (prefill), update (decode) and decode attention over the paged cache.

Cache [num_blocks, n_kv_heads, block_size, head_dim]; page_table [users, blocks_per_user] int32 row-major maps a
user's logical block i to a physical block. Position p of user b lives at
cache[page_table[b, p // block_size], :, p % block_size, :]. A position of -1 marks an empty decode slot: update
skips it and attention returns zeros for it.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .compute import derived_from, output, per_device, per_device_write
from .errors import TTError, refuse_options
from .memory import MemoryConfig
from .tensor import Tensor, require_device, require_dtype, require_layout, store_as
from .trace import DuringCapture, device_op
from .types import FLOAT_TYPES, TILE_SIZE, DataType, Layout


def require_page_table(op: str, page_table: Tensor) -> None:
    if page_table.dtype != DataType.INT32:
        raise TTError(op, f"page table must be int32, got {page_table.dtype.name.lower()}")
    require_layout(op, "page table", page_table, Layout.ROW_MAJOR)
    if page_table.shape.rank != 2:
        raise TTError(op, f"page table must be 2-D [users, blocks], got {tuple(page_table.shape)}")


def _require_cache(op: str, cache: Tensor) -> tuple[int, int, int, int]:
    require_layout(op, "cache", cache, Layout.TILE)
    require_dtype(op, "cache", cache, FLOAT_TYPES)
    if cache.shape.rank != 4:
        raise TTError(op, f"cache must be [num_blocks, n_kv_heads, block_size, head_dim], got {tuple(cache.shape)}")
    nblocks, nkv, bs, hd = cache.shape
    if bs % TILE_SIZE or hd % TILE_SIZE:
        raise TTError(op, f"block_size {bs} and head_dim {hd} must be multiples of {TILE_SIZE}")
    return nblocks, nkv, bs, hd


def _require_positions(op: str, name: str, pos: Tensor, users: int) -> None:
    require_dtype(op, name, pos, (DataType.INT32,))
    if pos.volume() != users:
        raise TTError(op, f"{name} holds {pos.volume()} positions for {users} users")


def gather_pages(cache: torch.Tensor, page_rows: torch.Tensor) -> torch.Tensor:
    """[num_blocks, nkv, bs, hd] gathered by [b, n] block ids -> contiguous [b, nkv, n * bs, hd]."""
    b, n = page_rows.shape
    nblocks, nkv, bs, hd = cache.shape
    # One gather of (block, head) pages from the [blocks * heads, page] view lands each head's history contiguous.
    pages = page_rows.long()[:, None, :] * nkv + torch.arange(nkv)[None, :, None]
    return cache.reshape(nblocks * nkv, bs * hd).index_select(0, pages.reshape(-1)).view(b, nkv, n * bs, hd)


def _check_blocks(op: str, blocks: torch.Tensor, num_blocks: int) -> None:
    if not blocks.numel():
        return
    lo, hi = (int(v) for v in torch.aminmax(blocks))
    if lo < 0 or hi >= num_blocks:
        raise TTError(op, f"page table points at block {hi} / {lo}, cache has {num_blocks}")


@device_op(DuringCapture.SKIP)
def paged_fill_cache(
    cache_tensor: Tensor,
    input_tensor: Tensor,
    page_table: Tensor,
    *,
    batch_idx_tensor: Tensor | None = None,
    batch_idx: int = 0,
    compute_kernel_config: Any = None,
    mesh_coords: Any = None,
    block_size: int | None = None,
    cache_position_modulo: int | None = None,
    valid_seq_len_tensor: Tensor | None = None,
) -> None:
    """Copy a user's prompt K or V [1, nkv, S, hd] into its pages, tile by tile (tile padding included)."""
    op = "experimental.paged_fill_cache"
    require_device(op, cache_tensor, input_tensor, page_table, batch_idx_tensor)
    refuse_options(op, mesh_coords=mesh_coords, block_size=block_size, cache_position_modulo=cache_position_modulo,
                   valid_seq_len_tensor=valid_seq_len_tensor)
    nb, nkv, bs, hd = _require_cache(op, cache_tensor)
    require_layout(op, "input", input_tensor, Layout.TILE)
    require_page_table(op, page_table)
    if input_tensor.dtype != cache_tensor.dtype:
        raise TTError(op, f"input dtype {input_tensor.dtype.name.lower()} must equal the cache dtype "
                          f"{cache_tensor.dtype.name.lower()} (this op copies tiles; typecast first)")
    if input_tensor.shape.rank != 4 or input_tensor.shape[0] != 1 or tuple(input_tensor.shape[1::2]) != (nkv, hd):
        raise TTError(op, f"input must be [1, {nkv}, S, {hd}], got {tuple(input_tensor.shape)}")
    seq = input_tensor.padded_shape[2]
    if -(-seq // bs) > page_table.shape[1]:
        raise TTError(op, f"{seq} rows need {-(-seq // bs)} blocks; the page table has {page_table.shape[1]}")
    pos = torch.arange(seq)
    for cache, x, pt, bi in zip(cache_tensor._shards, input_tensor._shards, page_table._shards,
                                batch_idx_tensor._shards if batch_idx_tensor is not None
                                else [None] * cache_tensor.num_shards, strict=True):
        row = int(bi.reshape(-1)[0]) if bi is not None else batch_idx
        if not 0 <= row < pt.shape[0]:
            raise TTError(op, f"batch_idx {row} outside the page table's {pt.shape[0]} rows")
        blocks = pt[row, pos // bs].long()
        _check_blocks(op, blocks, nb)
        rows = x[0].transpose(0, 1)  # [S, nkv, hd]
        if rows.shape[0] < seq:  # tile padding is written too, as zeros
            rows = torch.nn.functional.pad(rows, (0, 0, 0, 0, 0, seq - rows.shape[0]))
        cache[blocks, :, pos % bs, :] = rows


def _check_update_input(op: str, input_tensor: Tensor, nkv: int, hd: int) -> int:
    require_layout(op, "input", input_tensor, Layout.TILE)
    require_dtype(op, "input", input_tensor, (DataType.BFLOAT16, DataType.FLOAT32))
    if input_tensor.shape.rank != 4 or input_tensor.shape[0] != 1 or input_tensor.shape[-1] != hd \
            or input_tensor.shape[2] < nkv:
        raise TTError(op, f"input must be [1, B, {nkv}, {hd}], got {tuple(input_tensor.shape)}")
    return input_tensor.shape[1]


def _update_plan(op: str, cache_tensor: Tensor, inputs: list[Tensor], update_idxs: list[int] | None,
                 update_idxs_tensor: Tensor | None, page_table: Tensor | None, batch_offset: int) -> Any:
    """Check a decode cache update's arguments; return the per-device write: (caches..., inputs..., idx, pt)."""
    nb, nkv, bs, hd = _require_cache(op, cache_tensor)
    users = {_check_update_input(op, x, nkv, hd) for x in inputs}
    if len(users) != 1:
        raise TTError(op, f"inputs hold different numbers of users: {sorted(users)}")
    (users,) = users
    if page_table is not None:
        require_page_table(op, page_table)
        if page_table.shape[0] < batch_offset + users:
            raise TTError(op, f"page table has {page_table.shape[0]} rows for {users} users")
    if update_idxs_tensor is not None:
        _require_positions(op, "update_idxs_tensor", update_idxs_tensor, users)
        idx: Any = update_idxs_tensor
    elif update_idxs:
        if len(update_idxs) != users:
            raise TTError(op, f"update_idxs has {len(update_idxs)} entries for {users} users")
        idx = torch.tensor(update_idxs, dtype=torch.int64)  # host list: fixed when the op is issued
    else:
        raise TTError(op, "needs update_idxs or update_idxs_tensor")
    all_slots = torch.arange(batch_offset, batch_offset + users)
    dtype = cache_tensor.dtype

    def where_to(positions: torch.Tensor, pt: torch.Tensor | None) -> tuple | None:
        """Cache coordinates of each live user's new row (None: no live user), checked against the cache."""
        positions = positions.reshape(-1)
        lo, hi = (int(v) for v in torch.aminmax(positions))
        if hi < 0:
            return None
        if lo >= 0:  # every slot live: no index compaction needed
            live, p, slots = slice(None), positions.long(), all_slots
        else:
            live = (positions >= 0).nonzero().reshape(-1)
            p, slots = positions[live].long(), live + batch_offset
        if pt is None:  # unpaged cache [B, nkv, max_seq, hd]
            if hi >= bs:
                raise TTError(op, f"position {hi} beyond the cache length {bs}")
            return live, (slots, slice(None), p, slice(None))
        if hi // bs >= pt.shape[1]:
            raise TTError(op, f"position {hi} needs block {hi // bs}; the page table has {pt.shape[1]} columns")
        blocks = pt[slots, p // bs].long()
        _check_blocks(op, blocks, nb)
        return live, (blocks, slice(None), p % bs, slice(None))

    def write(*bufs: torch.Tensor) -> None:
        n = len(inputs)
        caches, xs, positions, pt = bufs[:n], bufs[n : 2 * n], bufs[2 * n], bufs[2 * n + 1]
        # Every layer writes at the same positions through the same table: planned once per version of the two.
        plan = derived_from(f"update:{nb},{bs},{batch_offset},{users}", (positions, pt),
                            lambda: where_to(positions, pt))
        if plan is None:
            return
        live, where = plan
        for cache, x in zip(caches, xs, strict=True):
            rows = x[0] if isinstance(live, slice) and x.shape[2] == nkv else x[0, live, :nkv, :]
            cache[where] = store_as(rows, dtype)

    return write, idx


@device_op(DuringCapture.SKIP, kernel_replay=True)
def paged_update_cache(
    cache_tensor: Tensor,
    input_tensor: Tensor,
    *,
    update_idxs: list[int] | None = None,
    update_idxs_tensor: Tensor | None = None,
    share_cache: bool | None = None,
    page_table: Tensor | None = None,
    batch_offset: int = 0,
    compute_kernel_config: Any = None,
    mesh_coords: Any = None,
    block_size: int | None = None,
    num_kv_heads: int | None = None,
    cache_position_modulo: int | None = None,
) -> None:
    """Write one new K or V row per user ([1, B, nkv, hd]) at that user's position, re-packed into the cache dtype."""
    op = "experimental.paged_update_cache"
    require_device(op, cache_tensor, input_tensor, update_idxs_tensor, page_table)
    refuse_options(op, share_cache=share_cache, mesh_coords=mesh_coords, block_size=block_size,
                   num_kv_heads=num_kv_heads, cache_position_modulo=cache_position_modulo)
    write, idx = _update_plan(op, cache_tensor, [input_tensor], update_idxs, update_idxs_tensor, page_table,
                              batch_offset)
    per_device_write(write, cache_tensor, input_tensor, idx, page_table)


@device_op(DuringCapture.SKIP, kernel_replay=True)
def paged_fused_update_cache(
    cache_tensor1: Tensor,
    input_tensor1: Tensor,
    cache_tensor2: Tensor,
    input_tensor2: Tensor,
    *,
    update_idxs: list[int] | None = None,
    update_idxs_tensor: Tensor | None = None,
    share_cache: bool | None = None,
    page_table: Tensor | None = None,
    batch_offset: int = 0,
    compute_kernel_config: Any = None,
    mesh_coords: Any = None,
) -> None:
    """paged_update_cache of two caches (K and V) at the same positions through the same page table, in one op."""
    op = "experimental.paged_fused_update_cache"
    require_device(op, cache_tensor1, input_tensor1, cache_tensor2, input_tensor2, update_idxs_tensor, page_table)
    refuse_options(op, share_cache=share_cache, mesh_coords=mesh_coords)
    if tuple(cache_tensor1.shape) != tuple(cache_tensor2.shape) or cache_tensor1.dtype != cache_tensor2.dtype:
        raise TTError(op, f"caches differ: {tuple(cache_tensor1.shape)} {cache_tensor1.dtype.name.lower()} vs "
                          f"{tuple(cache_tensor2.shape)} {cache_tensor2.dtype.name.lower()}")
    write, idx = _update_plan(op, cache_tensor1, [input_tensor1, input_tensor2], update_idxs, update_idxs_tensor,
                              page_table, batch_offset)
    per_device_write(write, cache_tensor1, cache_tensor2, input_tensor1, input_tensor2, idx, page_table)


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
    program_config: Any = None,
    compute_kernel_config: Any = None,
    paged_cache_geometry: Any = None,
    cache_position_modulo: int | None = None,
    spec_multi_pos_tiles: Any = None,
) -> Tensor:
    """Q [1, B, nh, hd] attends over its user's positions 0..cur_pos inclusive; a user at -1 gets zeros."""
    op = "transformer.paged_scaled_dot_product_attention_decode"
    q, kc, vc = input_tensor_q, input_tensor_k, input_tensor_v
    require_device(op, q, kc, vc, cur_pos_tensor, page_table_tensor)
    refuse_options(op, attn_mask=attn_mask is not None, attention_sink=attention_sink,
                   paged_cache_geometry=paged_cache_geometry, cache_position_modulo=cache_position_modulo,
                   spec_multi_pos_tiles=spec_multi_pos_tiles, non_causal=not is_causal)
    require_layout(op, "q", q, Layout.TILE)
    nb, nkv, bs, hd = _require_cache(op, kc)
    if tuple(vc.shape) != tuple(kc.shape) or vc.dtype != kc.dtype:
        raise TTError(op, "k and v caches must have the same shape and dtype")
    require_page_table(op, page_table_tensor)
    if q.shape.rank != 4 or q.shape[0] != 1 or q.shape[-1] != hd:
        raise TTError(op, f"q must be [1, B, nh, {hd}], got {tuple(q.shape)}")
    users, nh = q.shape[1], q.shape[2]
    if nh % nkv:
        raise TTError(op, f"{nh} query heads are not a multiple of {nkv} kv heads")
    if page_table_tensor.shape[0] != users:
        raise TTError(op, f"page table has {page_table_tensor.shape[0]} rows for {users} users")
    if cur_pos_tensor is None:
        raise TTError(op, "cur_pos_tensor is required with a paged cache")
    _require_positions(op, "cur_pos_tensor", cur_pos_tensor, users)
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
        pos = cp.reshape(-1)
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
            blocks = blocks * live[:, None]  # an empty slot reads block 0; zeroed below
            pos = pos.clamp(min=0)
        _check_blocks(op, blocks, nb)
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
            return torch.zeros(1, users, nh, hd)
        idx, t, allowed, live = p
        # fp32 anywhere -> fp32 math; otherwise bf16 operands with fp32 scores and softmax, probabilities rounded
        # to bf16 for the PV product, as the device's kernel keeps them in bf16 circular buffers.
        dt = torch.float32 if torch.float32 in (qq.dtype, kk.dtype) else torch.bfloat16
        keys, vals = (c.reshape(-1, TILE_SIZE * hd).index_select(0, idx).view(users, nkv, t, hd) for c in (kk, vv))
        if keys.dtype != dt:
            keys, vals = keys.to(dt), vals.to(dt)
        # The g query heads sharing a kv head attend as g "rows" of one head: no kv repetition needed.
        res = torch.nn.functional.scaled_dot_product_attention(
            qq.reshape(users, nkv, g, hd).to(dt), keys, vals, attn_mask=allowed, scale=sc)
        res = res.view(1, users, nh, hd)
        if live is not None:
            res = res * live[None, :, None, None]
        return res

    return output(q, per_device(compute, q, kc, vc, page_table_tensor, cur_pos_tensor),
                  DataType.FLOAT32 if q.dtype == DataType.FLOAT32 else DataType.BFLOAT16, Layout.TILE, memory_config)
