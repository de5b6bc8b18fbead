"""Where a device tensor lives: MemoryConfig (memory layout, buffer type, shard spec), the named configs, and
create_sharded_memory_config, with ttnn 0.81.1's names, values and defaults.

A sharded tensor is split into shards of `shard_spec.shape` (a 2-D [height, width] over the tensor viewed as
[prod(all dims but the last), last dim]); shard i lives in the L1 (or DRAM bank) of the i-th core of the grid in the
spec's orientation. HEIGHT_SHARDED splits rows, WIDTH_SHARDED columns, BLOCK_SHARDED both over a 2-D grid.
"""

from __future__ import annotations

import enum
import math
from typing import Any

from .cores import CoreGrid, CoreRange, CoreRangeSet, as_range_set, grid_range_set
from .errors import TTError


class TensorMemoryLayout(enum.Enum):
    INTERLEAVED = 0
    HEIGHT_SHARDED = 2
    WIDTH_SHARDED = 3
    BLOCK_SHARDED = 4
    ND_SHARDED = 5  # a MemoryConfig(buffer_type, NdShardSpec): shards of an N-D shape (ttnn 0.81.1, experimental)


class BufferType(enum.Enum):
    DRAM = 0
    L1 = 1
    L1_SMALL = 3
    TRACE = 4


class ShardStrategy(enum.Enum):
    HEIGHT = 1
    WIDTH = 2
    BLOCK = 3


class ShardOrientation(enum.Enum):
    ROW_MAJOR = 0
    COL_MAJOR = 1


class ShardDistributionStrategy(enum.Enum):
    """How an ND-sharded tensor's shards are dealt to the grid's cores (ttnn 0.81.1's three)."""

    ROUND_ROBIN_1D = 0
    GRID_2D = 1
    CONTIGUOUS_1D = 2


class ShardSpec:
    """A shard's [height, width] and the cores holding the shards, in orientation order."""

    __slots__ = ("grid", "shape", "orientation")

    def __init__(self, grid: CoreRangeSet, shard_shape: Any, shard_orientation: ShardOrientation) -> None:
        shape = [int(d) for d in shard_shape]
        if len(shape) != 2:
            raise TTError("ShardSpec", f"shard shape must be [height, width], got {shape}")
        self.grid = as_range_set(grid)
        self.shape = shape
        self.orientation = shard_orientation

    def num_cores(self) -> int:
        return self.grid.num_cores()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShardSpec) and self.grid == other.grid and self.shape == other.shape
                and self.orientation == other.orientation)

    def __hash__(self) -> int:
        return hash((self.grid, tuple(self.shape), self.orientation))

    def __repr__(self) -> str:
        return f"ShardSpec(grid={self.grid!r}, shape={self.shape}, orientation={self.orientation.name})"


class NdShardSpec:
    """ttnn.NdShardSpec(shard_shape, grid, orientation=ROW_MAJOR, shard_distribution_strategy=ROUND_ROBIN_1D): the
    tensor cut into shards of an N-D shape (ceil(dim / shard dim) along each dim of the padded shape, the last shard
    along a dim possibly part-filled), dealt to the grid's cores in orientation order; a core may hold several."""

    __slots__ = ("shard_shape", "grid", "orientation", "shard_distribution_strategy")

    def __init__(self, shard_shape: Any, grid: CoreRangeSet,
                 orientation: ShardOrientation = ShardOrientation.ROW_MAJOR,
                 shard_distribution_strategy: ShardDistributionStrategy = ShardDistributionStrategy.ROUND_ROBIN_1D
                 ) -> None:
        from .types import Shape

        self.shard_shape = shard_shape if isinstance(shard_shape, Shape) else Shape([int(d) for d in shard_shape])
        self.grid = as_range_set(grid)
        self.orientation = orientation
        self.shard_distribution_strategy = shard_distribution_strategy

    def num_cores(self) -> int:
        return self.grid.num_cores()

    def _key(self) -> tuple:
        return (tuple(int(d) for d in self.shard_shape), self.grid, self.orientation,
                self.shard_distribution_strategy)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NdShardSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"NdShardSpec(shard_shape={list(int(d) for d in self.shard_shape)}, grid={self.grid!r}, "
                f"orientation={self.orientation.name}, "
                f"shard_distribution_strategy={self.shard_distribution_strategy.name})")


class MemoryConfig:
    """ttnn.MemoryConfig(memory_layout=INTERLEAVED, buffer_type=DRAM, shard_spec=None), or, for ND sharding,
    ttnn.MemoryConfig(buffer_type, nd_shard_spec) (memory_layout ND_SHARDED, shard_spec None)."""

    __slots__ = ("memory_layout", "buffer_type", "shard_spec", "nd_shard_spec")

    def __init__(self, memory_layout: Any = TensorMemoryLayout.INTERLEAVED,
                 buffer_type: Any = BufferType.DRAM, shard_spec: ShardSpec | None = None) -> None:
        if isinstance(memory_layout, BufferType) and isinstance(buffer_type, NdShardSpec) and shard_spec is None:
            self.memory_layout, self.buffer_type = TensorMemoryLayout.ND_SHARDED, memory_layout
            self.shard_spec, self.nd_shard_spec = None, buffer_type
            return
        self.memory_layout = memory_layout
        self.buffer_type = buffer_type
        self.shard_spec = shard_spec
        self.nd_shard_spec = None

    def is_sharded(self) -> bool:
        return self.memory_layout != TensorMemoryLayout.INTERLEAVED

    @property
    def interleaved(self) -> bool:
        return not self.is_sharded()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MemoryConfig) and self.memory_layout == other.memory_layout
                and self.buffer_type == other.buffer_type and self.shard_spec == other.shard_spec
                and self.nd_shard_spec == other.nd_shard_spec)

    def __hash__(self) -> int:
        return hash((self.memory_layout, self.buffer_type, self.shard_spec, self.nd_shard_spec))

    def __repr__(self) -> str:
        nd = f", nd_shard_spec={self.nd_shard_spec!r}" if self.nd_shard_spec is not None else ""
        return (f"MemoryConfig(memory_layout={self.memory_layout.name}, buffer_type={self.buffer_type.name}, "
                f"shard_spec={self.shard_spec!r}{nd})")


def memory_config_to_data(mc: MemoryConfig | None) -> list | None:
    """Plain data (lists, strings, ints) for a memory config, as a tensor file stores it."""
    if mc is None:
        return None
    if mc.nd_shard_spec is not None:
        raise TTError("dump_tensor", "the simulator does not store ND-sharded memory configs in tensor files")
    spec = mc.shard_spec
    shard = None if spec is None else [[[r.start.x, r.start.y, r.end.x, r.end.y] for r in spec.grid.ranges()],
                                       list(spec.shape), spec.orientation.name]
    return [mc.memory_layout.name, mc.buffer_type.name, shard]


def memory_config_from_data(data: list | None) -> MemoryConfig | None:
    if data is None:
        return None
    from .cores import CoreCoord

    layout, buffer, shard = data
    spec = None
    if shard is not None:
        ranges, shape, orientation = shard
        spec = ShardSpec(CoreRangeSet([CoreRange(CoreCoord(a, b), CoreCoord(c, d)) for a, b, c, d in ranges]),
                         shape, ShardOrientation[orientation])
    return MemoryConfig(TensorMemoryLayout[layout], BufferType[buffer], spec)


DRAM_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.DRAM)
L1_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.L1)
# Sharded layouts without a shard spec: ops that take these derive the spec themselves.
L1_HEIGHT_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.HEIGHT_SHARDED, BufferType.L1)
L1_WIDTH_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.WIDTH_SHARDED, BufferType.L1)
L1_BLOCK_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.BLOCK_SHARDED, BufferType.L1)

_LAYOUT_OF = {ShardStrategy.HEIGHT: TensorMemoryLayout.HEIGHT_SHARDED,
              ShardStrategy.WIDTH: TensorMemoryLayout.WIDTH_SHARDED,
              ShardStrategy.BLOCK: TensorMemoryLayout.BLOCK_SHARDED}


def _fail(why: str) -> TTError:
    return TTError("create_sharded_memory_config", why)


def _grid_of(core_grid: Any, use_hw: bool) -> CoreRangeSet:
    if isinstance(core_grid, CoreGrid):
        return grid_range_set(core_grid)
    if isinstance(core_grid, (list, tuple)):
        # Two CoreGrids: a full x*y block, then a partial row below it of the second grid's width.
        if len(core_grid) != 2 or not all(isinstance(g, CoreGrid) for g in core_grid):
            raise _fail("a core_grid list must hold two CoreGrids")
        a, b = core_grid
        from .cores import CoreCoord

        return CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(a.x - 1, a.y - 1)),
                             CoreRange(CoreCoord(0, a.y), CoreCoord(b.x - 1, a.y))])
    if isinstance(core_grid, CoreRangeSet):
        if not use_hw:
            raise _fail("with a CoreRangeSet the height and width must be the shard shape "
                        "(use_height_and_width_as_shard_shape=True)")
        return core_grid
    raise _fail(f"invalid core_grid type {type(core_grid).__name__}")


def create_sharded_memory_config(
    shape: Any,
    core_grid: Any,
    strategy: ShardStrategy,
    orientation: ShardOrientation | None = None,
    use_height_and_width_as_shard_shape: bool = False,
) -> MemoryConfig:
    """An L1 sharded MemoryConfig for a tensor of `shape` (seen as [prod(leading dims) * height, width]) on
    core_grid. With use_height_and_width_as_shard_shape the last two dims are the shard shape itself
    (transposed for COL_MAJOR); otherwise the shard shape divides the tensor evenly over the grid."""
    if not isinstance(shape, (list, tuple)):
        raise _fail("invalid input shape")
    if strategy not in _LAYOUT_OF:
        raise _fail("invalid sharding strategy")
    orient = orientation or ShardOrientation.ROW_MAJOR
    grid = _grid_of(core_grid, use_height_and_width_as_shard_shape)
    *lead, h, w = (int(d) for d in shape)
    if use_height_and_width_as_shard_shape:
        shard = (h, w) if orient == ShardOrientation.ROW_MAJOR else (w, h)
    else:
        rows, cols = math.prod(lead) * h, w
        if strategy == ShardStrategy.BLOCK:
            across, down = (core_grid.x, core_grid.y) if orient == ShardOrientation.ROW_MAJOR else \
                (core_grid.y, core_grid.x)
            if rows % down or cols % across:
                raise _fail(f"{rows}x{cols} does not split evenly over a {core_grid.x}x{core_grid.y} block grid")
            shard = (rows // down, cols // across)
        else:
            n = core_grid.x * core_grid.y
            if strategy == ShardStrategy.HEIGHT:
                if rows % n:
                    raise _fail(f"height {rows} does not split evenly over {n} cores")
                shard = (rows // n, cols)
            else:
                if cols % n:
                    raise _fail(f"width {cols} does not split evenly over {n} cores")
                shard = (rows, cols // n)
    return MemoryConfig(_LAYOUT_OF[strategy], BufferType.L1, ShardSpec(grid, list(shard), orient))
