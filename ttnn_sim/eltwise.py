"""Element-wise ops: add, mul, sub and the comparisons gt / ge / eq (binary_ng, with fused input activations), silu,
exp, log and fill (unary), softmax.

Output placement follows ttnn 0.81.1 as measured: a binary op's output defaults to A's memory config, except that a
DRAM-interleaved A next to a sharded B gives B's; a sharded request without a shard spec takes the sharded input's
config (binary: all of it; unary: its shard spec in the requested layout and buffer), or else a spec spread over the
worker grid (`default_shard_spec`); an output larger than the sharded input it follows (broadcast) keeps the input's
grid with taller shards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import torch

from .compute import apply_activations, f32, output, per_device, per_device_write, store_as
from .cores import CoreCoord, CoreRange, CoreRangeSet, num_cores_to_corerangeset
from .errors import TTError
from .memory import MemoryConfig, ShardOrientation, ShardSpec, TensorMemoryLayout
from .placement import check_placement, physical_2d
from .rules import Rule, rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import FLOAT_TYPES, INT_TYPES, TILE_SIZE, DataType, Layout, Shape

_IL, _HS = TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED
_WS, _BS = TensorMemoryLayout.WIDTH_SHARDED, TensorMemoryLayout.BLOCK_SHARDED
_INT32S = (DataType.INT32, DataType.UINT32)


def _dt(d: DataType) -> str:
    return f"DataType::{d.name}"


# ---------------- placement of outputs ----------------
def default_shard_spec(device: Any, shape: Any, layout: Layout, memory_layout: TensorMemoryLayout) -> ShardSpec:
    """The shard spec ttnn derives for a sharded output request without one: the tensor's 2-D view split in whole
    tiles (rows for ROW_MAJOR) over as few cores of the worker grid as take the fewest units each, filled row by row
    (height/width), or over a block of at most grid-many rows and columns (block)."""
    gx, gy = device.chip.grid
    height, width = physical_2d(tuple(shape), layout)
    unit = TILE_SIZE if layout == Layout.TILE else 1
    th, tw = -(-height // unit), -(-width // unit)
    if memory_layout == _BS:
        per_h, per_w = -(-th // gy), -(-tw // gx)
        grid = CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(-(-tw // per_w) - 1, -(-th // per_h) - 1))])
        return ShardSpec(grid, [per_h * unit, per_w * unit], ShardOrientation.ROW_MAJOR)
    units = th if memory_layout == _HS else tw
    per = -(-units // (gx * gy))
    grid = num_cores_to_corerangeset(-(-units // per), CoreCoord(gx, gy), row_wise=True)
    shard = [per * unit, width] if memory_layout == _HS else [height, per * unit]
    return ShardSpec(grid, shard, ShardOrientation.ROW_MAJOR)


def regrown(mc: MemoryConfig, src_shape: Any, shape: Any, layout: Layout) -> MemoryConfig:
    """mc of a sharded input, for an output of a larger (broadcast) shape: the same grid, with shards grown to
    split the output's 2-D view over it."""
    if tuple(src_shape) == tuple(shape) or mc.shard_spec is None:
        return mc
    spec = mc.shard_spec
    height, width = physical_2d(tuple(shape), layout)
    unit = TILE_SIZE if layout == Layout.TILE else 1

    def split(extent: int, parts: int) -> int:  # whole units (tiles or rows) per part
        units = -(-extent // unit)
        return -(-units // parts) * unit

    box = spec.grid.bounding_box().grid_size()
    rows, cols = (box.y, box.x) if spec.orientation == ShardOrientation.ROW_MAJOR else (box.x, box.y)
    shard = {_HS: [split(height, spec.num_cores()), width], _WS: [height, split(width, spec.num_cores())],
             _BS: [split(height, rows), split(width, cols)]}[mc.memory_layout]
    return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(spec.grid, shard, spec.orientation))


def _unary_output_mc(x: Tensor, memory_config: MemoryConfig | None) -> MemoryConfig:
    mc = memory_config or x.memory_config()
    if mc.is_sharded() and mc.shard_spec is None:
        spec = x.memory_config().shard_spec if x.is_sharded() else \
            default_shard_spec(x.device_or_none, x.shape, x.layout, mc.memory_layout)
        mc = MemoryConfig(mc.memory_layout, mc.buffer_type, spec)
    return mc


# ---------------- binary (binary_ng) ----------------
_NG = "eltwise/binary_ng/device/binary_ng_device_operation.cpp"
_BINARY_CPP = "eltwise/binary/binary.cpp"


@dataclass(frozen=True)
class _BinaryRules:
    dtype_vs_output: Rule
    row_major_output: Rule
    scalar: Rule | None
    on_device_a: Rule
    on_device_b: Rule
    subtile: Rule
    output_shape: Rule
    dtype_a: Rule
    dtype_b: Rule
    mixed: Rule
    broadcast: Rule
    broadcast_rank7: Rule


def _binary_rules(op: str) -> _BinaryRules:
    """add, mul, sub and the comparisons run the same device op: the same rules, each broken by the op's own cases.
    Only multiply takes a scalar an integer tensor cannot hold (it computes in floating point), and the comparisons
    take UINT8 as UINT16 before any dtype check (measured: uint8 in, uint16 out)."""
    R = rules(op, _NG)
    p = op
    scalar_cases = ("add/int32-scalar-fraction", "add/uint32-scalar-fraction", "add/int32-scalar-too-big",
                    "add/int32-scalar") if op == "add" else (f"{p}/int32-scalar-fraction", f"{p}/int32-scalar")
    compare = op in _COMPARE
    uint8 = "the comparisons read UINT8 as UINT16 first (measured), and UINT16 is supported"
    return _BinaryRules(
        dtype_vs_output=R("If both output dtype and output tensor are provided, their dtypes should match",
                          f"{p}/output-tensor-dtype-mismatch", f"{p}/output-tensor", source=_BINARY_CPP),
        row_major_output=R("Optional output tensor with Row Major input is not supported right now for Elementwise "
                           "operations", f"{p}/row-major-output-tensor", f"{p}/row-major", source=_BINARY_CPP),
        scalar=R("Binary operation {} with a {} tensor cannot represent the scalar {}: only a finite integer within "
                 "the range of {} survives being packed as one, and this value would be changed silently. Typecast "
                 "the input to a floating-point dtype first.", *scalar_cases,
                 source=_BINARY_CPP) if op != "mul" else None,
        on_device_a=R("Input tensor A must be on device, got storage type: {}", f"{p}/host-a", f"{p}/ok"),
        on_device_b=R("Input tensor B must be on device, got storage type: {}", f"{p}/host-b", f"{p}/ok"),
        subtile=R("Invalid subtile broadcast type", f"{p}/bcast-w-64-vs-32", f"{p}/ok"),
        output_shape=R("Shape of Output tensor {} provided does not match the broadcasted output shape {}",
                       f"{p}/output-tensor-wrong-shape", f"{p}/output-tensor"),
        dtype_a=R("Input tensor A dtype {} is not supported for binary operation {}",
                  *(() if compare else (f"{p}/uint8-row-major", f"{p}/ok")), unreachable=uint8 if compare else ""),
        dtype_b=R("Input tensor B dtype {} is not supported for binary operation {}",
                  *(() if compare else (f"{p}/bf16-uint8", f"{p}/ok")), unreachable=uint8 if compare else ""),
        mixed=R("Mixed dtype is not supported for binary operation {}, dtype A: {}, dtype B: {}",
                f"{p}/int32-uint32", f"{p}/int32"),
        broadcast=R("Broadcasting rule violation at dimension index {} (output rank {}), dim a: {}, dim b: {}",
                    f"{p}/bcast-batch-2-vs-3", f"{p}/ok"),
        broadcast_rank7=R("Broadcasting rule violation for rank >= 7 at dimension index {} (output rank {}). "
                          "Broadcast is supported up to rank 6. dim a: {}, dim b: {}", f"{p}/rank7-bcast",
                          f"{p}/rank7"),
    )


_COMPARE = ("gt", "ge", "eq")
_BINARY = {op: _binary_rules(op) for op in ("add", "mul", "sub", *_COMPARE)}
_OP_TYPE = {op: f"BinaryOpType::{op.upper()}" for op in _BINARY}
# The range of scalars an integer tensor takes as an exact integer (uint32 also takes negative int32 bit patterns).
_SCALAR_RANGE = {DataType.INT32: (-(2**31), 2**31 - 1), DataType.UINT32: (-(2**31), 2**32 - 1)}


def _fmt_scalar(v: Any) -> str:
    """A scalar as C++ {fmt} prints a double: its shortest round-trip digits, fixed or scientific, whichever is
    shorter (2.5, 1e+12)."""
    f = float(v)
    if not math.isfinite(f):
        return repr(f)
    d = Decimal(repr(f)).normalize()
    fixed = format(d, "f")
    sign, digits, exp = d.as_tuple()
    e10 = exp + len(digits) - 1
    mant = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    sci = f"{'-' if sign else ''}{mant}e{'+' if e10 >= 0 else '-'}{abs(e10):02d}"
    return fixed if len(fixed) <= len(sci) else sci


def _representable(v: Any, dtype: DataType) -> bool:
    lo, hi = _SCALAR_RANGE[dtype]
    f = float(v)
    return math.isfinite(f) and f == int(f) and lo <= f <= hi


def _right_aligned(shape: Shape, rank: int) -> list[int]:
    return [1] * (rank - len(shape)) + list(shape)


def _binary_output_mc(a: Tensor, b: Tensor | None, memory_config: MemoryConfig | None,
                      shape: list[int], layout: Layout) -> MemoryConfig:
    a_mc, b_mc = a.memory_config(), b.memory_config() if b is not None else None
    sharded = a if a.is_sharded() else b if b is not None and b.is_sharded() else None
    if memory_config is None:
        # A DRAM-interleaved A is the default placement, which a sharded B overrides; L1 or sharded A is kept.
        if not a.is_sharded() and sharded is not None and a_mc == MemoryConfig():
            return regrown(b_mc, b.shape, shape, layout)
        return regrown(a_mc, a.shape, shape, layout) if a.is_sharded() else a_mc
    if memory_config.is_sharded() and memory_config.shard_spec is None:
        if sharded is not None:  # the sharded input's whole config, whatever layout was asked for
            return regrown(sharded.memory_config(), sharded.shape, shape, layout)
        spec = default_shard_spec(a.device_or_none, shape, layout, memory_config.memory_layout)
        return MemoryConfig(memory_config.memory_layout, memory_config.buffer_type, spec)
    return memory_config


def _binary(op: str, fn: Any, a: Any, b: Any, dtype: DataType | None, memory_config: MemoryConfig | None,
            output_tensor: Tensor | None, activations: Any, a_acts: Any, b_acts: Any) -> Tensor:
    R = _BINARY[op]
    if not isinstance(a, Tensor) and isinstance(b, Tensor):
        # A scalar first: add and mul commute, so the op runs on the tensor (each activation keeps its operand).
        a, b = b, a
        a_acts, b_acts = b_acts, a_acts
    if not isinstance(a, Tensor):
        raise TTError(op, f"needs a ttnn.Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    bt = b if isinstance(b, Tensor) else None
    if dtype is not None and output_tensor is not None:
        R.dtype_vs_output.require(dtype == output_tensor.dtype)
    if output_tensor is not None:
        R.row_major_output.require(not (a.layout == Layout.ROW_MAJOR and (bt is None or bt.layout == Layout.ROW_MAJOR)))
    a_dtype, b_dtype = a.dtype, bt.dtype if bt is not None else None
    if op in _COMPARE:  # typecast to UINT16 before the device op sees them
        a_dtype = DataType.UINT16 if a_dtype == DataType.UINT8 else a_dtype
        b_dtype = DataType.UINT16 if b_dtype == DataType.UINT8 else b_dtype
    if bt is None and a.dtype in _INT32S and not _representable(b, a.dtype):
        if R.scalar is not None:
            raise R.scalar.error(_OP_TYPE[op], _dt(a.dtype), _fmt_scalar(b), _dt(a.dtype))
        a_dtype = DataType.FLOAT32  # multiply takes the scalar in floating point
    if op == "mul" and bt is not None:
        # multiply typecasts a 32-bit integer operand to the other operand's float type (bf16 for block floats)
        if a_dtype in _INT32S and b_dtype in FLOAT_TYPES:
            a_dtype = DataType.FLOAT32 if b_dtype == DataType.FLOAT32 else DataType.BFLOAT16
        elif b_dtype in _INT32S and a_dtype in FLOAT_TYPES:
            b_dtype = DataType.FLOAT32 if a_dtype == DataType.FLOAT32 else DataType.BFLOAT16
    R.on_device_a.require(a.device_or_none is not None, "StorageType::HOST")
    if bt is not None:
        R.on_device_b.require(bt.device_or_none is not None, "StorageType::HOST")
    require_device(op, a, bt)

    b_shape = bt.shape if bt is not None else Shape([1])
    rank = max(len(a.shape), len(b_shape))
    sa, sb = _right_aligned(a.shape, rank), _right_aligned(b_shape, rank)
    for i in (-2, -1):
        if rank >= -i and sa[i] != sb[i] and 1 not in (sa[i], sb[i]):
            raise R.subtile.error()
    out_shape = [x if y == 1 else y for x, y in zip(sa, sb, strict=True)]
    layout = Layout.ROW_MAJOR if a.layout == Layout.ROW_MAJOR and (bt is None or bt.layout == Layout.ROW_MAJOR) \
        else Layout.TILE
    out_dtype = dtype or (output_tensor.dtype if output_tensor is not None else a_dtype)
    out_mc = _binary_output_mc(a, bt, memory_config, out_shape, layout)
    if output_tensor is None:  # the output's spec is built (and checked) before the op validates its inputs
        check_placement(op, a.device_or_none, tuple(out_shape), layout, out_mc, out_dtype)
    else:
        os_ = list(output_tensor.shape)
        common = min(len(os_), len(out_shape))
        longer = os_ if len(os_) > len(out_shape) else out_shape
        same = os_[len(os_) - common:] == out_shape[len(out_shape) - common:] and \
            all(d == 1 for d in longer[:len(longer) - common])
        R.output_shape.require(same, output_tensor.shape, Shape(out_shape))
    R.dtype_a.require(a_dtype != DataType.UINT8, _dt(a_dtype), _OP_TYPE[op])
    if bt is not None:
        R.dtype_b.require(b_dtype != DataType.UINT8, _dt(b_dtype), _OP_TYPE[op])
        R.mixed.require(a_dtype == b_dtype or (a_dtype in FLOAT_TYPES and b_dtype in FLOAT_TYPES), _OP_TYPE[op],
                        _dt(a_dtype), _dt(b_dtype))
    for i in range(-3, -rank - 1, -1):
        R.broadcast.require(sa[i] == sb[i] or 1 in (sa[i], sb[i]), i, rank, sa[i], sb[i])
        if i <= -7:
            R.broadcast_rank7.require(sa[i] == sb[i], i, rank, sa[i], sb[i])

    plain = not (activations or a_acts or b_acts) and out_dtype == DataType.BFLOAT16
    # compute closes over no Tensor: a trace keeps it for replay, and would keep an input's buffer alive with it
    int_scalar = bt is None and a_dtype == a.dtype

    def compute(x: torch.Tensor, y: Any) -> torch.Tensor:
        if plain and x.dtype == torch.bfloat16 and (not isinstance(y, torch.Tensor) or y.dtype == torch.bfloat16):
            return fn(x, y)  # torch computes bf16 element-wise ops in fp32 and rounds once, as the device does
        if x.dtype == torch.int32 and (isinstance(y, torch.Tensor) and y.dtype == torch.int32 or
                                       int_scalar) and not (a_acts or b_acts or activations):
            return fn(x, y)  # integer arithmetic stays integer
        x = apply_activations(op, f32(x), a_acts)
        if isinstance(y, torch.Tensor) and (b_acts or y.dtype == torch.int32):
            y = apply_activations(op, f32(y), b_acts)
        return apply_activations(op, fn(x, y), activations)

    if output_tensor is not None:
        # Written into the preallocated buffer itself (which may be an input: add(x, y, output_tensor=x)), so a
        # trace replay updates the very tensor the caller holds, as the device does; nothing is allocated.
        shape = tuple(output_tensor.shape)

        def write(dst: torch.Tensor, x: torch.Tensor, y: Any) -> None:
            dst.copy_(store_as(compute(x, y).reshape(shape), out_dtype))

        per_device_write(write, output_tensor, a, b)
        return output_tensor
    return output(a, per_device(compute, a, b), out_dtype, layout, out_mc)


@device_op(kernel_replay=True)
def add(
    input_tensor_a: Tensor,
    input_tensor_b: Any,
    *,
    fast_and_approximate_mode: bool = False,
    dtype: DataType | None = None,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    activations: Any = None,
    input_tensor_a_activations: Any = None,
    input_tensor_b_activations: Any = None,
    sub_core_grids: Any = None,
    sub_device_id: Any = None,
) -> Tensor:
    return _binary("add", torch.add, input_tensor_a, input_tensor_b, dtype, memory_config, output_tensor,
                   activations, input_tensor_a_activations, input_tensor_b_activations)


@device_op(kernel_replay=True)
def mul(
    input_tensor_a: Tensor,
    input_tensor_b: Any,
    *,
    fast_and_approximate_mode: bool = False,
    dtype: DataType | None = None,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    activations: Any = None,
    input_tensor_a_activations: Any = None,
    input_tensor_b_activations: Any = None,
    sub_core_grids: Any = None,
    sub_device_id: Any = None,
) -> Tensor:
    return _binary("mul", torch.mul, input_tensor_a, input_tensor_b, dtype, memory_config, output_tensor,
                   activations, input_tensor_a_activations, input_tensor_b_activations)


multiply = mul


@device_op(kernel_replay=True)
def sub(
    input_tensor_a: Tensor,
    input_tensor_b: Any,
    *,
    fast_and_approximate_mode: bool = True,
    dtype: DataType | None = None,
    memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None,
    activations: Any = None,
    input_tensor_a_activations: Any = None,
    input_tensor_b_activations: Any = None,
    sub_core_grids: Any = None,
    sub_device_id: Any = None,
) -> Tensor:
    return _binary("sub", torch.sub, input_tensor_a, input_tensor_b, dtype, memory_config, output_tensor,
                   activations, input_tensor_a_activations, input_tensor_b_activations)


subtract = sub


def _comparison(op: str, fn: Any) -> Any:
    """gt / ge / eq: add's signature without fast_and_approximate_mode, as the real nanobind signatures read. The
    result is 1.0 where true and 0.0 where false, in input A's dtype."""

    def run(input_tensor_a: Tensor, input_tensor_b: Any, *, dtype: DataType | None = None,
            memory_config: MemoryConfig | None = None, output_tensor: Tensor | None = None, activations: Any = None,
            input_tensor_a_activations: Any = None, input_tensor_b_activations: Any = None,
            sub_core_grids: Any = None, sub_device_id: Any = None) -> Tensor:
        return _binary(op, lambda x, y: fn(x, y).to(x.dtype), input_tensor_a, input_tensor_b, dtype, memory_config,
                       output_tensor, activations, input_tensor_a_activations, input_tensor_b_activations)

    run.__name__ = run.__qualname__ = op
    return device_op(kernel_replay=True)(run)


gt = _comparison("gt", torch.gt)
ge = _comparison("ge", torch.ge)
eq = _comparison("eq", torch.eq)


# ---------------- unary (silu, fill) ----------------
_UNARY = "eltwise/unary/device/unary_device_operation.cpp"
# Output dtypes a float input may be written into through a preallocated output tensor.
_MIXED_FLOAT_OUT = (DataType.BFLOAT16, DataType.FLOAT32, DataType.BFLOAT8_B)


@dataclass(frozen=True)
class _UnaryRules:
    output_dtype: Rule
    on_device: Rule
    output_shape: Rule
    integer: Rule
    output_layout: Rule
    int_dtypes: tuple[DataType, ...]  # the integer input dtypes the op's kernel lacks


def _unary_rules(op: str, p: str, int_dtypes: tuple[DataType, ...], int_cases: tuple[str, ...]) -> _UnaryRules:
    R = rules(op, _UNARY)
    return _UnaryRules(
        output_dtype=R("Preallocated output dtype {} is not compatible with input dtype {}. Integer and float dtypes "
                       "cannot be mixed; mixed floating-point output is limited to BFLOAT16, FLOAT32, and "
                       "BFLOAT8_B.", f"{p}/output-tensor-int32", f"{p}/output-tensor-fp32",
                       source="eltwise/unary/unary.cpp"),
        on_device=R("Unary operation requires input to be on Device. Input storage type: {}",
                    unreachable="ttnn 0.81.1 segfaults on a host input before validating it (measured); the "
                                "simulator raises this message instead"),
        output_shape=R("Unary: Preallocated output shape must match computed shape. Computed: {}, Preallocated: {}",
                       f"{p}/output-tensor-wrong-shape", f"{p}/output-tensor"),
        integer=R("Unary: {} does not support integer input dtype {}", *int_cases),
        output_layout=R("Unary: Output format (tile/row-major) must match input when preallocated. Output: {}, "
                        "Input: {}", f"{p}/output-tensor-row-major", f"{p}/output-tensor"),
        int_dtypes=int_dtypes,
    )


_SILU = _unary_rules("silu", "silu", INT_TYPES, ("silu/int32", "silu/uint32", "silu/uint16", "silu/uint8",
                                                 "silu/int32-row-major", "silu/int32-output-row-major", "silu/ok"))
_EXP, _LOG = (_unary_rules(op, op, INT_TYPES, tuple(f"{op}/{c}" for c in (
    "int32", "uint32", "uint16", "uint8", "int32-row-major", "int32-output-row-major", "ok"))) for op in ("exp", "log"))
# FILL writes every integer dtype but UINT8.
_FILL = _unary_rules("fill", "fill-op", (DataType.UINT8,), ("fill-op/uint8", "fill-op/uint8-tile", "fill-op/int32"))


def _unary_validate(R: _UnaryRules, kind: str, x: Tensor, output_tensor: Tensor | None,
                    memory_config: MemoryConfig | None) -> MemoryConfig:
    """Checks in the device's order; returns the output's memory config."""
    if output_tensor is not None and output_tensor.dtype != x.dtype:
        ints = (x.dtype in INT_TYPES, output_tensor.dtype in INT_TYPES)
        R.output_dtype.require(ints == (False, False) and output_tensor.dtype in _MIXED_FLOAT_OUT or
                               ints == (True, True), _dt(output_tensor.dtype), _dt(x.dtype))
    R.on_device.require(isinstance(x, Tensor) and x.device_or_none is not None, "StorageType::HOST")
    require_device(kind, x, output_tensor)
    if output_tensor is None:
        out_mc = _unary_output_mc(x, memory_config)
        check_placement(kind, x.device_or_none, tuple(x.shape), x.layout, out_mc, x.dtype)
    else:  # written in place: memory_config is ignored
        out_mc = output_tensor.memory_config()
        R.output_shape.require(output_tensor.shape == x.shape, x.shape, output_tensor.shape)
    R.integer.require(x.dtype not in R.int_dtypes, f"UnaryOpType::{kind.upper()}", _dt(x.dtype))
    if output_tensor is not None:
        R.output_layout.require(output_tensor.layout == x.layout, output_tensor.layout.value, x.layout.value)
    return out_mc


@device_op(kernel_replay=True)
def silu(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
         output_tensor: Tensor | None = None, sub_core_grids: Any = None) -> Tensor:
    out_mc = _unary_validate(_SILU, "silu", input_tensor, output_tensor, memory_config)
    shards = per_device(lambda x: torch.nn.functional.silu(f32(x)), input_tensor)
    if output_tensor is not None:  # written in the preallocated tensor's dtype and place
        output_tensor._rebind(output(input_tensor, shards, output_tensor.dtype, None, out_mc))
        return output_tensor
    return output(input_tensor, shards, None, None, out_mc)


def _float_unary(kind: str, R: _UnaryRules, fn: Any) -> Any:
    def run(input_tensor: Tensor, *, fast_and_approximate_mode: bool = False, memory_config: MemoryConfig | None = None,
            output_tensor: Tensor | None = None, sub_core_grids: Any = None) -> Tensor:
        out_mc = _unary_validate(R, kind, input_tensor, output_tensor, memory_config)
        shards = per_device(lambda x: fn(f32(x)), input_tensor)
        if output_tensor is not None:  # written in the preallocated tensor's dtype and place
            output_tensor._rebind(output(input_tensor, shards, output_tensor.dtype, None, out_mc))
            return output_tensor
        return output(input_tensor, shards, None, None, out_mc)

    run.__name__ = run.__qualname__ = kind
    return device_op(kernel_replay=True)(run)


exp = _float_unary("exp", _EXP, torch.exp)
log = _float_unary("log", _LOG, torch.log)


@device_op(kernel_replay=True)
def fill(input_tensor: Tensor, fill_value: float, *, memory_config: MemoryConfig | None = None,
         output_tensor: Tensor | None = None, sub_core_grids: Any = None) -> Tensor:
    """Every element set to fill_value on the device. With output_tensor (which may be input_tensor itself) the
    values are written into that buffer and nothing is allocated: how a device-sized buffer is zeroed without a
    host copy."""
    out_mc = _unary_validate(_FILL, "fill", input_tensor, output_tensor, memory_config)
    if output_tensor is None:
        return output(input_tensor, per_device(lambda x: torch.full_like(x, fill_value), input_tensor), None, None,
                      out_mc)
    value = store_as(torch.tensor([float(fill_value)]), output_tensor.dtype)[0].item()

    def write(buf: torch.Tensor) -> None:
        buf.fill_(value)

    per_device_write(write, output_tensor)
    return output_tensor


# ---------------- softmax ----------------
S = rules("softmax", "normalization/softmax/device/softmax_device_operation.cpp")
SOFTMAX_DIM = S("Dimension out of range (expected to be in range of [{}, {}], but got {})", "softmax/dim4",
                "softmax/dim-5", "softmax/rank1-dim-2", "softmax/int32-dim4", "softmax/dim1",
                source="normalization/softmax/softmax.cpp")
SOFTMAX_ON_DEVICE = S("input_tensor.device() == nullptr, No device found, move input_tensor to device",
                      "softmax/host", "softmax/ok")
SOFTMAX_TILIZE = S("Can only tilize bfloat16/float32 or int32/uint32/uint16 or fp8_e4m3 tensors",
                   "softmax/row-major-uint8", "softmax/row-major",
                   source="data_movement/tilize_with_val_padding/device/tilize_with_val_padding_device_operation.cpp")
SOFTMAX_TILED = S("Inputs to softmax must be tilized", "softmax/row-major-dim-2", "softmax/row-major-rank2",
                  "softmax/row-major-rank3", "softmax/row-major-int32-dim-2", "softmax/row-major")
SOFTMAX_DTYPE = S("Input tensor must be FLOAT32, BFLOAT16, or BFLOAT8_B, got: {}", "softmax/int32", "softmax/uint16",
                  "softmax/bfp4", "softmax/row-major-int32", "softmax/bfp8")
_SOFTMAX_DTYPES = (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B)


@device_op(kernel_replay=True)
def softmax(
    input_tensor: Tensor,
    dim: int = -1,
    *,
    memory_config: MemoryConfig | None = None,
    compute_kernel_config: Any = None,
    numeric_stable: bool = True,
) -> Tensor:
    rank = len(input_tensor.shape)
    SOFTMAX_DIM.require(-rank <= dim < rank, -rank, rank - 1, dim)
    SOFTMAX_ON_DEVICE.require(input_tensor.device_or_none is not None)
    require_device("softmax", input_tensor)
    # A 4-D row-major input reduced over its last dim is tilized first; the output is TILE.
    tilized = input_tensor.layout == Layout.ROW_MAJOR and rank == 4 and dim % rank == rank - 1
    if tilized:
        SOFTMAX_TILIZE.require(input_tensor.dtype != DataType.UINT8)
    out_mc = memory_config or input_tensor.memory_config()
    check_placement("softmax", input_tensor.device_or_none, tuple(input_tensor.shape), Layout.TILE, out_mc,
                    input_tensor.dtype)
    if not tilized:
        SOFTMAX_TILED.require(input_tensor.layout == Layout.TILE)
    SOFTMAX_DTYPE.require(input_tensor.dtype in _SOFTMAX_DTYPES, _dt(input_tensor.dtype))
    return output(input_tensor, per_device(lambda x: torch.softmax(f32(x), dim=dim), input_tensor),
                  None, Layout.TILE, out_mc)
