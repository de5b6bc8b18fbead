"""Enums, constants and config objects of the ttnn namespace (dtypes, layouts, memory and compute configs)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

TILE_SIZE = 32
# Block-float formats share one exponent per 16 consecutive values of a tile face row.
BLOCK_FLOAT_GROUP = 16


class DataType(enum.Enum):
    BFLOAT16 = 0
    FLOAT32 = 1
    UINT32 = 2
    BFLOAT8_B = 3
    BFLOAT4_B = 4
    UINT8 = 5
    UINT16 = 6
    INT32 = 7

    def __repr__(self) -> str:
        return f"DataType.{self.name}"


bfloat16 = DataType.BFLOAT16
float32 = DataType.FLOAT32
uint32 = DataType.UINT32
uint16 = DataType.UINT16
uint8 = DataType.UINT8
int32 = DataType.INT32
bfloat8_b = DataType.BFLOAT8_B
bfloat4_b = DataType.BFLOAT4_B

BLOCK_FLOAT_TYPES = (DataType.BFLOAT8_B, DataType.BFLOAT4_B)
FLOAT_TYPES = (DataType.BFLOAT16, DataType.FLOAT32, *BLOCK_FLOAT_TYPES)
INT_TYPES = (DataType.UINT32, DataType.INT32, DataType.UINT16, DataType.UINT8)


class Layout(enum.Enum):
    ROW_MAJOR = 0
    TILE = 1

    def __repr__(self) -> str:
        return f"Layout.{self.name}"


ROW_MAJOR_LAYOUT = Layout.ROW_MAJOR
TILE_LAYOUT = Layout.TILE


class TensorMemoryLayout(enum.Enum):
    INTERLEAVED = 0
    HEIGHT_SHARDED = 2
    WIDTH_SHARDED = 3
    BLOCK_SHARDED = 4


class BufferType(enum.Enum):
    DRAM = 0
    L1 = 1
    L1_SMALL = 4


class ShardStrategy(enum.Enum):
    HEIGHT = 0
    WIDTH = 1
    BLOCK = 2


class ShardOrientation(enum.Enum):
    ROW_MAJOR = 0
    COL_MAJOR = 1


@dataclass(frozen=True)
class CoreCoord:
    x: int
    y: int


@dataclass(frozen=True)
class CoreRange:
    start: CoreCoord
    end: CoreCoord


@dataclass(frozen=True)
class CoreRangeSet:
    ranges: Any


@dataclass(frozen=True)
class CoreGrid:
    y: int
    x: int

    @property
    def num_cores(self) -> int:
        return self.x * self.y


@dataclass(frozen=True)
class ShardSpec:
    grid: Any
    shape: tuple
    orientation: ShardOrientation = ShardOrientation.ROW_MAJOR


@dataclass(frozen=True)
class MemoryConfig:
    """Where a device tensor lives. The simulator carries it so models written for hardware keep working unchanged;
    placement does not change any value."""

    memory_layout: TensorMemoryLayout = TensorMemoryLayout.INTERLEAVED
    buffer_type: BufferType = BufferType.DRAM
    shard_spec: ShardSpec | None = None

    def is_sharded(self) -> bool:
        return self.memory_layout != TensorMemoryLayout.INTERLEAVED


DRAM_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.DRAM)
L1_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.L1)
L1_HEIGHT_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.HEIGHT_SHARDED, BufferType.L1)
L1_WIDTH_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.WIDTH_SHARDED, BufferType.L1)
L1_BLOCK_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.BLOCK_SHARDED, BufferType.L1)


def create_sharded_memory_config(
    shape: Any,
    core_grid: Any,
    strategy: ShardStrategy,
    orientation: ShardOrientation | None = None,
    use_height_and_width_as_shard_shape: bool = False,
) -> MemoryConfig:
    layout = {
        ShardStrategy.HEIGHT: TensorMemoryLayout.HEIGHT_SHARDED,
        ShardStrategy.WIDTH: TensorMemoryLayout.WIDTH_SHARDED,
        ShardStrategy.BLOCK: TensorMemoryLayout.BLOCK_SHARDED,
    }[strategy]
    spec = ShardSpec(core_grid, tuple(shape), orientation or ShardOrientation.ROW_MAJOR)
    return MemoryConfig(layout, BufferType.L1, spec)


class MathFidelity(enum.Enum):
    LoFi = 0
    HiFi2 = 2
    HiFi3 = 3
    HiFi4 = 4


@dataclass
class WormholeComputeKernelConfig:
    """Accepted and carried: the simulator computes with fp32 accumulation and rounds each op's output to its
    dtype, so fidelity does not change results here (it does on hardware)."""

    math_fidelity: MathFidelity = MathFidelity.LoFi
    math_approx_mode: bool = True
    fp32_dest_acc_en: bool = False
    packer_l1_acc: bool = False
    dst_full_sync_en: bool = False
    throttle_level: Any = None


BlackholeComputeKernelConfig = WormholeComputeKernelConfig
GrayskullComputeKernelConfig = WormholeComputeKernelConfig


def init_device_compute_kernel_config(
    arch: Any,
    device_kernel_config: WormholeComputeKernelConfig | None = None,
    *,
    math_fidelity: MathFidelity = MathFidelity.LoFi,
    math_approx_mode: bool = True,
    fp32_dest_acc_en: bool = False,
    packer_l1_acc: bool = False,
    dst_full_sync_en: bool = False,
    throttle_level: Any = None,
) -> WormholeComputeKernelConfig:
    if device_kernel_config is not None:
        return device_kernel_config
    return WormholeComputeKernelConfig(
        math_fidelity, math_approx_mode, fp32_dest_acc_en, packer_l1_acc, dst_full_sync_en, throttle_level
    )


class UnaryOpType(enum.Enum):
    SILU = 0
    GELU = 1
    RELU = 2
    SIGMOID = 3
    IDENTITY = 4


@dataclass(frozen=True)
class UnaryWithParam:
    op_type: UnaryOpType
    params: tuple = field(default_factory=tuple)


@dataclass
class MatmulProgramConfig:
    """Stand-in for the matmul program configs: core placement only, accepted and carried."""

    kwargs: dict = field(default_factory=dict)


def _program_config_factory(**kwargs: Any) -> MatmulProgramConfig:
    return MatmulProgramConfig(kwargs)


MatmulMultiCoreReuseProgramConfig = _program_config_factory
MatmulMultiCoreReuseMultiCastProgramConfig = _program_config_factory
MatmulMultiCoreReuseMultiCast1DProgramConfig = _program_config_factory
MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig = _program_config_factory
SDPAProgramConfig = _program_config_factory
LayerNormShardedMultiCoreProgramConfig = _program_config_factory
LayerNormDefaultProgramConfig = _program_config_factory


class Shape(tuple):
    """ttnn.Shape: an immutable tuple of dims printed the way ttnn prints it."""

    def __new__(cls, dims: Any = ()) -> Shape:
        return super().__new__(cls, (int(d) for d in dims))

    @property
    def rank(self) -> int:
        return len(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"Shape({list(self)})"


def round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple
