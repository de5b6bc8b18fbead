"""Element-wise ops: add, mul (with fused input activations), silu, softmax, fill."""

from __future__ import annotations

from typing import Any

import torch

from .compute import apply_activations, f32, output, per_device, per_device_write, store_as
from .errors import TTError
from .memory import MemoryConfig
from .tensor import Tensor, require_device
from .trace import device_op
from .types import DataType


def _binary(op: str, fn: Any, a: Tensor, b: Any, dtype: DataType | None, memory_config: MemoryConfig | None,
            output_tensor: Tensor | None, activations: Any, a_acts: Any, b_acts: Any) -> Tensor:
    require_device(op, a, b if isinstance(b, Tensor) else None)
    if isinstance(b, Tensor) and b.shape != a.shape:
        try:
            torch.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        except RuntimeError:
            raise TTError(op, f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast") from None

    out_dtype = dtype or a.dtype
    plain = not (activations or a_acts or b_acts) and out_dtype == DataType.BFLOAT16

    def compute(x: torch.Tensor, y: Any) -> torch.Tensor:
        if plain and x.dtype == torch.bfloat16 and (not isinstance(y, torch.Tensor) or y.dtype == torch.bfloat16):
            return fn(x, y)  # torch computes bf16 element-wise ops in fp32 and rounds once, as the device does
        x = apply_activations(op, f32(x), a_acts)
        if isinstance(y, torch.Tensor) and b_acts:  # otherwise bf16 y promotes to fp32 inside fn, exactly
            y = apply_activations(op, f32(y), b_acts)
        return apply_activations(op, fn(x, y), activations)

    out = output(a, per_device(compute, a, b), dtype, None, memory_config)
    if output_tensor is not None:
        output_tensor._rebind(out)
        return output_tensor
    return out


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
def silu(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
         output_tensor: Tensor | None = None, sub_core_grids: Any = None) -> Tensor:
    require_device("silu", input_tensor)
    out = output(input_tensor, per_device(lambda x: torch.nn.functional.silu(f32(x)), input_tensor),
                 None, None, memory_config)
    if output_tensor is not None:
        output_tensor._rebind(out)
        return output_tensor
    return out


@device_op(kernel_replay=True)
def softmax(
    input_tensor: Tensor,
    dim: int = -1,
    *,
    memory_config: MemoryConfig | None = None,
    compute_kernel_config: Any = None,
    numeric_stable: bool = True,
) -> Tensor:
    require_device("softmax", input_tensor)
    return output(input_tensor, per_device(lambda x: torch.softmax(f32(x), dim=dim), input_tensor),
                  None, None, memory_config)


# Dtypes the unary FILL kernel writes (ttnn.fill's documented table).
_FILL_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32, DataType.INT32, DataType.UINT32,
                DataType.UINT16)


@device_op(kernel_replay=True)
def fill(input_tensor: Tensor, fill_value: float, *, memory_config: MemoryConfig | None = None,
         output_tensor: Tensor | None = None, sub_core_grids: Any = None) -> Tensor:
    """Every element set to fill_value on the device. With output_tensor (which may be input_tensor itself) the
    values are written into that buffer and nothing is allocated: how a device-sized buffer is zeroed without a
    host copy."""
    require_device("fill", input_tensor)
    if input_tensor.dtype not in _FILL_DTYPES:
        raise TTError("fill", f"unsupported dtype {input_tensor.dtype} (supported: BFLOAT16, BFLOAT8_B, FLOAT32, "
                              "INT32, UINT32, UINT16)")
    if output_tensor is None:
        return output(input_tensor, per_device(lambda x: torch.full_like(x, fill_value), input_tensor), None, None,
                      memory_config)
    if output_tensor.shape != input_tensor.shape:
        raise TTError("fill", f"output_tensor shape {output_tensor.shape} must equal the input's {input_tensor.shape}")
    value = store_as(torch.tensor([float(fill_value)]), output_tensor.dtype)[0].item()

    def write(buf: torch.Tensor) -> None:
        buf.fill_(value)

    per_device_write(write, output_tensor)
    return output_tensor
