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
    # in ttnn 0.81.1's enum; the simulator stores int8 like the other integers and does not compute in fp8
    FP8_E4M3 = 8
    INT8 = 9
    INVALID = 10

    def __repr__(self) -> str:
        return f"DataType.{self.name}"


bfloat16 = DataType.BFLOAT16
float32 = DataType.FLOAT32
uint32 = DataType.UINT32
uint16 = DataType.UINT16
uint8 = DataType.UINT8
int32 = DataType.INT32
int8 = DataType.INT8
fp8_e4m3 = DataType.FP8_E4M3
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
    GELU_TANH = 5
    RECIP = 6


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


# Tile shapes a device (or host loopback) takes, with the face each is made of (tt_metal/api/tt-metalium/tile.hpp).
_TILE_FACES = {(32, 32): (16, 16), (16, 32): (16, 16), (32, 16): (16, 16), (16, 16): (16, 16),
               (8, 32): (8, 16), (4, 32): (4, 16), (2, 32): (2, 16), (1, 32): (1, 16),
               (8, 16): (8, 16), (4, 16): (4, 16), (2, 16): (2, 16), (1, 16): (1, 16)}
_DATUM_BYTES = {DataType.BFLOAT16: 2, DataType.FLOAT32: 4, DataType.UINT32: 4, DataType.INT32: 4,
                DataType.UINT16: 2, DataType.UINT8: 1}


class Tile:
    """ttnn.Tile(tile_shape, transpose_tile=False): the shape of the tiles a tensor is stored in, made of faces
    of at most 16x16."""

    def __init__(self, tile_shape: Any, transpose_tile: bool = False) -> None:
        from .errors import TTError

        shape = tuple(int(d) for d in tile_shape)
        if shape not in _TILE_FACES:
            raise TTError("Tile", "Tile size is not valid for our hardware")
        self.tile_shape = list(shape)
        self.face_shape = list(_TILE_FACES[shape])
        self.num_faces = (shape[0] * shape[1]) // (self.face_shape[0] * self.face_shape[1])
        self.partial_face = int(shape[0] < TILE_SIZE)
        self.narrow_tile = int(shape[1] < TILE_SIZE)
        # A transposed tile swaps the faces and the values within them (only whole 32x32 or 16x16 tiles).
        self.transpose_within_face = self.transpose_of_faces = bool(transpose_tile)

    def get_tile_size(self, dtype: DataType) -> int:
        """Bytes of one tile in dtype: block floats pack their mantissas and one exponent byte per face row,
        the exponent section rounded up to 16 bytes."""
        datums = self.tile_shape[0] * self.tile_shape[1]
        if dtype in BLOCK_FLOAT_TYPES:
            exponents = round_up(self.face_shape[0] * self.num_faces, 16)
            return (datums if dtype == DataType.BFLOAT8_B else datums // 2) + exponents
        return datums * _DATUM_BYTES[dtype]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tile) and (self.tile_shape, self.transpose_of_faces) == (other.tile_shape,
                                                                                          other.transpose_of_faces)

    def __hash__(self) -> int:
        return hash((tuple(self.tile_shape), self.transpose_of_faces))

    def __repr__(self) -> str:
        return f"Tile with shape: {self.tile_shape}"


class DispatchCoreType(enum.Enum):
    WORKER = 0
    ETH = 1


class DispatchCoreAxis(enum.Enum):
    ROW = 0
    COL = 1


class DispatchCoreConfig:
    """Which cores run the command dispatcher (a device option; the simulator has no dispatcher to place)."""

    def __init__(self, type: DispatchCoreType = DispatchCoreType.WORKER,  # noqa: A002  (the real keyword)
                 axis: DispatchCoreAxis | None = None) -> None:
        from .errors import TTError

        if type is DispatchCoreType.ETH and axis is DispatchCoreAxis.COL:
            raise TTError("DispatchCoreConfig", "COL axis is not supported for ETH dispatch core type")
        self.type = type
        self.axis = axis or DispatchCoreAxis.ROW


class StorageType(enum.Enum):
    HOST = 0
    DEVICE = 1

    def __repr__(self) -> str:
        return f"StorageType.{self.name}"


_ELEMENT_SIZE = {DataType.BFLOAT16: 2, DataType.FLOAT32: 4, DataType.UINT32: 4, DataType.INT32: 4,
                 DataType.UINT16: 2, DataType.UINT8: 1, DataType.FP8_E4M3: 1}


def element_size(dtype: DataType) -> int:
    """ttnn.element_size: bytes per element; block floats have none (0.81.1 raises this ValueError, measured)."""
    if dtype in BLOCK_FLOAT_TYPES:
        raise ValueError("datum for bfp2, bfp4, bfp8 is invalid")
    return _ELEMENT_SIZE[dtype]
