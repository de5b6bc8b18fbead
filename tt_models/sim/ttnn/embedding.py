"""embedding: gathers rows of a row-major [.., vocab, dim] table by uint32 ids."""

from __future__ import annotations

from typing import Any

import torch

from .compute import output, per_device
from .errors import TTError
from .memory import MemoryConfig
from .tensor import Tensor, require_device, require_dtype, require_layout
from .trace import device_op
from .types import DataType, Layout


@device_op(kernel_replay=True)
def embedding(
    input_tensor: Tensor,
    weight: Tensor,
    *,
    padding_idx: int | None = None,
    layout: Layout = Layout.ROW_MAJOR,
    embeddings_type: Any = None,
    dtype: DataType | None = None,
    output_tensor: Tensor | None = None,
    memory_config: MemoryConfig | None = None,
) -> Tensor:
    op = "embedding"
    require_device(op, input_tensor, weight)
    require_dtype(op, "input_tensor (ids)", input_tensor, (DataType.UINT32, DataType.INT32))
    require_layout(op, "input_tensor (ids)", input_tensor, Layout.ROW_MAJOR)
    require_layout(op, "weight", weight, Layout.ROW_MAJOR)
    vocab, dim = weight.shape[-2], weight.shape[-1]
    lead = input_tensor.shape[:-1]
    batch = 1
    for d in lead:
        batch *= d

    def compute(ids: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(batch, -1).long()
        if flat.numel() and (flat.min() < 0 or flat.max() >= vocab):
            raise TTError(op, f"ids must lie in [0, {vocab}); got {int(flat.min())}..{int(flat.max())}")
        return torch.nn.functional.embedding(flat, w.reshape(vocab, dim))

    out = output(weight, per_device(compute, input_tensor, weight), dtype or weight.dtype, layout, memory_config)
    if output_tensor is not None:
        output_tensor._rebind(out)
        return output_tensor
    return out
