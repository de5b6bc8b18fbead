"""ttnn.sum: the generic reduction (sum over one or more dims), as the decode step's log-softmax and token ranks use
it. Rules and output specs as ttnn 0.81.1 gives them on a mock N150 (tt_checks/cases_penalties.py): float, UINT32 and
INT32 inputs; a ROW_MAJOR input comes back ROW_MAJOR; dim None reduces everything to a scalar."""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, output, per_device
from .errors import TTError
from .memory import MemoryConfig
from .placement import check_placement
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import DataType

R = rules("sum", "reduction/generic/device/reduce_op_device_operation.cpp")
SUM_ON_DEVICE = R("Expected input tensor to be on device", "sum/host", "sum/ok",
                  source="reduction/generic/generic_reductions.cpp")
SUM_DIM = R("Unsupported dim {} at index {}. After possible adjustment, needs to be at least 0 and less than rank {}, "
            "or exactly 0 for a rank 0 tensor.", "sum/dim4", "sum/dim-5", "sum/dim3",
            source="reduction/reduction_common/reduction_common.cpp")
SUM_DTYPE = R("Only FLOAT32, BFLOAT16, BFLOAT8_B, and UINT32 are supported for generic reduction (INT32 is supported "
              "for MAX/MIN/SUM) - got {}.", "sum/uint16", "sum/int32")
_DTYPES = (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.UINT32, DataType.INT32)


@device_op(kernel_replay=True)
def sum(  # noqa: A001  (the real op's name)
    input_tensor: Tensor,
    dim: int | list[int] | tuple[int, ...] | None = None,
    keepdim: bool = False,
    *,
    memory_config: MemoryConfig | None = None,
    compute_kernel_config: Any = None,
    scalar: float = 1.0,
    correction: bool | None = None,
    sub_core_grids: Any = None,
    fast_and_approximate_mode: bool = False,
    output_layout: Any = None,
) -> Tensor:
    x = input_tensor
    SUM_ON_DEVICE.require(isinstance(x, Tensor) and x.device_or_none is not None)
    require_device("sum", x)
    rank = len(x.shape)
    dims = list(range(rank)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    for i, d in enumerate(dims):
        d = d + rank if d < 0 else d
        SUM_DIM.require(0 <= d < rank or (rank == 0 and d == 0), d, i, rank)
        dims[i] = d
    SUM_DTYPE.require(x.dtype in _DTYPES, f"DataType::{x.dtype.name}")
    if x.is_sharded() or (memory_config is not None and memory_config.is_sharded()):
        raise TTError("sum", "the simulator models sum on interleaved tensors only")
    if dim is None:
        shape: list[int] = []
    else:
        shape = [1 if i in dims else n for i, n in enumerate(x.shape)] if keepdim else \
            [n for i, n in enumerate(x.shape) if i not in dims]
    out_mc = memory_config or x.memory_config()
    check_placement("sum", x.device_or_none, tuple(shape), x.layout, out_mc, x.dtype)
    integer = x.dtype in (DataType.INT32, DataType.UINT32)

    def compute(v: torch.Tensor) -> torch.Tensor:
        # fp32 accumulation (the reduce kernel's destination registers), rounded once into the output dtype
        s = (v.to(torch.int64) if integer else f32(v)).sum(dim=dims, keepdim=keepdim) if dims else v
        return (s * scalar if scalar != 1.0 else s).reshape(shape)

    return output(x, per_device(compute, x), None, None, out_mc)
