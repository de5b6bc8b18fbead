"""Whether a tensor of a given shape, dtype and layout can be placed with a memory config on a device, with the
real ttnn's rules (tensor-spec and buffer validation in tt-metal's ttnn/core/tensor and tt_metal/impl/buffers)."""

from __future__ import annotations

import math
from typing import Any

from .errors import TTError
from .memory import BufferType, MemoryConfig, ShardOrientation, TensorMemoryLayout
from .types import TILE_SIZE, Layout


def shard_grid_counts(shape: tuple[int, ...], layout: Layout, mc: MemoryConfig) -> tuple[int, int]:
    """(shards along the height, shards along the width) of the tensor viewed as [prod(leading dims), width]."""
    dims = [1] * max(0, 2 - len(shape)) + [int(d) for d in shape]
    h = math.prod(dims[:-1])
    w = dims[-1]
    if layout == Layout.TILE:
        h, w = math.prod(dims[:-2]) * -(-dims[-2] // TILE_SIZE) * TILE_SIZE, -(-w // TILE_SIZE) * TILE_SIZE
    sh, sw = mc.shard_spec.shape
    return -(-h // sh), -(-w // sw)


def check_placement(op: str, device: Any, shape: tuple[int, ...], layout: Layout, mc: MemoryConfig) -> None:
    if not isinstance(mc, MemoryConfig):
        raise TTError(op, f"memory_config must be a ttnn.MemoryConfig, got {type(mc).__name__}")
    if not mc.is_sharded():
        return
    spec = mc.shard_spec
    if spec is None:
        raise TTError(op, f"{mc.memory_layout.name} memory config needs a shard spec")
    sh, sw = spec.shape
    if layout == Layout.TILE and (sh % TILE_SIZE or sw % TILE_SIZE):
        raise TTError(op, f"shard shape {spec.shape} must be a multiple of the tile shape [32, 32]")
    if mc.buffer_type == BufferType.DRAM:
        banks = device.dram_grid_size().x
        for core in spec.grid.cores():
            if core.y != 0 or core.x >= banks:
                raise TTError(op, f"Invalid shard grid: shard core ({core.x}, {core.y}) has no DRAM bank on this "
                                  f"device, which has {banks} of them")
    else:
        gx, gy = device.chip.grid
        for core in spec.grid.cores():
            if core.x >= gx or core.y >= gy:
                raise TTError(op, f"Invalid shard grid: shard core ({core.x}, {core.y}) has no L1 bank on this "
                                  f"device, which has {gx * gy} of them")
    along_h, along_w = shard_grid_counts(shape, layout, mc)
    ncores = spec.num_cores()
    if mc.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED:
        if along_h > ncores:
            raise TTError(op, f"Number of shards along height {along_h} must not exceed number of cores {ncores}")
    elif mc.memory_layout == TensorMemoryLayout.WIDTH_SHARDED:
        if along_w > ncores:
            raise TTError(op, f"Number of shards along width {along_w} must not exceed number of cores {ncores}")
    elif mc.memory_layout == TensorMemoryLayout.BLOCK_SHARDED:
        box = spec.grid.bounding_box().grid_size()
        rows, cols = (box.y, box.x) if spec.orientation == ShardOrientation.ROW_MAJOR else (box.x, box.y)
        if along_h > rows:
            raise TTError(op, f"Number of shards along height {along_h} must not exceed number of rows {rows} for "
                              "row major orientation!")
        if along_w > cols:
            raise TTError(op, f"Number of shards along width {along_w} must not exceed number of columns {cols} "
                              "for row major orientation!")
