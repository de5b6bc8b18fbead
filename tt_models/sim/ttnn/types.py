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
