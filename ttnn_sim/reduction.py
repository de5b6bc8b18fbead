"""argmax, topk, and plus_one (the in-place position increment used by on-device greedy decode)."""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, output, per_device
from .cores import CoreRangeSet
from .memory import BufferType, MemoryConfig
from .placement import check_placement
from .rules import rules
from .tensor import Tensor, require_device
from .trace import DuringCapture, device_op
from .types import TILE_SIZE, DataType, Layout, Shape

# ---------------- argmax ----------------
A = rules("argmax", "reduction/argmax/device/argmax_device_operation.cpp")
ARGMAX_DIM = A("argmax: Dimension out of range (expected to be in range of [{}, {}], but got {})", "argmax/dim4",
               "argmax/dim-5", "argmax/tile-bfp8-dim4", "argmax/ok", source="reduction/argmax/argmax.cpp")
ARGMAX_SECONDARY_DM = A("enable_secondary_dm applies only to ROW_MAJOR argmax over the last dim (or dim=None)",
                        "argmax/secondary-dm-dim-2", "argmax/secondary-dm-tile", "argmax/secondary-dm",
                        source="reduction/argmax/argmax.cpp")
ARGMAX_INPUT_INTERLEAVED = A("Only INTERLEAVED memory layout is supported for inputs, got {}", "argmax/height-sharded",
                             "argmax/height-sharded-dim-none", "argmax/height-sharded-uint8", "argmax/l1")
ARGMAX_RM_DTYPE = A("Only BFLOAT16, FLOAT32, INT32, UINT32, and UINT16 are supported for inputs with ROW_MAJOR "
                    "layout, got {}", "argmax/uint8", "argmax/uint8-dim0", "argmax/uint8-output-int32",
                    "argmax/uint16")
ARGMAX_TILE_DTYPE = A("Only BFLOAT16, FLOAT32 are supported for inputs with TILE layout, got {}", "argmax/tile-int32",
                      "argmax/tile-bfp8", "argmax/tile-int32-dim-none", "argmax/tile-fp32")
ARGMAX_OUT_INTERLEAVED = A("Only INTERLEAVED memory layout is supported for outputs, got {}",
                           "argmax/to-height-sharded-fits", "argmax/to-width-sharded-fits", "argmax/to-l1")
ARGMAX_OUT_DTYPE = A("Only UINT32 is supported for outputs, got {}", "argmax/output-tensor-int32",
                     "argmax/int32-dim0-output-int32", "argmax/output-tensor")
ARGMAX_OUT_TENSOR_INTERLEAVED = A("Only INTERLEAVED memory layout is supported for outputs, got {}",
                                  "argmax/output-tensor-sharded", "argmax/output-tensor-l1")
ARGMAX_OUT_TENSOR_RM = A("Output tensor must have ROW_MAJOR layout, got {}", "argmax/output-tensor-tile",
                         "argmax/output-tensor")
ARGMAX_OUT_TENSOR_SHAPE = A("Preallocated output tensor is not page-compatible with the reduction result! Got : {}, "
                            "expected: {} (or any shape with the same volume and last dimension)",
                            "argmax/output-tensor-wrong-shape", "argmax/output-tensor")
ARGMAX_RM_LAST_DIM = A("ROW_MAJOR: only argmax on the last dim is supported. Got dim={} (normalized={}), expected {}",
                       "argmax/int32-dim0", "argmax/uint16-dim-2", "argmax/int32")
ARGMAX_TILE_DIM = A("For inputs with TILE layout, dim parameter must be specified!", "argmax/tile-dim-none",
                    "argmax/tile")
ARGMAX_SUB_CORE_RANGES = A("Multicore argmax only supports up to 2 core grid ranges, but got {} ranges",
                           "argmax/sub-core-grids-3-ranges", "argmax/sub-core-grids")
_ARGMAX_RM_DTYPES = (DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32, DataType.UINT16)
_FLOATS = (DataType.BFLOAT16, DataType.FLOAT32)


def _ml(mc: MemoryConfig) -> str:
    return f"TensorMemoryLayout::{mc.memory_layout.name}"


@device_op(kernel_replay=True)
def argmax(
    input_tensor: Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    sub_core_grids: Any = None,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    enable_secondary_dm: bool = False,
) -> Tensor:
    x = input_tensor
    require_device("argmax", x, output_tensor)
    rank = len(x.shape)
    if dim is not None:
        ARGMAX_DIM.require(-rank <= dim < rank, -rank, rank - 1, dim)
    last = dim is None or dim % rank == rank - 1
    if enable_secondary_dm:
        ARGMAX_SECONDARY_DM.require(x.layout == Layout.ROW_MAJOR and last)
    if dim is None:
        out_shape = [1] * rank if keepdim else []
    else:
        out_shape = list(x.shape)
        out_shape[dim % rank] = 1
        if not keepdim:
            del out_shape[dim % rank]
    # Row-major floats reduced along another dim are tilized first and take the TILE program.
    tiled = x.layout == Layout.TILE or (x.dtype in _FLOATS and not last)
    out_mc = memory_config or x.memory_config()
    if memory_config is not None or tiled:  # these paths build the output's spec before validating
        check_placement("argmax", x.device_or_none, tuple(out_shape), Layout.ROW_MAJOR, out_mc, DataType.UINT32)
    ARGMAX_INPUT_INTERLEAVED.require(not x.is_sharded(), _ml(x.memory_config()))
    if x.layout == Layout.ROW_MAJOR:
        ARGMAX_RM_DTYPE.require(x.dtype in _ARGMAX_RM_DTYPES, f"DataType::{x.dtype.name}")
    if tiled:
        ARGMAX_TILE_DTYPE.require(x.dtype in _FLOATS, f"DataType::{x.dtype.name}")
    ARGMAX_OUT_INTERLEAVED.require(not out_mc.is_sharded(), _ml(out_mc))
    if output_tensor is not None:
        ARGMAX_OUT_DTYPE.require(output_tensor.dtype == DataType.UINT32, f"DataType::{output_tensor.dtype.name}")
        ARGMAX_OUT_TENSOR_INTERLEAVED.require(not output_tensor.is_sharded(), _ml(output_tensor.memory_config()))
        ARGMAX_OUT_TENSOR_RM.require(output_tensor.layout == Layout.ROW_MAJOR, f"Layout::{output_tensor.layout.name}")
        # any shape of the same rows: the same volume and last dim
        got, want = list(output_tensor.shape) or [1], out_shape or [1]
        same_pages = _volume(got) == _volume(want) and got[-1] == want[-1]
        ARGMAX_OUT_TENSOR_SHAPE.require(same_pages, output_tensor.shape, Shape(out_shape))
    if not tiled:
        ARGMAX_RM_LAST_DIM.require(last, dim, dim % rank if dim is not None else rank - 1, rank - 1)
    else:
        ARGMAX_TILE_DIM.require(dim is not None)
    if sub_core_grids is not None:
        n = len(sub_core_grids.ranges()) if isinstance(sub_core_grids, CoreRangeSet) else 1
        ARGMAX_SUB_CORE_RANGES.require(n <= 2, n)

    def compute(v: torch.Tensor) -> torch.Tensor:
        # Ties resolve to the first index, as the reduction kernel scans in order.
        return torch.argmax(f32(v), dim=dim, keepdim=keepdim if dim is not None else False).reshape(out_shape)

    shards = per_device(compute, x)
    if output_tensor is not None:
        out = output(x, [s.reshape(tuple(output_tensor.shape)) for s in shards], DataType.UINT32, Layout.ROW_MAJOR,
                     output_tensor.memory_config())
        output_tensor._rebind(out)
        return output_tensor
    return output(x, shards, DataType.UINT32, Layout.ROW_MAJOR, out_mc)


def _volume(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# ---------------- topk ----------------
K = rules("topk", "reduction/topk/device/topk_device_operation.cpp")
_TOPK_CPP = "reduction/topk/topk.cpp"
TOPK_DIM = K("Dimension for topk is out of range (expected to be in range of [{}, {}])", "topk/dim4", "topk/dim-5",
             "topk/dim1", source=_TOPK_CPP)
TOPK_K = K("K cannot be larger than the dimension size! K={}, dimension size={}", "topk/k-65", "topk/dim-2-k-33",
           "topk/int32-k-65", "topk/k-64", source=_TOPK_CPP)
TOPK_VALUES_SHAPE = K("Preallocated values tensor has incorrect shape! Got : {}, expected: {}",
                      "topk/output-tensor-wrong-shape", "topk/output-tensor", source=_TOPK_CPP)
TOPK_INDICES_OUT_SHAPE = K("Preallocated indices tensor has incorrect shape! Got : {}, expected: {}",
                           "topk/output-indices-wrong-shape", "topk/output-tensor", source=_TOPK_CPP)
TOPK_INDICES_SHAPE = K("Indices tensor has incorrect shape! Got : {}, expected: {}", "topk/indices-wrong-shape",
                       "topk/indices-uint32", source=_TOPK_CPP)
TOPK_STABLE_INDICES = K("TopK stable=true does not support a custom indices_tensor: tie-breaking against "
                        "caller-supplied labels is not defined. Use positional indices (indices_tensor=None).",
                        "topk/indices-stable", "topk/indices-uint32")
TOPK_SHARDED = K("Sharded implementation not supported yet", "topk/to-height-sharded",
                 "topk/int32-to-height-sharded", "topk/to-l1")
TOPK_TILED = K("The input must be in tiled format", "topk/row-major", "topk/row-major-int32", "topk/ok")
TOPK_DTYPE = K("Input tensor must be BFLOAT16, BFLOAT8_B, or FLOAT32, got: {}", "topk/int32", "topk/uint16",
               "topk/uint32", "topk/bfp4", "topk/height-sharded-int32-to-dram", "topk/bfp8")
TOPK_INDICES_TILED = K("Optional indices tensor must be in tiled format, got: {}", "topk/indices-row-major",
                       "topk/indices-uint32")
TOPK_INDICES_DTYPE = K("Optional indices tensor must be UINT16, UINT32, or INT32, got: {}", "topk/indices-bf16",
                       "topk/indices-int32")
TOPK_INDICES_FP32 = K("Optional indices tensor must be UINT32 when input tensor is FLOAT32, got UINT16",
                      "topk/indices-uint16-fp32", "topk/indices-uint32-fp32")
TOPK_OUTPUT_TILED = K("Preallocated output tensor must be in tiled format, got: {}", "topk/output-tensor-row-major",
                      "topk/output-tensor")
_TOPK_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32)
_INDEX_DTYPES = (DataType.UINT16, DataType.UINT32, DataType.INT32)
# Past this many (tile-padded) positions an index no longer fits 16 bits.
_UINT16_POSITIONS = 65536


@device_op()
def topk(
    input_tensor: Tensor,
    k: int = 32,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
    *,
    memory_config: MemoryConfig | None = None,
    sub_core_grids: Any = None,
    indices_tensor: Tensor | None = None,
    output_tensor: Any = None,
    stable: bool = False,
) -> tuple[Tensor, Tensor]:
    x = input_tensor
    require_device("topk", x, indices_tensor, *(output_tensor or ()))
    rank = len(x.shape)
    TOPK_DIM.require(-rank <= dim < rank, -rank, rank - 1)
    d = dim % rank
    TOPK_K.require(k <= x.shape[d], k, x.shape[d])
    out_shape = list(x.shape)
    out_shape[d] = k
    out_mc = memory_config or x.memory_config()
    if k == 0:  # nothing to compute: two empty bfloat16 tensors, no device op
        empty = [torch.zeros(out_shape, dtype=torch.bfloat16) for _ in range(x.num_shards)]
        return (output(x, empty, DataType.BFLOAT16, Layout.TILE, out_mc),
                output(x, list(empty), DataType.BFLOAT16, Layout.TILE, out_mc))
    values_out, indices_out = output_tensor if output_tensor is not None else (None, None)
    if values_out is not None:
        TOPK_VALUES_SHAPE.require(list(values_out.shape) == out_shape, values_out.shape, Shape(out_shape))
        TOPK_INDICES_OUT_SHAPE.require(list(indices_out.shape) == out_shape, indices_out.shape, Shape(out_shape))
    if indices_tensor is not None:
        TOPK_INDICES_SHAPE.require(indices_tensor.shape == x.shape, indices_tensor.shape, x.shape)
    check_placement("topk", x.device_or_none, tuple(out_shape), Layout.TILE, out_mc, x.dtype)
    if indices_tensor is not None:
        TOPK_STABLE_INDICES.require(not stable)
    TOPK_SHARDED.require(not out_mc.is_sharded())
    TOPK_TILED.require(x.layout == Layout.TILE)
    TOPK_DTYPE.require(x.dtype in _TOPK_DTYPES, f"DataType::{x.dtype.name}")
    if indices_tensor is not None:
        TOPK_INDICES_TILED.require(indices_tensor.layout == Layout.TILE, f"Layout::{indices_tensor.layout.name}")
        TOPK_INDICES_DTYPE.require(indices_tensor.dtype in _INDEX_DTYPES, f"DataType::{indices_tensor.dtype.name}")
        TOPK_INDICES_FP32.require(x.dtype != DataType.FLOAT32 or indices_tensor.dtype != DataType.UINT16)
    if values_out is not None:
        TOPK_OUTPUT_TILED.require(values_out.layout == Layout.TILE, f"Layout::{values_out.layout.name}")

    positions = -(-x.shape[d] // TILE_SIZE) * TILE_SIZE if d >= rank - 2 else x.shape[d]
    if indices_tensor is not None:
        index_dtype = indices_tensor.dtype
    elif x.dtype == DataType.FLOAT32 or positions > _UINT16_POSITIONS:
        index_dtype = DataType.UINT32
    else:
        index_dtype = DataType.UINT16

    def compute(v: torch.Tensor, labels: Any) -> tuple[torch.Tensor, torch.Tensor]:
        # The device's bitonic network always hands back its k best in order (descending for largest, ascending
        # otherwise) whatever `sorted` says: tt-metal's own test_topk compares sorted=False output with a sorted
        # torch.topk at PCC 1.0. Equal values come lowest position first (see _tie_ordered_topk).
        values, positions = _tie_ordered_topk(f32(v), k, d, largest)
        # With an indices tensor the op returns its labels at the chosen positions instead of the positions.
        return values, positions if labels is None else torch.gather(labels, d, positions)

    res = per_device(compute, x, indices_tensor)
    if values_out is not None:  # written in the preallocated tensors' dtypes and places
        values_out._rebind(output(x, [r[0] for r in res], values_out.dtype, Layout.TILE,
                                  values_out.memory_config()))
        indices_out._rebind(output(x, [r[1] for r in res], indices_out.dtype, Layout.TILE,
                                   indices_out.memory_config()))
        return values_out, indices_out
    return (output(x, [r[0] for r in res], None, Layout.TILE, out_mc),
            output(x, [r[1] for r in res], index_dtype, Layout.TILE, out_mc))


def _tie_ordered_topk(v: torch.Tensor, k: int, dim: int, largest: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The k best of v along dim, equal values lowest position first, -0.0 read as +0.0.

    0.81.1's stable engines (`stable=True`, and padded widths, which it sorts stably by itself) produce exactly this
    order: a comparator that compare-exchanges the index registers on value ties, or one fused [value | index] key
    with the index complemented so the lower one wins (tt-llk ckernel_sfpu_topk.h); every stable engine folds -0.0
    into +0.0. With `stable=False` the order of equal values is whatever the bitonic network's swaps leave
    (documented as unspecified); the simulator gives the stable order there too, one of the orders a device may
    give, so a model that needs a tie order must ask for `stable=True`. torch.topk's own tie order is arbitrary, so
    the order is made total: each value's order-preserving integer image in the high 32 bits of an int64 key, the
    (complemented, for largest) position in the low 32 bits."""
    v = v + 0.0  # -0.0 + 0.0 is +0.0: the two zeros become one tie class, ordered by position
    bits = v.contiguous().view(torch.int32).to(torch.int64)
    ordered = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)  # float order as signed-integer order
    shape = [1] * v.dim()
    shape[dim] = v.shape[dim]
    pos = torch.arange(v.shape[dim], dtype=torch.int64).reshape(shape)
    key = ordered * (1 << 32) + ((1 << 32) - 1 - pos if largest else pos)
    positions = torch.topk(key, k, dim=dim, largest=largest, sorted=True).indices
    return torch.gather(v, dim, positions), positions


# ---------------- plus_one ----------------
P = rules("plus_one", "experimental/plusone/device/plusone_device_operation.cpp")
PLUS_ONE_ON_DEVICE = P("Device Operations expect device tensors as inputs", "plus-one/host", "plus-one/ok",
                       source="ttnn/api/ttnn/device_operation.hpp")
PLUS_ONE_DTYPE = P("Only INT32 and UINT32 is supported for inputs!", "plus-one/bf16", "plus-one/uint16",
                   "plus-one/rank5-bf16", "plus-one/tile-bf16", "plus-one/uint8", "plus-one/uint32")
PLUS_ONE_LAYOUT = P("Only ROW_MAJOR layout is supported for inputs!", "plus-one/tile", "plus-one/rank5-tile",
                    "plus-one/ok")
PLUS_ONE_RANK = P("must have 1 to 4 dimensions for input tensor", "plus-one/rank5", "plus-one/rank4")
_DFB = "tt_metal/impl/metal2_host_api/program_spec/validation/resource/dfb.cpp"
PLUS_ONE_L1 = P("DFB 'in0' borrows memory from TensorParameter 'input', but its TensorSpec is not L1-resident (L1 is "
                "required). Both L1 and L1_SMALL are accepted.", "plus-one/dram-sharded", "plus-one/height-sharded",
                source=_DFB)
PLUS_ONE_ROW_FITS = P("DFB 'in0' (entry_size {} * num_entries {} = {} bytes) is larger than the per-bank allocation "
                      "of its borrowed TensorParameter 'input' ({} bytes).", "plus-one/width-sharded",
                      "plus-one/width-sharded-256", "plus-one/block-sharded", source=_DFB)
PLUS_ONE_GRID = P("WorkUnitSpec 'main' targets node ({},{}), which is out of bounds. The compute worker grid on this "
                  "device is {}x{}.", "plus-one/sub-core-grids-off-grid", "plus-one/sub-core-grids-2",
                  source="tt_metal/impl/metal2_host_api/program_spec/validation/placement/work_unit.cpp")


@device_op(DuringCapture.SKIP)
def plus_one(input_tensor: Tensor, sub_core_grids: Any = None, skip_negative_entries: bool = False) -> Tensor:
    """Adds one in place. With skip_negative_entries, -1 (an empty decode slot) stays -1."""
    x = input_tensor
    PLUS_ONE_ON_DEVICE.require(isinstance(x, Tensor) and x.device_or_none is not None)
    require_device("plus_one", x)
    PLUS_ONE_DTYPE.require(x.dtype in (DataType.INT32, DataType.UINT32))
    PLUS_ONE_LAYOUT.require(x.layout == Layout.ROW_MAJOR)
    PLUS_ONE_RANK.require(1 <= len(x.shape) <= 4)
    if x.is_sharded():
        # The kernel stages one row at a time in a buffer placed on the input's own L1 shard.
        mc = x.memory_config()
        PLUS_ONE_L1.require(mc.buffer_type == BufferType.L1)
        row = x.shape[-1] * 4
        shard = mc.shard_spec.shape[0] * mc.shard_spec.shape[1] * 4
        PLUS_ONE_ROW_FITS.require(row <= shard, row, 1, row, shard)
    if sub_core_grids is not None:
        gx, gy = x.device_or_none.chip.grid
        off = [c for c in sub_core_grids.cores() if c.x >= gx or c.y >= gy]
        PLUS_ONE_GRID.require(not off, off[0].x if off else 0, off[0].y if off else 0, gx, gy)
    for s in x._shards:
        if skip_negative_entries:
            s.add_((s >= 0).to(s.dtype))
        else:
            s.add_(1)
    return x
