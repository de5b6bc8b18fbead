"""argmax, topk, and plus_one (the in-place position increment used by on-device greedy decode)."""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, output, per_device
from .errors import TTError, refuse_options
from .memory import MemoryConfig
from .tensor import Tensor, require_device, require_dtype
from .trace import DuringCapture, device_op
from .types import DataType, Layout


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
    require_device("argmax", input_tensor)

    def compute(x: torch.Tensor) -> torch.Tensor:
        # Ties resolve to the first index, as the reduction kernel scans in order.
        return torch.argmax(f32(x), dim=dim, keepdim=keepdim if dim is not None else False)

    out = output(input_tensor, per_device(compute, input_tensor), DataType.UINT32, Layout.ROW_MAJOR, memory_config)
    if output_tensor is not None:
        output_tensor._rebind(out)
        return output_tensor
    return out


@device_op()
def topk(
    input_tensor: Tensor,
    k: int,
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
    require_device("topk", input_tensor)
    refuse_options("topk", indices_tensor=indices_tensor, output_tensor=output_tensor)
    if not 1 <= k <= input_tensor.shape[dim]:
        raise TTError("topk", f"k={k} must be in 1..{input_tensor.shape[dim]}")
    res = per_device(lambda x: torch.topk(f32(x), k, dim=dim, largest=largest, sorted=sorted), input_tensor)
    values = output(input_tensor, [r.values for r in res], None, None, memory_config)
    indices = output(input_tensor, [r.indices for r in res], DataType.UINT16, None, memory_config)
    return values, indices


@device_op(DuringCapture.SKIP)
def plus_one(input_tensor: Tensor, sub_core_grids: Any = None, skip_negative_entries: bool = False) -> Tensor:
    """Adds one in place. With skip_negative_entries, -1 (an empty decode slot) stays -1."""
    require_device("plus_one", input_tensor)
    require_dtype("plus_one", "input_tensor", input_tensor, (DataType.INT32, DataType.UINT32))
    for s in input_tensor._shards:
        if skip_negative_entries:
            s.add_((s >= 0).to(s.dtype))
        else:
            s.add_(1)
    return input_tensor
