"""Shape and placement ops on device tensors: reshape, permute, transpose, slice, concat, clone and the memory-config
conversions (to_memory_config, interleaved_to_sharded, sharded_to_interleaved), with ttnn 0.81.1's rules and the
placements it gives their outputs (tt-metal ttnn/cpp/ttnn/operations/data_movement/...).

Values are computed with torch on each chip's buffer; what the device decides is the output's shape, dtype, layout
and memory config (a sharded output's shard spec is derived as the real op derives it), whether it is a view on the
input's buffer, and which rule refuses a call. As on the device, an op builds its output's tensor spec (the
placement rules of placement.py) before it validates its own arguments.
"""

from __future__ import annotations

import builtins
import functools
import math
import weakref
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from .allocator import ELEMENT_BYTES, TILE_BYTES, Allocation, allocate
from .cores import CoreCoord, CoreRange, CoreRangeSet, num_cores_to_corerangeset
from .device import MeshDevice
from .errors import TTError, refuse_options
from .memory import (
    DRAM_MEMORY_CONFIG,
    L1_MEMORY_CONFIG,
    BufferType,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)
from .placement import physical_2d
from .rules import rules
from .tensor import Tensor, require_device, store_as
from .trace import device_op
from .types import BLOCK_FLOAT_TYPES, TILE_SIZE, DataType, Layout, round_up

_IL, _HS = TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED
_WS, _BS = TensorMemoryLayout.WIDTH_SHARDED, TensorMemoryLayout.BLOCK_SHARDED
_L1_ALIGN = 16  # hal::get_l1_alignment() on Wormhole and Blackhole

# ---------------- rules ----------------
SHAPE = rules("Shape", "tt_metal/common/shape.cpp")
# A dim index out of [-rank, rank): the real check prints the normalized index as an unsigned 64-bit value.
INDEX = SHAPE("Index is out of bounds for the rank, should be between 0 and {} however is {}",
              "transpose/dim-out-of-range", "concat/dim-out-of-range", "concat/dim-too-negative",
              "concat/negative-dim")

RS = rules("reshape", "data_movement/reshape_view/reshape.cpp")
_RC = "data_movement/reshape_view/reshape_common.cpp"
RS_TWO_INFERRED = RS("Shape cannot have more than 1 elements that is set to -1! Shape used: {}",
                     "reshape/two-minus-one", "reshape/minus-one", source=_RC)
RS_VOLUME = RS("Invalid arguments to reshape", "reshape/volume-mismatch", "reshape/minus-one-indivisible",
               "reshape/zero-volume", "reshape/to-zero-volume", "reshape/minus-one", source=_RC)
RS_ZERO_TO_NONZERO = RS("Tensor volume is 0, but shape's volume is not",
                        unreachable="the list-shape overload refuses any change of volume first (Invalid arguments "
                                    "to reshape)")
RS_NONZERO_TO_ZERO = RS("Tensor volume is not 0, but shape volume is 0",
                        unreachable="the list-shape overload refuses any change of volume first (Invalid arguments "
                                    "to reshape)")
RS_NO_SPEC = RS("ttnn.reshape: sharded output memory_config (layout={}) was supplied without a shard_spec, and no "
                "input_shard_spec is available (input is likely interleaved). Either provide a shard_spec on "
                "memory_config or omit memory_config to inherit it from the input tensor.",
                "reshape/dram-to-sharded-no-spec", "reshape/sharded-no-spec-seeded")
RS_DTYPE = RS("Can only work with bfloat16/float32 or int32/uint32 tensors", "reshape/uint16-copy",
              "reshape/uint32-copy", source="data_movement/reshape_view/device/reshape_device_operation.cpp")

U = rules("unsqueeze_to_4D", "ttnn/cpp/ttnn/operations/core/core.cpp")
U_RANK = U("Tensor rank is greater than 4", "unsqueeze/rank-5", "unsqueeze/rank-5-leading-1", "unsqueeze/rank-4")

P = rules("permute", "data_movement/permute/permute.cpp")
P_RANK = P("The number of dimensions in the tensor input does not match the length of the desired ordering",
           "permute/too-few-dims", "permute/wh")
P_DEVICE = P("Tensor must already be on device", "permute/host", "permute/wh")
P_RM_PAGE = P("Shard page size must be aligned to {}B for L1 Tensor", "permute/row-major-sharded-out-unaligned",
              "permute/row-major-width-sharded-out")

T = rules("transpose", "data_movement/transpose/device/transpose_device_operation.cpp")
T_PAD = T("Non-zero padding {} is not supported for any transpose other than HC.", "transpose/wh-pad-value",
          "transpose/hc-pad-value")
T_DIMS = T("Transpose HC, WH, CN are the only supported transpose operations. Transpose {} is not supported.",
           unreachable="ttnn.transpose routes every other pair of dims through ttnn.permute")
T_TILED = T("Tiled tensor H {} W {} must be a multiple of TILE HEIGHT {} and TILE WIDTH",
            unreachable="a TILE tensor's padded H and W are always whole tiles")

S = rules("slice", "data_movement/slice/slice.cpp")
S_RANK = S("Input rank {} and begins {} must have the same size", "slice/rank-mismatch", "slice/tile-aligned")
S_ENDS = S("Start {} and end {} must have the same size", "slice/ends-length", "slice/tile-aligned")
S_STEPS = S("Step {} must have the same size as start {} and end", "slice/steps-length", "slice/tile-strided")
S_BLOCK_GRID = S("BLOCK_SHARDED grid must be a full rectangle; got {} cores for {}x{} bounding box",
                 unreachable="a block-sharded tensor cannot be created on a grid of several ranges (TensorSpec's "
                             "one-rectangle rule)")
S_BFP8_STRIDE = S("Strided slice is not supported for BFLOAT8 tensors", "slice/bfp8-strided", "slice/tile-strided")
S_ORDER = S("End {} must be greater than or equal to start {}", "slice/end-before-start", "slice/empty")
S_START = S("Slice start[{}] ({}) must be less than input tensor shape[{}] ({})", "slice/start-past-padded-dim",
            "slice/tile-odd-start", source="data_movement/slice/device/slice_device_operation.cpp")
S_END = S("Ends {} must be less than or equal to the shape of the tensor {}", "slice/end-past-dim",
          "slice/end-in-padding", source="data_movement/slice/device/slice_device_operation.cpp")

C = rules("concat", "data_movement/concat/concat.cpp")
C_EMPTY = C("ttnn.concat: expected a non-empty list of Tensors!", "concat/empty-list", "concat/single")
C_OUTPUT = C("optional output tensor currently unsupported!", "concat/output-tensor", "concat/width")
C_SHAPES = C("All dimensions must be the same size except for the dimension along which the contenation is taking "
             "place.", "concat/other-dim-differs", "concat/rank-differs", "concat/height")
_CD = "data_movement/concat/device/concat_device_operation.cpp"
C_BLOCK_MAX = C("Block-sharded concat supports at most 16 input tensors (got {}). Batching with intermediate shard "
                "specs is not supported for block-sharded concat.", "concat/block-sharded-17",
                "concat/block-sharded-width", source=_CD)
C_DRAM_GROUPS = C("Groups > 1 is not supported for DRAM-sharded concat (groups={} was provided). Move the inputs and "
                  "output to L1 sharding, or unshard them first.", "concat/dram-sharded-groups",
                  "concat/dram-height-sharded-width", source=_CD)
C_DTYPE = C("All Tensors should have same dtypes.", "concat/dtype-differs", "concat/width", source=_CD)
C_MIXED = C("All tensors must be sharded or all must be interleaved", "concat/sharded-and-interleaved",
            "concat/height-sharded-width", source=_CD)
C_GRID = C("Sharded tensors must have the same grid.", "concat/sharded-grids-differ", "concat/height-sharded-width",
           source=_CD)
C_LAYOUT = C("Sharded tensors must have the same memory layout.", "concat/sharded-layouts-differ",
             "concat/height-sharded-width", source=_CD)
C_ORIENT = C("Sharded tensors must have the same shard orientation.", "concat/sharded-orientations-differ",
             "concat/height-sharded-width", source=_CD)
C_OUT_LAYOUT = C("Sharded output and inputs must have the same memory layout.",
                 "concat/height-sharded-out-width-sharded", "concat/height-sharded-width-out", source=_CD)
C_OUT_GRID = C("Sharded output and inputs must have the same grid.", "concat/height-sharded-out-other-grid",
               "concat/height-sharded-width-out", source=_CD)
C_OUT_ORIENT = C("Sharded output and inputs must have the same shard orientation.",
                 "concat/height-sharded-out-col-major", "concat/height-sharded-width-out", source=_CD)
C_WIDTH = C("Only support width concat on height-sharded or block-sharded tensors.", "concat/width-sharded-width",
            "concat/block-sharded-width", source=_CD)
C_HEIGHT = C("Only support height concat on width-sharded or block-sharded tensors.", "concat/height-sharded-height",
             "concat/width-sharded-height", source=_CD)
C_OTHER_DIM = C("Only width or height concat on sharded tensors", "concat/height-sharded-batch",
                "concat/height-sharded-width-out", source=_CD)
C_GROUPS = C("Groups > 1 is only supported on height-sharded tensors (groups={} and memory_layout={} was provided)",
             "concat/block-sharded-groups", "concat/groups-height-sharded", source=_CD)
# The row-major sharded width concat of two inputs borrows each shard as a circular buffer of 32-byte-aligned rows,
# which outgrows a shard of rows aligned to 16 bytes (checked when the program is built).
C_RM_DFB = C("DFB '{}' (entry_size {} * num_entries {} = {} bytes) is larger than the per-bank allocation of its "
             "borrowed TensorParameter '{}' ({} bytes).", "concat/row-major-height-sharded-width",
             "concat/row-major-height-sharded-width-32b",
             source="tt_metal/impl/metal2_host_api/program_spec/validation/resource/dfb.cpp")

K = rules("clone", "data_movement/clone/device/clone_device_operation.cpp")
K_ON_DEVICE = K("Clone: input must be on device",
                unreachable="ttnn 0.81.1 segfaults on a host input before validating it (measured)")
K_DTYPE = K("Clone: data type conversion is only supported with tile layout", "clone/row-major-dtype",
            "clone/row-major-same-dtype")
K_SAME_LAYOUT = K("Clone: input and output must have the same memory layout when both are sharded",
                  "clone/height-sharded-to-width-sharded", "clone/height-sharded-same-spec")
K_SAME_SPEC = K("Clone: input and output shard specs must be identical (same grid, shape, and orientation)",
                "clone/height-sharded-other-grid", "clone/height-sharded-same-spec")
K_MIXED = K("Clone: mixed sharded/interleaved layout not currently supported. Both input and output must have the "
            "same layout.", "clone/height-sharded-to-dram", "clone/dram-to-height-sharded", "clone/to-l1")

DEV = rules("device_operation", "ttnn/api/ttnn/device_operation.hpp")
ON_DEVICE = DEV("Device Operations expect device tensors as inputs", "tmc/host", "i2s/host-input", "tmc/dram-to-l1")

M = rules("to_memory_config", "core/to_memory_config/to_memory_config_op.cpp")
M_DRAM_BLOCK = M("We don't support DRAM block sharding", "tmc/to-dram-block-sharded",
                 "tmc/height-sharded-to-dram-block-sharded", "tmc/to-dram-width-sharded")
M_DTYPE_TILE = M("Only tile layout supports dtype conversion", "tmc/dtype-row-major", "tmc/dtype-tile",
                 source="data_movement/copy/device/copy_device_operation.cpp")

_I2S = "data_movement/sharded/interleaved_to_sharded/device/interleaved_to_sharded_op.cpp"
I = rules("interleaved_to_sharded", _I2S)  # noqa: E741 (the op's initial, as the other rule sets)
I_BFP_ROW_MAJOR = I("Output dtype BFLOAT8_B/BFLOAT4_B requires TILE layout, but input tensor layout is ROW_MAJOR",
                    unreachable="the output's tensor spec is built before validation and refuses a block-float "
                                "row-major tensor first (Only TILE layout is supported for BFLOAT8_B dtype!)")
I_INPUT = I("Input tensor memory layout must be INTERLEAVED, but got {}", "i2s/sharded-input", "i2s/l1-input")
I_TARGET = I("Output memory config must be sharded", "i2s/interleaved-target", "i2s/height")
I_DRAM_BLOCK = I("We don't support DRAM block sharding", "i2s/dram-block", "i2s/dram-height")
I_RM_PAGE = I("Shard page size must currently have L1 aligned page size", "i2s/row-major-w7", "i2s/row-major-dram-w7",
              "i2s/row-major")
I_DTYPE = I("Input tensor layout must be TILE when dtype conversion is needed", "i2s/dtype-row-major",
            "i2s/dtype-tile")

O = rules("sharded_to_interleaved",  # noqa: E741
          "data_movement/sharded/sharded_to_interleaved/device/sharded_to_interleaved_device_operation.cpp")
O_SHARDED = O("Input tensor must be sharded", "s2i/interleaved-with-shard-spec", "s2i/height-to-dram")
O_L1 = O("Input tensor must be in L1", "s2i/dram-sharded-input", "s2i/height-to-dram")
O_TARGET = O("Output memory config must be Interleaved", "s2i/sharded-target", "s2i/height-to-l1")
O_RM_PAGE = O("Shard page size must be aligned to {}B for L1 Tensor", "s2i/row-major-w7", "s2i/row-major")
O_DTYPE = O("If diff output type, tensor must be TILED", "s2i/dtype-row-major", "s2i/dtype-tile")


# ---------------- tensor specs ----------------
@dataclass(frozen=True)
class Spec:
    """What the device knows of a tensor before it exists: logical shape, dtype, layout and memory config."""

    shape: tuple[int, ...]
    dtype: DataType
    layout: Layout
    mc: MemoryConfig

    @classmethod
    def of(cls, t: Tensor) -> Spec:
        return cls(tuple(t.shape), t.dtype, t.layout, t.memory_config())

    @property
    def padded(self) -> tuple[int, ...]:
        if self.layout != Layout.TILE or not self.shape:
            return self.shape
        dims = list(self.shape)
        dims[-1] = round_up(dims[-1], TILE_SIZE)
        if len(dims) > 1:
            dims[-2] = round_up(dims[-2], TILE_SIZE)
        return tuple(dims)

    @property
    def sharded(self) -> bool:
        return self.mc.is_sharded()


def _mem_layout_name(layout: TensorMemoryLayout) -> str:
    return f"TensorMemoryLayout::{layout.name}"


def _elem_bytes(dtype: DataType) -> int:
    return ELEMENT_BYTES.get(dtype, 4)  # block floats count 4 bytes an element where a row-major page is asked


def _normalize(shape: tuple[int, ...], idx: int) -> int:
    """Shape::get_normalized_index: a negative index counts from the end; out of range is refused."""
    rank = len(shape)
    n = idx + rank if idx < 0 else idx
    INDEX.require(0 <= n < rank, rank - 1, n % 2**64)
    return n


def _emit(ref: Tensor, shards: list[torch.Tensor], spec: Spec, op: str) -> Tensor:
    """A new device tensor of `spec` (its placement checked and its buffer reserved) holding `shards`."""
    return Tensor.make([store_as(s, spec.dtype) for s in shards], spec.dtype, spec.layout, ref.device_or_none,
                       spec.mc, op=op)


def _same(shard: torch.Tensor) -> torch.Tensor:
    return shard


def _moved(t: Tensor, spec: Spec, op: str) -> Tensor:
    """_emit of t's own buffers in another placement (and dtype): the data movement ops that copy pages as they are.
    Run per device and recorded, so a trace replays them as kernels (the buffers handed on, rounded to the new
    dtype) instead of rerunning every placement check."""
    from .compute import output, per_device

    return output(t, per_device(_same, t), spec.dtype, spec.layout, spec.mc, op=op)


def _view(t: Tensor, shards: list[torch.Tensor]) -> Tensor:
    """A new tensor object on t's very buffer (the device reshapes in place when the pages do not move)."""
    return Tensor.make(shards, t.dtype, t.layout, t.device_or_none, t.memory_config(), alloc=t._alloc)


def _check_placement(op: str, ref: Tensor, spec: Spec) -> None:
    """Build the output's tensor spec without reserving it: the device does this before it validates the op."""
    from .placement import check_placement

    check_placement(op, ref.device_or_none, spec.shape, spec.layout, spec.mc, spec.dtype)


# ---------------- shard spec derivations ----------------
def _adjust_shard(shard: ShardSpec, from_shape: tuple[int, ...], to_shape: tuple[int, ...]) -> ShardSpec | None:
    """adjust_shard_spec_to_shape: scale the shard by the change of the 2-D view, None unless exact."""
    from_h, to_h = math.prod(from_shape[:-1]), math.prod(to_shape[:-1])
    from_w, to_w = from_shape[-1], to_shape[-1]
    if from_h == 0 or from_w == 0:
        return None
    h_num, w_num = shard.shape[0] * to_h, shard.shape[1] * to_w
    if h_num % from_h or w_num % from_w:
        return None
    return ShardSpec(shard.grid, [h_num // from_h, w_num // from_w], shard.orientation)


def _tile_aligned(shape: list[int]) -> bool:
    return shape[0] % TILE_SIZE == 0 and shape[1] % TILE_SIZE == 0


def _synthesize_shard(grid: tuple[int, int], padded: tuple[int, ...], layout: TensorMemoryLayout,
                      orientation: ShardOrientation, tile: bool = True) -> ShardSpec:
    """synthesize_output_shard_spec: a fresh shard spec over the whole compute grid for a tensor of `padded`."""
    gx, gy = grid
    n = gx * gy
    height, width = math.prod(padded[:-1]), padded[-1]
    ha = wa = TILE_SIZE if tile else 1
    row_wise = orientation == ShardOrientation.ROW_MAJOR
    whole = CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(gx - 1, gy - 1))])
    if height == 0 or width == 0:
        sh, sw = (ha, round_up(width, wa)) if layout == _HS else (round_up(height, ha), wa)
        return ShardSpec(CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(0, 0))]), [sh, sw], orientation)
    if layout == _HS:
        sh, sw = round_up(-(-round_up(height, n * ha) // n), ha), round_up(width, wa)
        used = min(max(-(-height // sh), 1), n)
        cores = whole if used == n else num_cores_to_corerangeset(used, CoreCoord(gx, gy), row_wise)
    elif layout == _WS:
        sh, sw = round_up(height, ha), round_up(-(-width // n), wa)
        used = min(max(-(-width // sw), 1), n)
        cores = whole if used == n else num_cores_to_corerangeset(used, CoreCoord(gx, gy), row_wise)
    else:
        h_div, w_div = (gy, gx) if row_wise else (gx, gy)
        sh = round_up(-(-round_up(height, h_div * ha) // h_div), ha)
        sw = round_up(-(-width // w_div), wa)
        n_h, n_w = -(-height // sh), -(-width // sw)
        x, y = (n_w, n_h) if row_wise else (n_h, n_w)
        x, y = max(x, 1), max(y, 1)
        cores = whole if (x, y) == (gx, gy) else CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(x - 1, y - 1))])
    return ShardSpec(cores, [sh, sw], orientation)


def _derive_sharded_output(a: Spec, out_padded: tuple[int, ...], mc: MemoryConfig, grid: tuple[int, int]
                           ) -> MemoryConfig:
    """A sharded output config without a shard spec gets one: the input's scaled to the output shape when both are
    sharded alike and the scaled shard stays whole tiles, else a fresh one over the compute grid (transpose and
    permute device ops)."""
    if not mc.is_sharded() or mc.shard_spec is not None:
        return mc
    if a.sharded and a.mc.shard_spec is not None and a.mc.memory_layout == mc.memory_layout:
        adj = _adjust_shard(a.mc.shard_spec, a.padded, out_padded)
        if adj is not None and (a.layout != Layout.TILE or _tile_aligned(adj.shape)):
            return MemoryConfig(mc.memory_layout, mc.buffer_type, adj)
    orientation = a.mc.shard_spec.orientation if a.sharded and a.mc.shard_spec else ShardOrientation.ROW_MAJOR
    return MemoryConfig(mc.memory_layout, mc.buffer_type, _synthesize_shard(grid, out_padded, mc.memory_layout,
                                                                            orientation))


def _grid(t: Tensor) -> tuple[int, int]:
    return tuple(t.device_or_none.chip.grid)


# ---------------- reshape ----------------
def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _infer_shape(t: Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """infer_dims_for_reshape: one -1 takes the rest of the volume; the volume must be kept."""
    RS_TWO_INFERRED.require(shape.count(-1) <= 1, "(" + "".join(f"{d}," for d in shape) + ")")
    volume = t.logical_volume()
    if -1 in shape:
        known = _numel(tuple(d for d in shape if d != -1))
        RS_VOLUME.require(known != 0 and volume % known == 0)
        shape = tuple(volume // known if d == -1 else d for d in shape)
    RS_VOLUME.require(_numel(shape) == volume)
    return shape


def _to_3d(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) > 3:
        return (math.prod(shape[:-2]), *shape[-2:])
    return (1,) * (3 - len(shape)) + tuple(shape)


def _recompute_shard(mc: MemoryConfig, out: Spec, input_shard: ShardSpec | None, explicit: bool) -> MemoryConfig:
    """recompute_shard_spec_for_output: a sharded reshape output keeps the (input's or given) grid and takes the
    shard that spreads the new shape over it."""
    if mc.shard_spec is None:
        RS_NO_SPEC.require(input_shard is not None, _mem_layout_name(mc.memory_layout))
        return _recompute_shard(MemoryConfig(mc.memory_layout, mc.buffer_type, input_shard), out, None, False)
    src = mc.shard_spec
    tile = out.layout == Layout.TILE
    align_h = align_w = TILE_SIZE if tile else 1
    phys_h, phys_w = physical_2d(out.shape, out.layout)
    box = src.grid.bounding_box()
    if box.num_cores() != src.grid.num_cores():
        return MemoryConfig(_IL, mc.buffer_type)  # non-rectangular grid: the real op falls back to interleaved
    gx, gy = box.grid_size().x, box.grid_size().y
    row_major = src.orientation == ShardOrientation.ROW_MAJOR
    if mc.memory_layout == _BS:
        cores_h, cores_w = (gy, gx) if row_major else (gx, gy)
        if explicit and src.shape[0] % align_h == 0 and src.shape[1] % align_w == 0 \
                and cores_h * src.shape[0] >= phys_h and cores_w * src.shape[1] >= phys_w:
            return mc

        def best(dim: int, max_n: int, align: int) -> int:
            return next((n for n in range(max_n, 0, -1) if dim % n == 0 and (dim // n) % align == 0), 0)

        ny, nx = best(phys_h, cores_h, align_h), best(phys_w, cores_w, align_w)
        if ny == 0 or nx == 0:
            return MemoryConfig(_IL, mc.buffer_type)
        end = CoreCoord(box.start.x + nx - 1, box.start.y + ny - 1) if row_major else \
            CoreCoord(box.start.x + ny - 1, box.start.y + nx - 1)
        shard = [round_up(-(-phys_h // ny), align_h), round_up(-(-phys_w // nx), align_w)]
        return MemoryConfig(_BS, mc.buffer_type, ShardSpec(CoreRangeSet([CoreRange(box.start, end)]), shard,
                                                           src.orientation))
    n = src.grid.num_cores()
    if mc.memory_layout == _HS:
        shard = [round_up(-(-phys_h // n), align_h), phys_w]
    else:
        shard = [phys_h, round_up(-(-phys_w // n), align_w)]
    return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(src.grid, shard, src.orientation))


# The page-mapping tensors of tiled reshapes: the real op uploads one per program and keeps it (in DRAM) for as long
# as the program stays in the device's program cache.
_MAPPINGS: weakref.WeakKeyDictionary[MeshDevice, dict[tuple, Allocation]] = weakref.WeakKeyDictionary()


def _faced_offset(h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Offset of element (h, w) inside its 32x32 tile stored as four 16x16 faces."""
    ih, iw = h % TILE_SIZE, w % TILE_SIZE
    return ((ih // 16) * 2 + iw // 16) * 256 + (ih % 16) * 16 + iw % 16


def _mapping_segments(in3: tuple[int, ...], out3: tuple[int, ...]) -> tuple[int, int]:
    """(output pages, segments per mapping page) of the tiled reshape's page map (reshape_tiled_program_factory):
    each output tile lists, per input tile it reads, the runs of elements contiguous in both tiles."""
    _, h_i, w_i = in3
    c_o, h_o, w_o = out3
    tw_i, th_i = -(-w_i // TILE_SIZE), -(-h_i // TILE_SIZE)
    tw_o, th_o = -(-w_o // TILE_SIZE), -(-h_o // TILE_SIZE)
    pages = c_o * th_o * tw_o
    widest = 0
    for page in range(pages):
        c, rest = divmod(page, th_o * tw_o)
        h0, w0 = (rest // tw_o) * TILE_SIZE, (rest % tw_o) * TILE_SIZE
        hh, ww = np.meshgrid(np.arange(h0, min(h_o, h0 + TILE_SIZE)), np.arange(w0, min(w_o, w0 + TILE_SIZE)),
                             indexing="ij")
        hh, ww = hh.ravel(), ww.ravel()
        flat = c * h_o * w_o + hh * w_o + ww
        ci, hw = np.divmod(flat, h_i * w_i)
        hi, wi = np.divmod(hw, w_i)
        page_i = ci * th_i * tw_i + (hi // TILE_SIZE) * tw_i + wi // TILE_SIZE
        off_i, off_o = _faced_offset(hi, wi), _faced_offset(hh, ww)
        starts = np.ones(len(page_i), dtype=bool)
        starts[1:] = (page_i[1:] != page_i[:-1]) | (off_i[1:] != off_i[:-1] + 1) | (off_o[1:] != off_o[:-1] + 1)
        used, counts = np.unique(page_i[starts], return_counts=True)
        widest = max(widest, int(counts.max()) * len(used))
    return pages, widest + widest % _L1_ALIGN  # the real op "aligns" this way


def _reshape_mapping(dev: MeshDevice, in_spec: Spec, out3: tuple[int, ...], out_mc: MemoryConfig) -> None:
    """Keep the page map of this reshape program allocated, as the real op does on a program-cache miss."""
    if dev._programs is None:
        return  # program cache disabled: the map lives only while the op runs
    key = (_to_3d(in_spec.shape), in_spec.dtype, repr(in_spec.mc), out3, repr(out_mc))
    maps = _MAPPINGS.setdefault(dev, {})
    if key in maps:
        return
    pages, segments = _mapping_segments(_to_3d(in_spec.shape), out3)
    maps[key] = allocate(dev, (pages, 4 * segments), DataType.UINT32, Layout.ROW_MAJOR, DRAM_MEMORY_CONFIG)


def _release_mappings(method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: MeshDevice, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        for alloc in _MAPPINGS.pop(self, {}).values():
            alloc.free()
        return out

    return wrapper


# Clearing the program cache frees the page maps its programs own.
MeshDevice.clear_program_cache = _release_mappings(MeshDevice.clear_program_cache)
MeshDevice.disable_and_clear_program_cache = _release_mappings(MeshDevice.disable_and_clear_program_cache)


def _padded(dims: tuple[int, ...]) -> tuple[int, ...]:
    return (*dims[:-2], *(round_up(d, TILE_SIZE) for d in dims[-2:])) if len(dims) >= 2 else dims


def _host_reshape(t: Tensor, new: tuple[int, ...]) -> Tensor:
    """ttnn.reshape of a host tensor (real 0.81.1 accepts it; probed on the mock N150). Same volume: the values keep
    their logical order (Tensor.reshape). A tiled tensor may also change its logical shape within the same padded
    shape ([1, 4, 32, 128] -> [1, 4, 8, 128]): the tiles stay and the new shape reads its region of them."""
    new = _infer_shape(t, new) if -1 in new else new
    old = tuple(t.shape)
    vol_old, vol_new = math.prod(old), math.prod(new)
    if vol_old == vol_new or t.layout != Layout.TILE or len(old) != len(new) or _padded(old) != _padded(new):
        return t.reshape(new)

    def regioned(s: torch.Tensor) -> torch.Tensor:
        grown = torch.zeros(_padded(old), dtype=s.dtype)
        grown[tuple(builtins.slice(0, d) for d in old)] = s
        return grown[tuple(builtins.slice(0, d) for d in new)].clone()

    return Tensor.make([regioned(s) for s in t._shards], t.dtype, t.layout, None)


@device_op()
def reshape(
    input_tensor: Tensor,
    shape: Any,
    *,
    memory_config: MemoryConfig | None = None,
    pad_value: float | None = None,
    reshape_tile_mode: Any = None,
    sub_core_grids: Any = None,
    skip_padding_fill: bool = False,
) -> Tensor:
    op = "reshape"
    if input_tensor.device() is None:
        return _host_reshape(input_tensor, tuple(int(d) for d in shape))
    require_device(op, input_tensor)
    refuse_options(op, sub_core_grids=sub_core_grids)
    t = input_tensor
    new = _infer_shape(t, tuple(int(d) for d in shape))
    mc = memory_config or t.memory_config()
    old = tuple(t.shape)
    if new == old and mc == t.memory_config():
        return t
    shards = [s.reshape(new) for s in t._shards]
    if t.logical_volume() == 0:
        return _view(t, shards)  # zero-volume tensors are metadata only
    if new == old and not (mc.is_sharded() and mc.shard_spec is None):
        return _to_memory_config(t, mc, None)
    last, last_old = (new[-1] if new else 1), (old[-1] if old else 1)
    h, h_old = (new[-2] if len(new) > 1 else 1), (old[-2] if len(old) > 1 else 1)
    if last == last_old and mc.is_sharded() == t.is_sharded() and \
            (mc.buffer_type == BufferType.DRAM) == (t.memory_config().buffer_type == BufferType.DRAM) and \
            (t.layout == Layout.ROW_MAJOR or h == h_old or (h % TILE_SIZE == 0 and h_old % TILE_SIZE == 0)):
        return _view(t, shards)  # the pages stay where they are
    out_spec = _reshape_copy_spec(t, new, mc, explicit=memory_config is not None)
    return _emit(t, shards, out_spec, op)


def _reshape_copy_spec(t: Tensor, new: tuple[int, ...], mc: MemoryConfig, explicit: bool) -> Spec:
    """The output of a reshape that moves pages, and the device's checks on the way (reshape_rm / reshape_tiled)."""
    a = Spec.of(t)
    input_shard = t.memory_config().shard_spec if t.is_sharded() else None
    if t.layout == Layout.ROW_MAJOR:
        # 2-D row-major reshape on interleaved buffers, then sharded again with a recomputed spec.
        RS_DTYPE.require(t.dtype in (DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32))
        out = Spec(new, t.dtype, t.layout, mc)
        if mc.is_sharded():
            flat = (math.prod(new[:-1]), new[-1]) if len(new) > 1 else (1, new[-1])
            mc = _recompute_shard(mc, Spec(flat, t.dtype, t.layout, MemoryConfig(_IL, mc.buffer_type)),
                                  input_shard, False)
        return replace(out, mc=mc)
    out3 = _to_3d(new)
    work = a  # what the reshape program itself reads
    if t.dtype in BLOCK_FLOAT_TYPES:
        # Block floats are typecast to bfloat16 around an interleaved reshape, then sharded again.
        work = Spec(_to_3d(a.shape), DataType.BFLOAT16, Layout.TILE, MemoryConfig(_IL, a.mc.buffer_type))
        prim_mc = MemoryConfig(_IL, mc.buffer_type) if mc.is_sharded() else mc
        out_mc = mc
        if mc.is_sharded():
            out_mc = _recompute_shard(mc, Spec(out3, t.dtype, Layout.TILE, prim_mc), input_shard, explicit)
    else:
        out_mc = mc
        if mc.is_sharded():
            out_mc = _recompute_shard(mc, Spec(out3, t.dtype, Layout.TILE, MemoryConfig(_IL, mc.buffer_type)),
                                      input_shard, explicit)
            if t.is_sharded() and not out_mc.is_sharded():
                work = replace(work, mc=MemoryConfig(_IL, t.memory_config().buffer_type))
        prim_mc = out_mc
    RS_DTYPE.require(work.dtype in (DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32))
    _reshape_mapping(t.device_or_none, replace(work, shape=_to_3d(work.shape)), out3, prim_mc)
    return Spec(new, t.dtype, Layout.TILE, out_mc)


@device_op()
def unsqueeze_to_4D(tensor: Tensor) -> Tensor:  # noqa: N802 (the real name)
    rank = tensor.shape.rank
    U_RANK.require(rank <= 4)
    if rank == 4:
        return tensor
    shape = (1,) * (4 - rank) + tuple(tensor.shape)
    return _view(tensor, [s.reshape(shape) for s in tensor._shards])


# ---------------- transpose and permute (specs) ----------------
def _native(a: Spec) -> bool:
    """is_native_transpose_sharding for the input: L1 height/width sharded (row-major shards of whole tiles of
    elements), evenly."""
    mc = a.mc
    if not mc.is_sharded() or mc.buffer_type == BufferType.DRAM or mc.memory_layout == _BS or mc.shard_spec is None:
        return False
    sh, sw = mc.shard_spec.shape
    if a.layout == Layout.ROW_MAJOR and (sh * sw) % (TILE_SIZE * TILE_SIZE):
        return False
    padded = a.padded
    return len(padded) >= 2 and math.prod(padded[:-1]) % sh == 0 and padded[-1] % sw == 0


def _transposed(a: Spec, kind: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(logical, padded) output shapes of the 4-D transpose device op."""
    shape, padded = list(a.shape), list(a.padded)
    if kind == "CN":
        shape[0], shape[1], padded[0], padded[1] = shape[1], shape[0], padded[1], padded[0]
    elif kind == "WH":
        shape[2], shape[3], padded[2], padded[3] = shape[3], shape[2], padded[3], padded[2]
    elif a.layout == Layout.ROW_MAJOR:
        shape[1], shape[2], padded[1], padded[2] = shape[2], shape[1], padded[2], padded[1]
    else:
        c, hh = shape[1], shape[2]
        shape[1], shape[2] = hh, c
        padded[1], padded[2] = hh, round_up(c, TILE_SIZE)
    return tuple(shape), tuple(padded)


def _transpose_op_mc(a: Spec, kind: str, mc_arg: MemoryConfig | None) -> MemoryConfig:
    """transpose_'s output config: an unrequested (or spec-less sharded) output of a natively sharded input keeps
    the input's shards where they scale to whole tiles (a [N=1, C=1] height-sharded WH becomes width sharded), else
    L1 interleaved; other inputs keep their memory layout."""
    if mc_arg is not None and not (mc_arg.is_sharded() and mc_arg.shard_spec is None):
        return mc_arg
    if a.sharded and _native(a):
        user = mc_arg is not None and mc_arg.is_sharded()
        seed = mc_arg if user else a.mc
        fallback = MemoryConfig(mc_arg.memory_layout, mc_arg.buffer_type) if user else L1_MEMORY_CONFIG
        spec = a.mc.shard_spec
        padded = a.padded
        layouts_match = not user or mc_arg.memory_layout == a.mc.memory_layout
        if kind == "WH":
            if not user and padded[0] == 1 and padded[1] == 1 and spec.shape[1] == padded[3]:
                shard = [spec.shape[1], spec.shape[0]]
                if a.layout == Layout.TILE and not _tile_aligned(shard):
                    return fallback
                return MemoryConfig(_WS, seed.buffer_type, ShardSpec(spec.grid, shard, spec.orientation))
            adj = _adjust_shard(spec, padded, _transposed(a, "WH")[1])
            if adj is None or not layouts_match or (a.layout == Layout.TILE and not _tile_aligned(adj.shape)):
                return fallback
            return MemoryConfig(seed.memory_layout, seed.buffer_type, adj)
        if kind == "HC" and a.layout == Layout.TILE:
            adj = _adjust_shard(spec, padded, _transposed(a, "HC")[1])
            if adj is None or not layouts_match or not _tile_aligned(adj.shape):
                return fallback
            return MemoryConfig(seed.memory_layout, seed.buffer_type, adj)
        return seed
    if mc_arg is not None:
        return mc_arg
    if a.sharded:
        return MemoryConfig(a.mc.memory_layout, a.mc.buffer_type)
    return a.mc


def _transpose4(a: Spec, kind: str, mc_arg: MemoryConfig | None, pad: float, grid: tuple[int, int]) -> Spec:
    """The 4-D transpose device op (WH, HC or CN) or the permute it is routed to."""
    mc = _transpose_op_mc(a, kind, mc_arg)
    if not a.sharded and a.layout == Layout.ROW_MAJOR:
        order = {"HC": (0, 2, 1, 3), "CN": (1, 0, 2, 3), "WH": (0, 1, 3, 2)}[kind]
        return _permute_prim(a, order, mc, grid)
    T_PAD.require(kind == "HC" or pad == 0.0, f"{pad:g}")
    shape, padded = _transposed(a, kind)
    return Spec(shape, a.dtype, a.layout, _derive_sharded_output(a, padded, mc, grid))


def _permute_prim(a: Spec, dims: tuple[int, ...], mc: MemoryConfig, grid: tuple[int, int]) -> Spec:
    """The permute device op: the dims reordered; a spec-less sharded output derives its shard spec."""
    shape = tuple(a.shape[d] for d in dims)
    padded = list(shape)
    if a.layout == Layout.TILE and len(padded) >= 2:
        padded[-1], padded[-2] = round_up(padded[-1], TILE_SIZE), round_up(padded[-2], TILE_SIZE)
    return Spec(shape, a.dtype, a.layout, _derive_sharded_output(a, tuple(padded), mc, grid))


def _clone_spec(a: Spec, dtype: DataType | None, mc: MemoryConfig | None) -> Spec:
    out = Spec(a.shape, dtype or a.dtype, a.layout, mc or a.mc)
    K_DTYPE.require(out.dtype == a.dtype or a.layout == Layout.TILE)
    in_sharded, out_sharded = a.mc.is_sharded(), out.mc.is_sharded()
    if in_sharded and out_sharded:
        K_SAME_LAYOUT.require(a.mc.memory_layout == out.mc.memory_layout)
        K_SAME_SPEC.require(out.mc.shard_spec == a.mc.shard_spec)
    else:
        K_MIXED.require(in_sharded == out_sharded)
    return out


def _transpose_spec(a: Spec, d1: int, d2: int, mc_arg: MemoryConfig | None, pad: float,
                    grid: tuple[int, int]) -> Spec | None:
    """ttnn.transpose's output (None: the input itself). d1, d2 are normalized."""
    rank = len(a.shape)
    if rank > 4:
        order = list(range(rank))
        order[d1], order[d2] = order[d2], order[d1]
        return _permute_spec(a, tuple(order), mc_arg, pad, grid)
    lift = 4 - rank
    a4 = replace(a, shape=(1,) * lift + a.shape)
    d1, d2 = d1 + lift, d2 + lift
    keep_dtype = a.dtype
    if a.dtype == DataType.BFLOAT8_B and d1 + d2 not in (5, 1):
        a4 = replace(a4, dtype=DataType.BFLOAT16)  # typecast around the transposes bf8 cannot do
    if d1 == d2 or (a4.padded[d1] == 1 and a4.padded[d2] == 1):
        if mc_arg is None or mc_arg == a4.mc:
            return None
        out = _clone_spec(a4, None, mc_arg)
    else:
        kind = {frozenset((0, 1)): "CN", frozenset((1, 2)): "HC", frozenset((2, 3)): "WH"}.get(frozenset((d1, d2)))
        if kind is None:  # NH, NW, CW: through permute
            order = list(range(4))
            order[d1], order[d2] = order[d2], order[d1]
            out = _permute_spec(a4, tuple(order), mc_arg, pad, grid) or a4
        else:
            out = _transpose4(a4, kind, mc_arg, pad, grid)
    return replace(out, shape=out.shape[lift:], dtype=keep_dtype)


def _permute_nop(a: Spec, dims: tuple[int, ...]) -> bool:
    rank = len(a.shape)
    if rank <= 1 or dims == tuple(range(rank)):
        return True
    if a.layout == Layout.TILE and (dims[-1] != rank - 1 or dims[-2] != rank - 2):
        return False
    if a.layout == Layout.ROW_MAJOR and dims[-1] != rank - 1:
        return False
    if tuple(a.shape[d] for d in dims) != a.shape:
        return False
    return all(i == j or a.shape[i] <= 1 for i, j in enumerate(dims))


def _permute_spec(a: Spec, dims: tuple[int, ...], mc_arg: MemoryConfig | None, pad: float,
                  grid: tuple[int, int]) -> Spec | None:
    """ttnn.permute's output (None: the input itself), dims normalized: 4-D permutes that are one or a few
    transposes run as those, the rest on the permute device op."""
    if _permute_nop(a, dims):
        mc = mc_arg or a.mc
        return None if mc == a.mc else replace(a, mc=mc)
    if a.layout == Layout.ROW_MAJOR and mc_arg is not None and mc_arg.is_sharded() and mc_arg.shard_spec is not None:
        P_RM_PAGE.require(mc_arg.shard_spec.shape[1] * _elem_bytes(a.dtype) % _L1_ALIGN == 0, _L1_ALIGN)
    rank = len(a.shape)
    lift = max(0, 4 - rank)
    a4 = replace(a, shape=(1,) * lift + a.shape)
    order = tuple(range(lift)) + tuple(d + lift for d in dims)
    if a4.layout == Layout.ROW_MAJOR and a4.mc.memory_layout in (_WS, _BS) and \
            (a4.shape[-1] % TILE_SIZE or a4.shape[-2] % TILE_SIZE):
        a4 = replace(a4, mc=L1_MEMORY_CONFIG)  # irregular row-major block/width shards are unsharded first
    if len(order) > 4:
        mc = mc_arg or (MemoryConfig(a4.mc.memory_layout, a4.mc.buffer_type) if a4.sharded else a4.mc)
        out = _permute_prim(a4, order, mc, grid)
        return replace(out, shape=out.shape[lift:])
    keep_dtype = a4.dtype
    bf8_native = order in ((0, 1, 3, 2), (1, 0, 2, 3), (1, 0, 3, 2))
    if a4.dtype == DataType.BFLOAT8_B and not bf8_native and not a4.sharded:
        a4 = replace(a4, dtype=DataType.BFLOAT16)

    def wh(x: Spec, mc: MemoryConfig | None = None) -> Spec:
        return _transpose_spec(x, 2, 3, mc, 0.0, grid) or x

    def hc(x: Spec, mc: MemoryConfig | None = None) -> Spec:
        return _transpose_spec(x, 1, 2, mc, pad, grid) or x

    def cn(x: Spec) -> Spec:
        return _transpose_spec(x, 0, 1, mc_arg, 0.0, grid) or x

    if order == (0, 1, 2, 3):
        out = a4
    elif order == (0, 1, 3, 2):
        out = wh(a4, mc_arg)
    elif order == (0, 2, 1, 3):
        out = hc(a4, mc_arg)
    elif order == (1, 0, 2, 3):
        out = cn(a4)
    elif a4.sharded and order == (0, 2, 3, 1):
        out = wh(hc(a4), mc_arg)
    elif a4.sharded and order == (0, 3, 1, 2):
        out = hc(wh(a4), mc_arg)
    elif a4.sharded and order == (0, 3, 2, 1):
        out = wh(hc(wh(a4)), mc_arg)
    elif a4.sharded:
        mc = mc_arg or MemoryConfig(a4.mc.memory_layout, a4.mc.buffer_type)
        out = _permute_prim(a4, order, mc, grid)
    else:
        out = _permute_prim(a4, order, mc_arg or a4.mc, grid)
    return replace(out, shape=out.shape[lift:], dtype=keep_dtype)


def _permuted(s: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    if sorted(dims) == list(range(s.dim())):
        return s.permute(dims).contiguous()
    # Repeated dims (the real op does not check them): the output has the shape asked, its values undefined.
    return torch.zeros([s.shape[d] for d in dims], dtype=s.dtype)


@device_op()
def permute(input_tensor: Tensor, dims: Any, *, memory_config: MemoryConfig | None = None,
            pad_value: float = 0.0) -> Tensor:
    t = input_tensor
    dims = tuple(int(d) for d in dims)
    P_RANK.require(len(dims) == t.shape.rank)
    P_DEVICE.require(isinstance(t, Tensor) and t.device_or_none is not None)
    require_device("permute", t)
    dims = tuple(_normalize(tuple(t.shape), d) for d in dims)
    out = _permute_spec(Spec.of(t), dims, memory_config, float(pad_value or 0.0), _grid(t))
    if out is None:
        return t
    return _emit(t, [_permuted(s, dims) for s in t._shards], out, "permute")


@device_op()
def transpose(input_tensor: Tensor, dim1: int, dim2: int, *, memory_config: MemoryConfig | None = None,
              pad_value: float = 0.0) -> Tensor:
    t = input_tensor
    require_device("transpose", t)
    shape = tuple(t.shape)
    d1, d2 = _normalize(shape, int(dim1)), _normalize(shape, int(dim2))
    out = _transpose_spec(Spec.of(t), d1, d2, memory_config, float(pad_value or 0.0), _grid(t))
    if out is None:
        return t
    return _emit(t, [s.transpose(d1, d2).contiguous() for s in t._shards], out, "transpose")


# ---------------- slice ----------------
_U32 = 2**32


def _wrap(i: int, size: int) -> int:
    return (i + size if i < 0 else i) % _U32


def _slice_rescaled(t: Tensor, mc: MemoryConfig, out_dims: list[int], rm_only: bool) -> MemoryConfig:
    """An output inheriting the input's shard spec gets a shard spread over the same grid for the sliced shape."""
    rank = len(out_dims)
    if rank < 2 or mc.shard_spec is None:
        return mc
    dims = list(out_dims)
    if not rm_only:
        dims[-2], dims[-1] = max(round_up(dims[-2], TILE_SIZE), TILE_SIZE), max(round_up(dims[-1], TILE_SIZE),
                                                                               TILE_SIZE)
    height, width = math.prod(dims[:-1]), dims[-1]
    spec = mc.shard_spec

    def tiles(n: int) -> int:
        return n if rm_only else max(round_up(n, TILE_SIZE), TILE_SIZE)

    if mc.memory_layout == _HS:
        shard = [tiles(-(-height // spec.num_cores())), width]
    elif mc.memory_layout == _WS:
        shard = [height, tiles(-(-width // spec.num_cores()))]
    else:
        box = spec.grid.bounding_box()
        gw, gh = box.grid_size().x, box.grid_size().y
        S_BLOCK_GRID.require(spec.num_cores() == gh * gw, spec.num_cores(), gh, gw)
        shard = [tiles(-(-height // gh)), tiles(-(-width // gw))]
    if shard == list(spec.shape):
        return mc
    return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(spec.grid, shard, spec.orientation))


@device_op()
def slice(  # noqa: A001 (the real name)
    input_tensor: Tensor,
    starts: Any,
    ends: Any,
    slice_step: Any = None,
    *,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    pad_value: float | None = None,
    slice_dim: int | None = None,
    num_devices: int | None = None,
    sub_core_grids: Any = None,
) -> Tensor:
    op = "slice"
    t = input_tensor
    require_device(op, t)
    refuse_options(op, output_tensor=output_tensor, slice_dim=slice_dim, num_devices=num_devices,
                   sub_core_grids=sub_core_grids)
    shape = tuple(t.shape)
    rank = len(shape)
    if rank == 0:
        return t
    begins, ends = [int(b) for b in starts], [int(e) for e in ends]
    steps = [int(s) for s in slice_step] if slice_step is not None else [1] * len(begins)
    S_RANK.require(rank == len(begins), rank, len(begins))
    S_ENDS.require(len(begins) == len(ends), len(begins), len(ends))
    S_STEPS.require(len(steps) == len(begins), len(steps), len(begins))
    mc = memory_config or t.memory_config()
    if all(s == 1 for s in steps) and not any(begins) and ends == list(shape):
        out = _to_memory_config(t, mc, None)  # the whole tensor
        return Tensor(out) if out is t else out  # another handle on the same buffer, as 0.81.1 returns (probed)
    b = [_wrap(x, d) for x, d in zip(begins, shape, strict=True)]
    e = [_wrap(x, d) for x, d in zip(ends, shape, strict=True)]
    st = [x % _U32 for x in steps]

    def dim(i: int, end: list[int]) -> int:
        return ((end[i] - b[i] + st[i] - 1) % _U32) // st[i]

    no_step = all(x == 1 for x in steps)
    aligned = rank == 1 or (b[-1] % TILE_SIZE == 0 and b[-2] % TILE_SIZE == 0)
    rm_only = t.layout != Layout.TILE or not no_step or rank == 1 or not aligned
    out_mc = mc
    if memory_config is None and t.is_sharded() and rank >= 2:
        out_mc = _slice_rescaled(t, mc, [dim(i, e) for i in range(rank)], rm_only)
    if out_mc.is_sharded() and out_mc.shard_spec is None and \
            (not t.is_sharded() or t.memory_config().memory_layout != out_mc.memory_layout):
        # Sliced into L1 first, then placed with a shard spec made for the sliced shape.
        sliced = slice(t, starts, ends, slice_step, memory_config=L1_MEMORY_CONFIG, pad_value=pad_value)
        hint = t.memory_config().shard_spec.orientation if t.is_sharded() else ShardOrientation.ROW_MAJOR
        spec = _synthesize_shard(_grid(t), Spec.of(sliced).padded, out_mc.memory_layout, hint)
        return _to_memory_config(sliced, MemoryConfig(out_mc.memory_layout, out_mc.buffer_type, spec), None)
    dtype, work = t.dtype, Spec.of(t)
    if rm_only:
        if not no_step:
            S_BFP8_STRIDE.require(t.dtype != DataType.BFLOAT8_B)
        if t.layout == Layout.TILE:
            work = _to_layout_spec(work, Layout.ROW_MAJOR, None, mc)
            dtype = work.dtype  # block floats come back as bfloat16 from the row-major round trip
    padded_ends = list(e)
    if work.layout == Layout.TILE:
        padded_ends[-2] = max(round_up(padded_ends[-2], TILE_SIZE), TILE_SIZE)
        padded_ends[-1] = max(round_up(padded_ends[-1], TILE_SIZE), TILE_SIZE)
    out_shape = []
    for i in range(rank):
        S_ORDER.require(e[i] >= b[i], e[i], b[i])
        out_shape.append(dim(i, e))
    if 0 in out_shape:  # an empty slice is a new empty tensor
        return _emit(t, [torch.zeros(out_shape, dtype=s.dtype) for s in t._shards],
                     Spec(tuple(out_shape), t.dtype, t.layout, mc), op)
    work_padded = work.padded
    for i in range(rank):
        S_START.require(b[i] < work_padded[i], i, b[i], i, work_padded[i])
        S_END.require(padded_ends[i] <= work_padded[i], padded_ends[i], work_padded[i])
    index = tuple(builtins.slice(b[i], e[i], st[i]) for i in range(rank))

    def cut(s: torch.Tensor) -> torch.Tensor:
        part = s[index]
        short = [n - m for n, m in zip(out_shape, part.shape, strict=True)]
        if any(short):  # the slice reaches into the tile padding, which reads as zero
            part = torch.nn.functional.pad(part, [p for n in reversed(short) for p in (0, n)])
        return part.contiguous()

    return _emit(t, [cut(s) for s in t._shards], Spec(tuple(out_shape), dtype, t.layout, out_mc), op)


# ---------------- concat ----------------
def _uses_zero_copy(tensors: list[Tensor], out_mc: MemoryConfig) -> bool:
    """The sharded concat factories alias L1 shards as circular buffers; any DRAM side takes the generic one."""
    if not tensors[0].is_sharded():
        return False
    if any(x.memory_config().buffer_type == BufferType.DRAM for x in tensors):
        return False
    return not (out_mc.is_sharded() and out_mc.buffer_type == BufferType.DRAM)


def _concat_validate(tensors: list[Tensor], dim: int, groups: int, out_mc: MemoryConfig) -> None:
    """ConcatDeviceOperation::validate_on_program_cache_miss."""
    first = tensors[0]
    rank = first.shape.rank
    for x in tensors:
        C_DTYPE.require(x.dtype == first.dtype)
        C_MIXED.require(x.is_sharded() == first.is_sharded())
        if first.is_sharded():
            C_GRID.require(x.memory_config().shard_spec.grid == first.memory_config().shard_spec.grid)
            C_LAYOUT.require(x.memory_config().memory_layout == first.memory_config().memory_layout)
            C_ORIENT.require(x.memory_config().shard_spec.orientation == first.memory_config().shard_spec.orientation)
    if first.is_sharded() and _uses_zero_copy(tensors, out_mc):
        kind = first.memory_config().memory_layout
        spec = first.memory_config().shard_spec
        C_OUT_LAYOUT.require(out_mc.memory_layout == kind)
        C_OUT_GRID.require(out_mc.shard_spec is not None and out_mc.shard_spec.grid == spec.grid)
        C_OUT_ORIENT.require(out_mc.shard_spec.orientation == spec.orientation)
        if dim == rank - 1:
            C_WIDTH.require(kind in (_HS, _BS))
        elif rank >= 2 and dim == rank - 2:
            C_HEIGHT.require(kind in (_WS, _BS))
        else:
            raise C_OTHER_DIM.error()
        C_GROUPS.require(groups == 1 or kind == _HS, groups, _mem_layout_name(kind))


def _concat_rm_buffers(tensors: list[Tensor], dim: int, groups: int, out: Spec) -> None:
    """ConcatS2SRMProgramFactory (two row-major sharded inputs, width concat): each input's and the output's
    circular buffer of 32-byte-aligned rows must fit the shard it borrows."""
    from .allocator import bytes_per_bank

    first = tensors[0]
    if not (len(tensors) == 2 and first.layout == Layout.ROW_MAJOR == tensors[1].layout and dim == first.shape.rank - 1
            and out.mc.is_sharded() and first.memory_config().memory_layout != _BS
            and all(x.shape[-1] % groups == 0 for x in tensors)):
        return
    chip = first.device_or_none.chip
    parts = [(f"s2s_rm_input_{i}", f"input_{i}", Spec.of(x)) for i, x in enumerate(tensors)]
    for dfb, param, spec in (*parts, ("s2s_rm_output", "output", out)):
        sh, sw = spec.mc.shard_spec.shape
        entry = round_up(sw * _elem_bytes(spec.dtype), 32)
        have = bytes_per_bank(chip, spec.shape, spec.dtype, spec.layout, spec.mc)[0]
        C_RM_DFB.require(entry * sh <= have, dfb, entry, sh, entry * sh, param, have)


def _concat_impl(tensors: list[Tensor], dim: int, groups: int, out_mc: MemoryConfig) -> Spec:
    """concat_impl: the output spec, after the device op's checks on the path the inputs take."""
    first = tensors[0]
    rank = first.shape.rank
    shape = list(first.shape)
    shape[dim] = sum(x.shape[dim] for x in tensors)
    out = Spec(tuple(shape), first.dtype, first.layout, out_mc)
    if first.is_sharded():
        kind = first.memory_config().memory_layout
        generic = not _uses_zero_copy(tensors, out_mc)
        if len(tensors) > 16 and kind == _BS and not generic:
            raise C_BLOCK_MAX.error(len(tensors))
        C_DRAM_GROUPS.require(not generic or groups == 1, groups)
        full_rows = first.layout != Layout.ROW_MAJOR or (kind == _HS and (not out_mc.is_sharded()
                                                                          or out_mc.memory_layout == _HS))
        if generic and not full_rows:
            # Row-major pages of shard width: unsharded to DRAM first, then concatenated interleaved.
            C_DTYPE.require(all(x.dtype == first.dtype for x in tensors))
            return out
        if out_mc.is_sharded() or generic:
            _concat_validate(tensors, dim, groups, out_mc)
            if not generic:
                _concat_rm_buffers(tensors, dim, groups, out)
            return out
        # L1 shards into an interleaved output: a sharded concat where the shards line up, then unsharded.
        width, height = dim == rank - 1, rank >= 2 and dim == rank - 2
        if (width and kind in (_HS, _BS)) or (height and kind in (_WS, _BS)):
            spec = first.memory_config().shard_spec
            axis = 1 if width else 0
            shard = list(spec.shape)
            shard[axis] = sum(x.memory_config().shard_spec.shape[axis] for x in tensors)
            staged = MemoryConfig(kind, BufferType.L1, ShardSpec(spec.grid, shard, spec.orientation))
            _concat_validate(tensors, dim, groups, staged)
            _concat_rm_buffers(tensors, dim, groups, replace(out, mc=staged))
        else:  # unsharded into the output's placement, then concatenated interleaved
            C_DTYPE.require(all(x.dtype == first.dtype for x in tensors))
        return out
    if any(x.layout == Layout.ROW_MAJOR and (x.shape.rank < 2 or x.shape[-2] % TILE_SIZE or x.shape[-1] % TILE_SIZE)
           for x in tensors):
        out = replace(out, layout=Layout.ROW_MAJOR)  # a row-major input that cannot be tilized
    _concat_validate(tensors, dim, groups, out_mc)
    return out


@device_op()
def concat(
    tensors: list[Tensor],
    dim: int = 0,
    *,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    groups: int = 1,
    sub_core_grids: Any = None,
) -> Tensor:
    op = "concat"
    tensors = list(tensors)
    C_EMPTY.require(bool(tensors))
    C_OUTPUT.require(output_tensor is None)
    refuse_options(op, sub_core_grids=sub_core_grids)
    require_device(op, *tensors)
    mc = memory_config or DRAM_MEMORY_CONFIG
    if len(tensors) == 1:
        return _to_memory_config(tensors[0], mc, None)
    first = tensors[0]
    dim = _normalize(tuple(first.shape), int(dim))
    C_SHAPES.require(all(x.shape.rank == first.shape.rank and all(
        i == dim or x.shape[i] == first.shape[i] for i in range(first.shape.rank)) for x in tensors))
    retile = any(x.layout == Layout.TILE and (x.shape.rank == 1 or Spec.of(x).padded[dim] != x.shape[dim])
                 for x in tensors)
    out = _concat_impl(tensors, dim, int(groups), mc)
    if retile:
        out = replace(out, layout=Layout.TILE)  # concatenated row-major, tilized again
    shards = [torch.cat([s.to(parts[0].dtype) for s in parts], dim=dim)
              for parts in zip(*(x._shards for x in tensors), strict=True)]
    return _emit(first, shards, out, op)


# ---------------- clone ----------------
@device_op()
def clone(input: Tensor, *, dtype: DataType | None = None, memory_config: MemoryConfig | None = None,  # noqa: A002
          compute_kernel_config: Any = None) -> Tensor:
    op = "clone"
    t = input
    require_device(op, t)
    a = Spec.of(t)
    out = Spec(a.shape, dtype or a.dtype, a.layout, memory_config or a.mc)
    _check_placement(op, t, out)
    _clone_spec(a, dtype, memory_config)
    return _emit(t, [s.clone() for s in t._shards], out, op)


# ---------------- memory configs ----------------
def _to_layout_spec(a: Spec, layout: Layout, dtype: DataType | None, mc: MemoryConfig | None) -> Spec:
    """A device to_layout's output (conversion.to_layout's rules)."""
    from .conversion import to_layout_spec

    return to_layout_spec(a, layout, dtype, mc)


def _to_memory_config(t: Tensor, mc: MemoryConfig, dtype: DataType | None) -> Tensor:
    """ttnn.to_memory_config: the same tensor when the config is already this one (any dtype asked is ignored then),
    else a copy in the requested placement."""
    op = "to_memory_config"
    if t.memory_config() == mc:
        return t
    for m in (t.memory_config(), mc):
        M_DRAM_BLOCK.require(not (m.memory_layout == _BS and m.buffer_type == BufferType.DRAM))
    out = Spec(tuple(t.shape), dtype or t.dtype, t.layout, mc)
    _check_placement(op, t, out)
    M_DTYPE_TILE.require(out.dtype == t.dtype or t.layout == Layout.TILE)
    return _moved(t, out, op)


@device_op(kernel_replay=True)
def to_memory_config(tensor: Tensor, memory_config: MemoryConfig, dtype: DataType | None = None,
                     output_tensor: Tensor | None = None) -> Tensor:
    op = "to_memory_config"
    ON_DEVICE.require(isinstance(tensor, Tensor) and tensor.device_or_none is not None)
    require_device(op, tensor)
    refuse_options(op, output_tensor=output_tensor)
    return _to_memory_config(tensor, memory_config, dtype)


@device_op(kernel_replay=True)
def sharded_to_interleaved(input_tensor: Tensor, memory_config: MemoryConfig | None = None,
                           output_dtype: DataType | None = None) -> Tensor:
    op = "sharded_to_interleaved"
    t = input_tensor
    if t.device_or_none is None or t.memory_config().shard_spec is None:
        return t  # nothing sharded to undo: the input itself
    require_device(op, t)
    mc = memory_config or DRAM_MEMORY_CONFIG
    dtype = output_dtype or t.dtype
    out = Spec(tuple(t.shape), dtype, t.layout, mc)
    _check_placement(op, t, out)
    O_SHARDED.require(t.memory_config().is_sharded())
    O_L1.require(t.memory_config().buffer_type == BufferType.L1)
    O_TARGET.require(mc.memory_layout == _IL)
    if t.layout == Layout.ROW_MAJOR:
        O_RM_PAGE.require(t.memory_config().shard_spec.shape[1] * _elem_bytes(t.dtype) % _L1_ALIGN == 0, _L1_ALIGN)
    O_DTYPE.require(dtype == t.dtype or t.layout == Layout.TILE)
    return _moved(t, out, op)


def _grid_memory_config(t: Tensor, grid: Any, shard_shape: Any, scheme: TensorMemoryLayout,
                        orientation: ShardOrientation) -> MemoryConfig:
    """interleaved_to_sharded's (grid, shard shape, scheme, orientation) form: with a CoreCoord grid, the first
    cores of that grid the shards need."""
    shard = [int(d) for d in shard_shape]
    if isinstance(grid, CoreCoord):
        height, width = physical_2d(tuple(t.shape), t.layout)
        n = {_HS: -(-height // shard[0]), _WS: -(-width // shard[1]),
             _BS: -(-height // shard[0]) * -(-width // shard[1])}.get(scheme)
        if n is None:
            raise TTError("interleaved_to_sharded", "Unsupported sharding scheme")
        cores = num_cores_to_corerangeset(n, grid, orientation == ShardOrientation.ROW_MAJOR)
    else:
        cores = grid
    return MemoryConfig(scheme, BufferType.L1, ShardSpec(cores, shard, orientation))


@device_op(kernel_replay=True)
def interleaved_to_sharded(input_tensor: Tensor, sharded_memory_config: Any, output_dtype: Any = None, *args: Any,
                           keep_l1_aligned: bool = False, preallocated_output: Tensor | None = None) -> Tensor:
    """interleaved_to_sharded(t, sharded_memory_config[, output_dtype]) or, positionally,
    interleaved_to_sharded(t, grid, shard_shape, shard_scheme, shard_orientation[, output_dtype])."""
    op = "interleaved_to_sharded"
    t = input_tensor
    refuse_options(op, preallocated_output=preallocated_output)
    if isinstance(sharded_memory_config, MemoryConfig):
        mc = sharded_memory_config
    else:  # the grid form: output_dtype holds the shard shape here
        scheme, orientation, *rest = args
        mc = _grid_memory_config(t, sharded_memory_config, output_dtype, scheme, orientation)
        output_dtype = rest[0] if rest else None
    ON_DEVICE.require(isinstance(t, Tensor) and t.device_or_none is not None)
    require_device(op, t)
    dtype = output_dtype or t.dtype
    out = Spec(tuple(t.shape), dtype, t.layout, mc)
    _check_placement(op, t, out)
    I_INPUT.require(t.memory_config().memory_layout == _IL, _mem_layout_name(t.memory_config().memory_layout))
    I_TARGET.require(mc.is_sharded())
    I_DRAM_BLOCK.require(not (mc.memory_layout == _BS and mc.buffer_type != BufferType.L1))
    if t.layout == Layout.ROW_MAJOR:
        I_RM_PAGE.require(mc.shard_spec.shape[1] * _elem_bytes(t.dtype) % _L1_ALIGN == 0)
    I_DTYPE.require(dtype == t.dtype or t.layout == Layout.TILE)
    return _moved(t, out, op)


def page_bytes_of(spec: Spec) -> int:
    """A sharded tensor's page: a tile, or a row (the whole row when height sharded, else a shard row)."""
    if spec.layout == Layout.TILE:
        return TILE_BYTES[spec.dtype]
    width = spec.shape[-1] if spec.mc.memory_layout == _HS or spec.mc.shard_spec is None \
        else spec.mc.shard_spec.shape[1]
    return width * _elem_bytes(spec.dtype)

