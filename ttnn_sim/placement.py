"""Whether a tensor of a given shape, dtype and layout can be placed with a memory config on a device: the tensor
spec and buffer rules of ttnn 0.81.1 that every tensor creation and every op output goes through
(tt_metal/impl/tensor/spec/tensor_spec.cpp, layout/tensor_layout.cpp, tt_metal/impl/buffers/buffer.cpp)."""

from __future__ import annotations

import math
from typing import Any

from .errors import TTError
from .memory import BufferType, MemoryConfig, ShardOrientation, TensorMemoryLayout
from .rules import rules
from .types import BLOCK_FLOAT_TYPES, TILE_SIZE, DataType, Layout

S = rules("TensorSpec", "tt_metal/impl/tensor/spec/tensor_spec.cpp")
# The text names BFLOAT8_B for bfloat4_b too (a fixed string in libtt_metal).
BFP_TILE_ONLY = S("Only TILE layout is supported for BFLOAT8_B dtype!", "zeros/rm/BFLOAT8_B/[1, 1, 1, 10]/dram",
                  "empty/bfp4-row-major", "zeros/tile/BFLOAT8_B/[1, 1, 32, 32]/dram")
SHARD_TILES = S("Physical shard shape ({}, {}) must be tile {{32, 32}} sized!", "shard/height/unaligned-shard",
                "shard/height/32x64", source="tt_metal/impl/tensor/spec/layout/tensor_layout.cpp")
HS_WIDTH = S("Shard width {} must match physical width {} for height sharded", "shard/height/narrow",
             "shard/height/32x64")
HS_COUNT = S("Number of shards along height {} must not exceed number of cores {}", "shard/height/too-few-cores",
             "shard/height/uneven")
WS_HEIGHT = S("Shard height {} must match physical height {} for width sharded", "shard/width/short",
              "shard/width/18")
WS_COUNT = S("Number of shards along width {} must not exceed number of cores {}", "shard/width/too-few",
             "shard/width/9")
BS_RECT = S("Shard grid must be one full rectangular grid for block sharded!", "shard/block/two-ranges",
            "shard/block/2x2")
BS_ROWS = S("Number of shards along height {} must not exceed number of rows {} for row major orientation!",
            "shard/block/too-many-rows", "shard/block/2x2")
BS_COLS = S("Number of shards along width {} must not exceed number of columns {} for row major orientation!",
            "shard/block/too-many-cols", "shard/block/4x8")
BS_COL_MAJOR_COLS = S("Number of shards along height {} must not exceed number of columns {} for column major "
                      "orientation!", "shard/block/col-major-too-many", "shard/block/col-major")
BS_COL_MAJOR_ROWS = S("Number of shards along width {} must not exceed number of rows {} for column major "
                      "orientation!", "shard/block/col-major-too-wide", "shard/block/col-major")
_BANK_HINT = (" Derive the shard grid from the device (dram_grid_size() for DRAM, compute_with_storage_grid_size() "
              "for L1) rather than assuming a fixed size -- a harvested device exposes fewer banks than an unharvested "
              "one of the same type.")
L1_OFF_GRID = S("Invalid shard grid: shard core ({}, {}) has no L1 bank on this device, which has {} of them."
                + _BANK_HINT + " An L1 shard core outside the compute grid is legal only while it is claimed via "
                "ServiceCoreManager.", "shard/height/off-grid", "shard/width/off-grid", "shard/height/32x64",
                source="tt_metal/impl/buffers/buffer.cpp")
DRAM_ROW0 = S("Invalid DRAM shard grid: shard core ({}, {}) is not on row 0. DRAM banks are 1D (bank_id == logical "
              "x-coordinate), so every shard core must have y == 0.", "shard/dram-block/two-rows",
              "shard/dram-width/12", source="tt_metal/impl/buffers/buffer.cpp")
DRAM_OFF_GRID = S("Invalid shard grid: shard core ({}, {}) has no DRAM bank on this device, which has {} of them."
                  + _BANK_HINT + " An L1 shard core outside the compute grid is legal only while it is claimed via "
                  "ServiceCoreManager.", "shard/dram-width/bank-13", "shard/dram-width/12",
                  source="tt_metal/impl/buffers/buffer.cpp")
NO_SPEC = S("bad optional access", "shard/no-spec", "shard/height/32x64")


def physical_2d(shape: tuple[int, ...], layout: Layout) -> tuple[int, int]:
    """(height, width) of the tensor's physical 2-D view: every padded dim but the last, and the padded last."""
    dims = [1] * max(0, 2 - len(shape)) + [int(d) for d in shape]
    if layout == Layout.TILE:
        dims[-1], dims[-2] = -(-dims[-1] // TILE_SIZE) * TILE_SIZE, -(-dims[-2] // TILE_SIZE) * TILE_SIZE
    return math.prod(dims[:-1]), dims[-1]


def check_placement(op: str, device: Any, shape: tuple[int, ...], layout: Layout, mc: MemoryConfig,
                    dtype: DataType | None = None) -> None:
    def fail(rule: Any, *values: Any) -> TTError:
        return TTError(op, rule.message.format(*values) if values else rule.message)

    if not isinstance(mc, MemoryConfig):
        raise TTError(op, f"memory_config must be a ttnn.MemoryConfig, got {type(mc).__name__}")
    if dtype in BLOCK_FLOAT_TYPES and layout != Layout.TILE:
        raise fail(BFP_TILE_ONLY)
    if not mc.is_sharded():
        return
    if mc.nd_shard_spec is not None:
        _check_nd(op, device, shape, layout, mc)
        return
    spec = mc.shard_spec
    if spec is None:
        raise fail(NO_SPEC)
    sh, sw = spec.shape
    if layout == Layout.TILE and (sh % TILE_SIZE or sw % TILE_SIZE):
        raise fail(SHARD_TILES, sh, sw)
    height, width = physical_2d(shape, layout)
    ncores = spec.num_cores()
    kind = mc.memory_layout
    if kind == TensorMemoryLayout.HEIGHT_SHARDED:
        if sw != width:
            raise fail(HS_WIDTH, sw, width)
        if -(-height // sh) > ncores:
            raise fail(HS_COUNT, -(-height // sh), ncores)
    elif kind == TensorMemoryLayout.WIDTH_SHARDED:
        if sh != height:
            raise fail(WS_HEIGHT, sh, height)
        if -(-width // sw) > ncores:
            raise fail(WS_COUNT, -(-width // sw), ncores)
    elif kind == TensorMemoryLayout.BLOCK_SHARDED:
        if spec.grid.size() != 1:
            raise fail(BS_RECT)
        box = spec.grid.bounding_box().grid_size()
        along_h, along_w = -(-height // sh), -(-width // sw)
        if spec.orientation == ShardOrientation.ROW_MAJOR:
            if along_h > box.y:
                raise fail(BS_ROWS, along_h, box.y)
            if along_w > box.x:
                raise fail(BS_COLS, along_w, box.x)
        else:
            if along_h > box.x:
                raise fail(BS_COL_MAJOR_COLS, along_h, box.x)
            if along_w > box.y:
                raise fail(BS_COL_MAJOR_ROWS, along_w, box.y)
    _check_grid(op, device, mc.buffer_type, spec.grid)


def _check_grid(op: str, device: Any, buffer_type: BufferType, grid: Any) -> None:
    """tt_metal/impl/buffers/buffer.cpp: every shard core has a bank of the buffer's type."""
    def fail(rule: Any, *values: Any) -> TTError:
        return TTError(op, rule.message.format(*values) if values else rule.message)

    if buffer_type == BufferType.DRAM:
        banks = device.dram_grid_size().x
        for core in grid.cores():
            if core.y != 0:
                raise fail(DRAM_ROW0, core.x, core.y)
            if core.x >= banks:
                raise fail(DRAM_OFF_GRID, core.x, core.y, banks)
    else:
        gx, gy = device.chip.grid
        for core in grid.cores():
            if core.x >= gx or core.y >= gy:
                raise fail(L1_OFF_GRID, core.x, core.y, gx * gy)


def nd_padded_shape(shape: tuple[int, ...], layout: Layout) -> list[int]:
    """The padded shape an ND shard grid cuts: a TILE tensor's last two dims rounded up to whole tiles (a tiled tensor
    of rank < 2 promoted to rank 2 first); a ROW_MAJOR tensor keeps its shape and rank."""
    dims = [int(d) for d in shape]
    if layout == Layout.TILE:
        dims = [1] * max(0, 2 - len(dims)) + dims
        dims[-1], dims[-2] = -(-dims[-1] // TILE_SIZE) * TILE_SIZE, -(-dims[-2] // TILE_SIZE) * TILE_SIZE
    return dims


def nd_shard_grid(shape: tuple[int, ...], layout: Layout, shard: list[int]) -> list[int]:
    """Shards along each dim of the shard's rank: ceil(dim / shard dim), the tensor's padded shape first folded to
    the shard's rank (its leading dims multiplied into the first)."""
    dims = nd_padded_shape(shape, layout)
    k = len(shard)
    folded = [math.prod(dims[: len(dims) - k + 1])] + dims[len(dims) - k + 1:] if k else []
    return [-(-d // s) for d, s in zip(folded, shard, strict=True)]


def _check_nd(op: str, device: Any, shape: tuple[int, ...], layout: Layout, mc: MemoryConfig) -> None:
    """ND sharding (MemoryConfig(buffer_type, NdShardSpec)), as ttnn 0.81.1 checks it when a tensor is placed -
    measured on the mock T3K (probe in docs/tt-metal-unit-tests.md, all_gather section): the tensor's (padded) rank
    must be at least the shard's (tt_metal/impl/buffers/buffer_distribution_spec.cpp), a TILE tensor's shard must
    be whole tiles in its last two dims (tt_metal/impl/tensor/spec/layout/tensor_layout.cpp), and every shard core
    needs a bank of the buffer's type (buffer.cpp, the legacy grid rules)."""
    spec = mc.nd_shard_spec
    shard = [int(d) for d in spec.shard_shape]
    rank = len(nd_padded_shape(shape, layout))
    if rank < len(shard):
        raise TTError(op, f"Tensor shape rank ({rank}) can't be less than shard shape rank ({len(shard)})!")
    if layout == Layout.TILE:
        physical = [1] * max(0, 2 - len(shard)) + shard
        if physical[-1] % TILE_SIZE or physical[-2] % TILE_SIZE:
            raise TTError(op, f"Physical shard shape Shape({physical}) must be tile {{32, 32}} sized!")
    _check_grid(op, device, mc.buffer_type, spec.grid)
