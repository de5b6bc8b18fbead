"""Paged KV-cache writes: paged_fill_cache (a prompt's K or V, prefill), paged_update_cache and
paged_fused_update_cache (one new row per user, decode). Each works in place and returns the cache.

Cache [num_blocks, n_kv_heads, block_size, head_dim] TILE, interleaved; page_table [users, blocks_per_user] int32
row-major maps a user's logical block i to a physical block, so position p of user b lives at
cache[page_table[b, p // block_size], :, p % block_size, :]. Decode inputs come height-sharded, one user per core,
[1, B, heads (padded to 32), head_dim], with positions in an int32 tensor; a position of -1 skips that user.
"""

from __future__ import annotations

from typing import Any

import torch

from .allocator import TILE_BYTES
from .compute import derived_from, per_device_write, reference_precision
from .errors import TTError, refuse_options
from .memory import BufferType, ShardOrientation, TensorMemoryLayout
from .paged import check_blocks
from .rules import rules
from .tensor import Tensor, store_as
from .trace import DuringCapture, device_op
from .types import TILE_SIZE, DataType, Layout, round_up

_IL, _HS, _WS = (TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED,
                 TensorMemoryLayout.WIDTH_SHARDED)
_CACHE_DTYPES = (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B)

U = rules("experimental.paged_update_cache",
          "experimental/paged_cache/device/update_cache/paged_update_cache_device_operation.cpp")
U_ON_DEVICE = U("Operands to update_cache need to be on device!",
                unreachable="ttnn 0.81.1 segfaults on a host input before validating it (measured)")
U_INPUT_TILE = U("Input tensor in non-fused update_cache must be tilized", "update/input-row-major", "update/ok")
U_CACHE_TILE = U("Cache tensor in update_cache must be tilized", "update/cache-row-major", "update/ok")
U_CACHE_DTYPE = U("Data type of cache tensor must be FLOAT32, BFLOAT16, BFLOAT8_B, or BFLOAT4_B and is {}",
                  "update/cache-uint32", "update/cache-bfp4")
U_DIM0 = U("Dim 0 of input tensor must be 1", "update/input-dim0-2", "update/ok")
U_CACHE_INTERLEAVED = U("Only interleaved cache is supported", "update/cache-sharded", "update/cache-l1")
U_GEOMETRY = U("paged_update_cache geometry mismatch: cache has {} elems/block (kv_heads={}, block_size={}, "
               "head_dim={}) but call view is {} (kv_heads={}, block_size={}, head_dim={}).",
               "update/input-hd-32", "update/input-fewer-heads")
U_LAST_DIM_TILE = U("input_tensor last dim ({}) must be a multiple of TILE_WIDTH ({})",
                    unreachable="a sharded input's width is whole tiles, and the geometry rule ties it to the "
                                "cache's head_dim first")
U_NONPAGED_LAST_DIM = U("Last dim of input tensor ({}) must match last dim of cache tensor ({}) in non-paged mode",
                        "update/unpaged-hd-32", "update/unpaged-ok")
U_SHARE_CACHE_BATCH = U("Share cache feature expects cache tensor to have batch of 1", "update/unpaged-share-cache",
                        "update/unpaged-ok")
U_BATCH = U("Expect batch in input tensor match the batch in cache tensor", "update/unpaged-batch-16",
            "update/unpaged-ok")
U_PAGED_SHARE = U("share_cache not supported with paged cache", "update/paged-share-cache", "update/ok")
U_PAGED_TENSOR_IDX = U("Paged cache requires update_idxs tensor", "update/paged-idx-list", "update/ok")
U_PT_DTYPE = U("Expect page table to have datatype INT32", "update/page-table-uint32", "update/ok")
U_PT_LAYOUT = U("Expect page table to have memory layout in ROW MAJOR", "update/page-table-tile", "update/ok")
U_PT_ROWS = U("Batch size between page_table and input_tensor must match", "update/page-table-16-rows", "update/ok")
U_PT_WIDTH = U("max_num_blocks_per_seq must be less than max_num_blocks: max_num_blocks_per_seq={}, "
               "max_num_blocks={}", "update/page-table-too-wide", "update/ok")
U_ONE_IDX_FORM = U("Only an update tensor or an update vector can be provided. Not both or neither.",
                   "update/unpaged-no-idx", "update/unpaged-ok")
U_IDX_DTYPE = U("Expected update_idxs to have datatype INT32", "update/idx-uint32", "update/ok")
U_IDX_LAYOUT = U("Expected update_idxs to have memory layout in ROW MAJOR", "update/idx-tile", "update/ok")
U_IDX_SHARDED_HS = U("Expect update_idxs to be HEIGHT SHARDED if sharded", "update/idx-width-sharded",
                     "update/idx-height-sharded")
U_IDX_DRAM = U("Expect update_idxs to have buffer type DRAM", "update/idx-l1", "update/ok")
U_IDX_COUNT = U("Number of update_idxs ({}) should match batch size ({})", "update/idx-16", "update/unpaged-list-16",
                "update/ok")
U_IDX_SHARDED_COUNT = U("Number of update_idxs ({}) should match batch size ({}) if sharded",
                        "update/idx-height-sharded-2-cores", "update/idx-height-sharded")
U_IDX_SHARDED_CORES = U("Number of cores sharded on L1 ({}) should match dimension of update_idxs at 0 ({})",
                        "update/idx-height-sharded-1-core-2-rows", "update/idx-height-sharded")
U_INPUT_SHARDED = U("Expect input_tensor to be sharded", "update/input-interleaved", "update/input-l1-interleaved",
                    "update/ok")
U_INPUT_NOT_WS = U("Expect input_tensor to NOT have memory layout WIDTH SHARDED", "update/input-width-sharded",
                   "update/ok")
U_INPUT_ROW_MAJOR_SHARDS = U("Only ROW_MAJOR sharding is supported", "update/input-col-major", "update/ok")
U_ONE_USER_PER_CORE = U("Input tensor shard grid must have num_cores ({}) equal to the number of users / batch ({}). "
                        "The kernel dispatches one user per core; use a {{num_users, 1}} grid (or any CoreRangeSet "
                        "whose num_cores == num_users).", "update/input-8-cores", "update/input-offset-grid")
U_INPUT_DTYPE = U("Data type of input tensor for paged_update_cache must be FLOAT32 or BFLOAT16; decode update "
                  "repacks into the cache dtype and should not receive low-precision packed input",
                  "update/input-bfp8", "update/input-fp32-into-bfp8")
U_BATCH_OFFSET = U("batch_offset must be 0", "update/batch-offset-1", "update/ok")
# The program's circular buffers, checked when it is built (tt_metal/impl/program/program.cpp): they grow up from the
# L1 unreserved base and must end within the core's L1 and below the lowest L1 buffer (the sharded inputs sit at the
# top). Sizes measured on the real 0.81.1 (mock N150 and P150, 135 probes to the byte): two cache tiles of the row,
# double-buffered; the row untilized, twice (cache and input, in fp32 tiles with fp32 accumulation); the output: every
# user's cache tiles of the row on each core; the positions and a page-table row.
_CB_SRC = "tt_metal/impl/program/program.cpp"
_CB_BEYOND = "Statically allocated dataflow buffers on core range [{}] grow to {} B which is beyond max L1 size of {} B"
_CB_CLASH = ("Statically allocated dataflow buffers in program {} clash with L1 buffers on core range [{}]. L1 buffer "
             "allocated at {} and static dataflow buffer region ends at {}")
U_CB_BEYOND_L1 = U(_CB_BEYOND, "update/w576-bfloat16", "update/w576-bfloat8_b", source=_CB_SRC)
U_CB_CLASH = U(_CB_CLASH, "update/w544-fp32-input", "update/w544-bfloat16", source=_CB_SRC)
U_OVERRIDE_PAGED_ONLY = {k: U(f"{k}{'_override' if k != 'cache_position_modulo' else ''} is only supported in paged "
                              "mode (when page_table is provided)", f"update/unpaged-{k}", "update/unpaged-ok")
                         for k in ("block_size", "num_kv_heads", "cache_position_modulo")}

F = rules("experimental.paged_fused_update_cache",
          "experimental/paged_cache/device/fused_update_cache/paged_fused_update_cache_device_operation.cpp")
F_BOTH_TILED = F("input_tensor1 and input_tensor2 must be either both tiled or both row-major",
                 "fused/mixed-layouts", "fused/ok")
F_ROW_MAJOR_LLAMA70B = F("when input_tensor1 and input_tensor2 are row major, only Llama70b tensor shapes are "
                         "supported", "fused/row-major-hd64", "fused/ok")
F_INPUT_DTYPE = F("Data type of input tensor for paged_fused_update_cache must be FLOAT32 or BFLOAT16; decode update "
                  "repacks into the cache dtype and should not receive low-precision packed input",
                  "fused/input-bfp8", "fused/ok")
F_LAST_DIM = F("Last dim of input tensor must match last dim of cache tensor", "fused/input-hd-32", "fused/ok")
F_OVERLAP = F("input_tensor1 ({}) and input_tensor2 ({}) must not overlap", "fused/same-grid", "fused/ok")
F_CB_BEYOND_L1 = F(_CB_BEYOND, "fused/w576", "fused/w544", source=_CB_SRC)
F_CB_CLASH = F(_CB_CLASH, "fused/w544-fp32-inputs", "fused/w544", source=_CB_SRC)
F_SAME_CORES = F("input_tensor1 ({}) and input_tensor2 ({}) must have same number of cores", "fused/cores-32-vs-8",
                 "fused/four-users-per-core")

P = rules("experimental.paged_fill_cache", "experimental/paged_cache/device/fill_cache/"
          "paged_fill_cache_device_operation.cpp")
P_ON_DEVICE = P("Device Operations expect device tensors as inputs", "fill/input-host", "fill/ok",
                source="ttnn/cpp/ttnn/device_operation.hpp")
P_BATCH1 = P("When no batch_idx_tensor is provided, input_batch must be 1 (got {}); pass a batch_idx_tensor of size "
             "input_batch to fill multiple batch rows in one call.", "fill/input-batch-2", "fill/ok",
             source="experimental/paged_cache/paged_cache.cpp")
P_CACHE_DTYPE = P("Data type of cache tensor for paged_fill_cache must be FLOAT32, BFLOAT16, BFLOAT8_B, or "
                  "BFLOAT4_B and is {}", "fill/cache-uint32", "fill/bfp4")
P_SAME_DTYPE = P("Input tensor dtype ({}) must match cache tensor dtype ({}) for paged_fill_cache; cast prefill K/V to "
                 "the cache dtype before filling the paged cache.", "fill/bf16-into-bfp8", "fill/bfp8")
P_INPUT_INTERLEAVED = P("Expect input_tensor to have memory layout INTERLEAVED", "fill/input-sharded",
                        "fill/input-l1")
P_PT_INTERLEAVED = P("Expect page_table_tensor to have memory layout INTERLEAVED", "fill/page-table-sharded",
                     "fill/page-table-l1-8-wide")
P_PT_DTYPE = P("Expect page_table_tensor to have datatype INT32", "fill/page-table-uint32", "fill/page-table-tile")
P_PT_L1_ROWS = P("page table page size in bytes must be a multiple of 32 due to address alignment",
                 "fill/page-table-l1", "fill/page-table-l1-8-wide",
                 source="experimental/paged_cache/device/fill_cache/paged_fill_cache_program_factory.cpp")
P_BATCH_IDX = P("Batch idx must be within the page_table batch size", "fill/batch-idx-32", "fill/batch-idx-31")
P_GEOMETRY = P("paged_fill_cache geometry mismatch: cache has {} elems/block (kv_heads={}, block_size={}, "
               "head_dim={}) but input view is {} (kv_heads={}, block_size={}, head_dim={}).",
               "fill/input-hd-32", "fill/input-16-heads", "fill/ok")
P_SEQ_FITS = P("Input seq_len ({}) must fit in max_num_blocks_per_seq ({}) * block_size ({})",
               "fill/input-too-long", "fill/input-seq-100")
P_IDX_TENSOR_COUNT = P("Batch idx tensor must have input_tensor batch dim ({}) elements, got {}",
                       "fill/batch-idx-tensor-2-for-1", "fill/batch-idx-tensor")
P_IDX_TENSOR_INT = P("Batch idx tensor must be an integer type", "fill/batch-idx-tensor-bf16",
                     "fill/batch-idx-tensor-uint32")
P_IDX_TENSOR_DRAM = P("Batch idx tensor must be DRAM-resident", "fill/batch-idx-tensor-l1", "fill/batch-idx-tensor")


def _shards_of(t: Tensor) -> Any:
    return t.memory_config().shard_spec


def _check_update(rs: Any, cache: Tensor, x: Tensor, idx: Tensor | None, idx_list: list[int],
                  page_table: Tensor | None, batch_offset: int, share_cache: Any, fused: bool) -> int:
    """The per-(cache, input) rules of both decode updates; returns the number of users."""
    if not fused:
        U_INPUT_TILE.require(x.layout == Layout.TILE)
    U_CACHE_TILE.require(cache.layout == Layout.TILE)
    U_CACHE_DTYPE.require(cache.dtype in _CACHE_DTYPES, f"DataType::{cache.dtype.name}")
    U_DIM0.require(x.padded_shape[0] == 1)
    U_CACHE_INTERLEAVED.require(cache.memory_config().memory_layout == _IL)
    nb, nkv, bs, hd = cache.shape
    users = x.padded_shape[1]
    if page_table is not None:
        if fused:
            F_LAST_DIM.require(x.shape[-1] == hd)
        else:
            view = nkv * bs * x.shape[-1]
            U_GEOMETRY.require(view == nkv * bs * hd, nkv * bs * hd, nkv, bs, hd, view, nkv, bs, x.shape[-1])
        U_PAGED_SHARE.require(not share_cache)
        U_PAGED_TENSOR_IDX.require(idx is not None)
        U_PT_DTYPE.require(page_table.dtype == DataType.INT32)
        U_PT_LAYOUT.require(page_table.layout == Layout.ROW_MAJOR)
        U_PT_ROWS.require(page_table.padded_shape[0] == users)
        U_PT_WIDTH.require(page_table.shape[-1] <= nb, page_table.shape[-1], nb)
    else:
        if fused:
            F_LAST_DIM.require(x.shape[-1] == hd)
        else:
            U_NONPAGED_LAST_DIM.require(x.shape[-1] == hd, x.shape[-1], hd)
        if share_cache:
            U_SHARE_CACHE_BATCH.require(cache.padded_shape[0] == 1)
        else:
            U_BATCH.require(users == cache.padded_shape[0])
    U_ONE_IDX_FORM.require((idx is not None) != bool(idx_list))
    if idx is not None:
        U_IDX_DTYPE.require(idx.dtype == DataType.INT32)
        U_IDX_LAYOUT.require(idx.layout == Layout.ROW_MAJOR)
        imc = idx.memory_config()
        if imc.is_sharded():
            U_IDX_SHARDED_HS.require(imc.memory_layout == _HS)
            U_IDX_SHARDED_COUNT.require(idx.shape[-1] == x.shape[1], idx.shape[-1], x.shape[1])
            cores = imc.shard_spec.num_cores()
            U_IDX_SHARDED_CORES.require(cores == idx.shape[0], cores, idx.shape[0])
        else:
            U_IDX_DRAM.require(imc.buffer_type == BufferType.DRAM)
            U_IDX_COUNT.require(idx.padded_shape[-1] == users, idx.padded_shape[-1], users)
    else:
        U_IDX_COUNT.require(len(idx_list) == users, len(idx_list), users)
    xmc = x.memory_config()
    U_INPUT_SHARDED.require(xmc.is_sharded())
    U_INPUT_NOT_WS.require(xmc.memory_layout != _WS)
    U_INPUT_ROW_MAJOR_SHARDS.require(xmc.shard_spec.orientation == ShardOrientation.ROW_MAJOR)
    if not fused:
        cores = xmc.shard_spec.num_cores()
        U_ONE_USER_PER_CORE.require(cores == users, cores, users)
    (F_INPUT_DTYPE if fused else U_INPUT_DTYPE).require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16))
    U_BATCH_OFFSET.require(batch_offset == 0)
    return users


def _check_circular_buffers(beyond: Any, clash: Any, cache: Tensor, inputs: list[Tensor], page_table: Tensor | None,
                            kernel: Any, fused: bool) -> None:
    """The update program's circular buffers against the core's L1 and the lowest L1 buffer."""
    dev = cache.device_or_none
    mem = dev.chip_memories()[0]
    chip = mem.chip
    x = inputs[0]
    wt = -(-(cache.shape[-1] if fused else x.padded_shape[-1]) // TILE_SIZE)  # (the fused kernel sizes by the cache)
    users = x.padded_shape[1]
    # (An fp32 cache at the simulator's reference precision stands for the bf16 one a device runs.)
    reference = cache.dtype == DataType.FLOAT32 and reference_precision(cache)
    cache_tile = TILE_BYTES[DataType.BFLOAT16 if reference else cache.dtype]
    untilized = 4096 if kernel is not None and getattr(kernel, "fp32_dest_acc_en", False) else 2048
    sizes = [2 * wt * cache_tile, 2 * wt * untilized, 2 * wt * untilized, users * wt * cache_tile]
    if fused:  # the positions and a page-table row as one aligned DRAM page each
        sizes.append(round_up(users * 4, chip.dram_alignment))
        if page_table is not None:
            sizes.append(round_up(page_table.shape[-1] * 4, chip.dram_alignment))
    else:  # the positions as one int32 tile, the page-table row as it is
        sizes.append(TILE_BYTES[DataType.INT32])
        if page_table is not None:
            sizes.append(page_table.shape[-1] * 4)
    total = 0
    for size in sizes:
        total = round_up(total, chip.l1_alignment) + size
    end = chip.l1_unreserved_base + total
    cores = [c for t in inputs for c in t.memory_config().shard_spec.grid.cores()]
    where = f"{min(c.x for c in cores)}-{min(c.y for c in cores)} - {max(c.x for c in cores)}-{max(c.y for c in cores)}"
    beyond.require(end <= chip.l1_size, where, end, chip.l1_size)
    lowest = mem.lowest_l1_buffer()
    if lowest is not None:
        clash.require(end <= lowest, 0, where, lowest, end)


def _racing_rows(rows: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor | None:
    """Indices of the users that share a cache tile (same block or batch row, same 32 positions) with another user
    of the same call, or None. The device does not check this, but its update kernel reads the tile, replaces one
    row and writes the tile back on each user's own core at once, so such writes race and all but one are lost:
    the simulator writes NaN (undefined) in those users' rows, as it does for other undefined device results.
    (Speculative decoding's verify step writes one row per user per call for this reason.)"""
    tiles = rows * (1 << 20) + offsets // 32
    if tiles.numel() < 2:
        return None
    _, inverse, counts = torch.unique(tiles, return_inverse=True, return_counts=True)
    shared = counts[inverse] > 1
    return shared.nonzero().reshape(-1) if bool(shared.any()) else None


def _writer(caches: list[Tensor], inputs: list[Tensor], share_cache: bool) -> Any:
    """The per-device write of each input's rows at its users' positions (planned once per version of the
    positions and the page table, shared by every layer of a step). With share_cache every user writes into the
    one batch row of an unpaged cache."""
    nb, nkv, bs, hd = caches[0].shape
    users = inputs[0].shape[1]
    dtypes = [c.dtype for c in caches]
    all_slots = torch.zeros(users, dtype=torch.long) if share_cache else torch.arange(users)
    op = "experimental.paged_update_cache"

    def where_to(positions: torch.Tensor, pt: torch.Tensor | None) -> tuple | None:
        """Cache coordinates of each live user's new row (None: no live user), checked against the cache."""
        positions = positions.reshape(-1)[:users]
        lo, hi = (int(v) for v in torch.aminmax(positions))
        if hi < 0:
            return None
        if lo >= 0:  # every slot live: no index compaction needed
            live, p, slots = slice(None), positions.long(), all_slots
        else:
            live = (positions >= 0).nonzero().reshape(-1)
            p, slots = positions[live].long(), all_slots[live]
        if pt is None:  # unpaged cache [B, nkv, max_seq, hd]
            if hi >= bs:
                raise TTError(op, f"position {hi} beyond the cache length {bs}")
            racing = None if share_cache else _racing_rows(slots, p)
            return live, (slots, slice(None), p, slice(None)), racing
        if hi // bs >= pt.shape[1]:
            raise TTError(op, f"position {hi} needs block {hi // bs}; the page table has {pt.shape[1]} columns")
        blocks = pt[slots, p // bs].long()
        check_blocks(op, blocks, nb)
        return live, (blocks, slice(None), p % bs, slice(None)), _racing_rows(blocks, p % bs)

    def write(*bufs: torch.Tensor) -> None:
        n = len(inputs)
        cs, xs, positions, pt = bufs[:n], bufs[n : 2 * n], bufs[2 * n], bufs[2 * n + 1]
        plan = derived_from(f"update:{nb},{bs},{users}", (positions, pt), lambda: where_to(positions, pt))
        if plan is None:
            return
        live, where, racing = plan
        for cache, x, dtype in zip(cs, xs, dtypes, strict=True):
            if x.shape[2] < nkv:  # the input's padding rows land in the cache: undefined on the device
                x = torch.nn.functional.pad(x.float(), (0, 0, 0, nkv - x.shape[2]), value=float("nan"))
            rows = x[0] if isinstance(live, slice) and x.shape[2] == nkv else x[0, live, :nkv, :]
            if racing is not None:
                rows = rows.float().clone()
                rows[racing] = float("nan")
            cache[where] = store_as(rows, dtype)

    return write


def _positions(idx: Tensor | None, idx_list: list[int]) -> Any:
    return idx if idx is not None else torch.tensor(idx_list, dtype=torch.int64)  # a list is fixed at issue


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
) -> Tensor:
    """Write one new K or V row per user ([1, B, nkv, hd]) at that user's position, re-packed into the cache dtype.
    Returns the cache."""
    for t in (cache_tensor, input_tensor, update_idxs_tensor, page_table):
        U_ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    if page_table is None:
        for k, v in (("block_size", block_size), ("num_kv_heads", num_kv_heads),
                     ("cache_position_modulo", cache_position_modulo)):
            U_OVERRIDE_PAGED_ONLY[k].require(v is None)
    idx_list = list(update_idxs or [])
    _check_update(U, cache_tensor, input_tensor, update_idxs_tensor, idx_list, page_table, batch_offset, share_cache,
                  fused=False)
    refuse_options("experimental.paged_update_cache", mesh_coords=mesh_coords, block_size=block_size,
                   num_kv_heads=num_kv_heads, cache_position_modulo=cache_position_modulo)
    _check_circular_buffers(U_CB_BEYOND_L1, U_CB_CLASH, cache_tensor, [input_tensor], page_table,
                            compute_kernel_config, fused=False)
    write = _writer([cache_tensor], [input_tensor], bool(share_cache))
    per_device_write(write, cache_tensor, input_tensor, _positions(update_idxs_tensor, idx_list), page_table)
    return cache_tensor


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
) -> tuple[Tensor, Tensor]:
    """paged_update_cache of two caches (K and V) at the same positions through the same page table, in one op;
    the two inputs live on disjoint cores. Returns both caches."""
    for t in (cache_tensor1, input_tensor1, cache_tensor2, input_tensor2, update_idxs_tensor, page_table):
        U_ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    refuse_options("experimental.paged_fused_update_cache", mesh_coords=mesh_coords)
    F_BOTH_TILED.require(input_tensor1.layout == input_tensor2.layout)
    if input_tensor1.layout == Layout.ROW_MAJOR:
        F_ROW_MAJOR_LLAMA70B.require(input_tensor1.shape[-1] == 128 and input_tensor2.padded_shape[-2] == 8)
    idx_list = list(update_idxs or [])
    for cache, x in ((cache_tensor1, input_tensor1), (cache_tensor2, input_tensor2)):
        _check_update(F, cache, x, update_idxs_tensor, idx_list, page_table, batch_offset, share_cache, fused=True)
    g1, g2 = _shards_of(input_tensor1).grid, _shards_of(input_tensor2).grid
    F_OVERLAP.require(not set(g1.cores()) & set(g2.cores()), g1, g2)
    F_SAME_CORES.require(g1.num_cores() == g2.num_cores(), g1, g2)
    _check_circular_buffers(F_CB_BEYOND_L1, F_CB_CLASH, cache_tensor1, [input_tensor1, input_tensor2], page_table,
                            compute_kernel_config, fused=True)
    write = _writer([cache_tensor1, cache_tensor2], [input_tensor1, input_tensor2], bool(share_cache))
    per_device_write(write, cache_tensor1, cache_tensor2, input_tensor1, input_tensor2,
                     _positions(update_idxs_tensor, idx_list), page_table)
    return cache_tensor1, cache_tensor2


@device_op(DuringCapture.SKIP, kernel_replay=True)
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
) -> Tensor:
    """Copy a user's prompt K or V [1, nkv, S, hd] into its pages, tile by tile (tile padding included). Returns
    the cache."""
    op = "experimental.paged_fill_cache"
    for t in (cache_tensor, input_tensor, page_table, batch_idx_tensor):
        P_ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    refuse_options(op, mesh_coords=mesh_coords, block_size=block_size, cache_position_modulo=cache_position_modulo,
                   valid_seq_len_tensor=valid_seq_len_tensor)
    x = input_tensor
    in_batch = x.shape[0]
    if batch_idx_tensor is None:
        P_BATCH1.require(in_batch == 1, in_batch)
    P_CACHE_DTYPE.require(cache_tensor.dtype in _CACHE_DTYPES, f"DataType::{cache_tensor.dtype.name}")
    P_SAME_DTYPE.require(x.dtype == cache_tensor.dtype, f"DataType::{x.dtype.name}",
                         f"DataType::{cache_tensor.dtype.name}")
    P_INPUT_INTERLEAVED.require(x.memory_config().memory_layout == _IL)
    P_PT_INTERLEAVED.require(page_table.memory_config().memory_layout == _IL)
    P_PT_DTYPE.require(page_table.dtype == DataType.INT32)
    if batch_idx_tensor is None:
        P_BATCH_IDX.require(batch_idx < page_table.shape[0])
    nb, nkv, bs, hd = cache_tensor.shape
    view = x.padded_shape[1] * bs * x.shape[-1]
    P_GEOMETRY.require(view == nkv * bs * hd, nkv * bs * hd, nkv, bs, hd, view, x.padded_shape[1], bs, x.shape[-1])
    seq = x.padded_shape[2]
    P_SEQ_FITS.require(seq <= page_table.shape[-1] * bs, seq, page_table.shape[-1], bs)
    if batch_idx_tensor is not None:
        n = batch_idx_tensor.logical_volume()
        P_IDX_TENSOR_COUNT.require(n == in_batch, in_batch, n)
        P_IDX_TENSOR_INT.require(batch_idx_tensor.dtype in (DataType.INT32, DataType.UINT32))
        P_IDX_TENSOR_DRAM.require(batch_idx_tensor.memory_config().buffer_type == BufferType.DRAM)
    if page_table.memory_config().buffer_type == BufferType.L1:
        P_PT_L1_ROWS.require(page_table.shape[-1] * 4 % 32 == 0)
    if x.shape[1] != nkv or x.shape[-1] != hd or x.layout != Layout.TILE:
        raise TTError(op, "the simulator fills a cache from an input of the cache's heads and head_dim in TILE "
                          "layout only")
    pos = torch.arange(seq)

    def fill(cache: torch.Tensor, inp: torch.Tensor, pt: torch.Tensor, bi: torch.Tensor | None) -> None:
        rows_of = [int(v) for v in bi.reshape(-1)] if bi is not None else [batch_idx]
        for b, row in enumerate(rows_of):
            if not 0 <= row < pt.shape[0]:
                raise TTError(op, f"batch_idx {row} outside the page table's {pt.shape[0]} rows")
            blocks = pt[row, pos // bs].long()
            check_blocks(op, blocks, nb)
            rows = inp[b].transpose(0, 1)  # [S, nkv, hd]
            if rows.shape[0] < seq:  # tile padding is written too, as zeros
                rows = torch.nn.functional.pad(rows, (0, 0, 0, 0, 0, seq - rows.shape[0]))
            cache[blocks, :, pos % bs, :] = rows

    per_device_write(fill, cache_tensor, input_tensor, page_table, batch_idx_tensor)
    return cache_tensor
