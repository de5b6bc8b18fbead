"""ttnn.clamp: every element limited to [min, max] (either bound may be left out, not both), as ttnn 0.81.1's
unary CLAMP_TSS for scalar bounds, or element-wise between two bound tensors. GPT-OSS's clamped SwiGLU clamps its
gate above and its up projection on both sides with it.

Measured on the real 0.81.1 (tt_checks/cases_clamp.py): bf16 / fp32 / bfloat8_b / bfloat4_b and INT32 are taken,
in TILE or ROW_MAJOR, interleaved or sharded, the output in the input's dtype and placement unless memory_config
says otherwise; an INT32 input with a bound that is not a whole number comes out FLOAT32 (the composite typecasts
it first); UINT32 / UINT16 inputs are refused by the unary op's integer rule."""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, output, per_device
from .eltwise import _MIXED_FLOAT_OUT, _dt, _unary_output_mc, _unary_rules
from .errors import TTError
from .memory import MemoryConfig
from .placement import check_placement
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import INT_TYPES, DataType

_COMPOSITE = "eltwise/unary/unary_composite_op.cpp"
NO_BOUND = rules("clamp", _COMPOSITE)("Only one of 'min' or 'max' can be None. Please provide one value",
                                      "clamp/neither", "clamp/max-only")
_CLAMP = _unary_rules("clamp", "clamp", (DataType.UINT32, DataType.UINT16, DataType.UINT8),
                      ("clamp/uint32", "clamp/uint16", "clamp/int32"))


def _whole(v: Any) -> bool:
    return v is None or isinstance(v, Tensor) or float(v) == int(v)


@device_op(kernel_replay=True)
def clamp(input_tensor: Tensor, min: Any = None, max: Any = None, *,  # noqa: A002 (ttnn's keyword names)
          memory_config: MemoryConfig | None = None, output_tensor: Tensor | None = None) -> Tensor:
    x, lo, hi = input_tensor, min, max
    NO_BOUND.require(lo is not None or hi is not None)
    tensors = isinstance(lo, Tensor) or isinstance(hi, Tensor)
    if tensors and not (isinstance(lo, Tensor) and isinstance(hi, Tensor) and lo.shape == x.shape == hi.shape):
        raise TTError("clamp", "bound tensors of another shape than the input (or one bound a tensor, the other "
                               "not) are not supported by the simulator")
    R = _CLAMP
    if output_tensor is not None and output_tensor.dtype != x.dtype:
        ints = (x.dtype in INT_TYPES, output_tensor.dtype in INT_TYPES)
        R.output_dtype.require(ints == (False, False) and output_tensor.dtype in _MIXED_FLOAT_OUT or
                               ints == (True, True), _dt(output_tensor.dtype), _dt(x.dtype))
    R.on_device.require(isinstance(x, Tensor) and x.device_or_none is not None, "StorageType::HOST")
    require_device("clamp", x, output_tensor, *(t for t in (lo, hi) if isinstance(t, Tensor)))
    out_dtype = x.dtype
    if x.dtype == DataType.INT32 and not (_whole(lo) and _whole(hi)):
        out_dtype = DataType.FLOAT32  # the composite typecasts the input to take a fractional bound
    if output_tensor is None:
        out_mc = _unary_output_mc(x, memory_config)
        check_placement("clamp", x.device_or_none, tuple(x.shape), x.layout, out_mc, out_dtype)
    else:
        out_mc = output_tensor.memory_config()
        R.output_shape.require(output_tensor.shape == x.shape, x.shape, output_tensor.shape)
    R.integer.require(x.dtype not in R.int_dtypes, "UnaryOpType::CLAMP_TSS", _dt(x.dtype))
    if output_tensor is not None:
        R.output_layout.require(output_tensor.layout == x.layout, output_tensor.layout.value, x.layout.value)

    def compute(v: torch.Tensor, a: Any, b: Any) -> torch.Tensor:
        if v.dtype == torch.int32 and out_dtype == DataType.INT32:
            return torch.clamp(v, a, b)
        a = f32(a) if isinstance(a, torch.Tensor) else a
        b = f32(b) if isinstance(b, torch.Tensor) else b
        return torch.clamp(f32(v), a, b)

    shards = per_device(compute, x, lo, hi)
    if output_tensor is not None:  # written in the preallocated tensor's dtype and place
        output_tensor._rebind(output(x, shards, output_tensor.dtype, None, out_mc))
        return output_tensor
    return output(x, shards, out_dtype, None, out_mc)
