"""rms_norm: x * rsqrt(mean(x^2) + eps) * weight, with an optional residual added first."""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, f32_cached, output, per_device
from .errors import TTError
from .memory import MemoryConfig
from .tensor import Tensor, require_device
from .trace import device_op
from .types import DataType


@device_op(kernel_replay=True)
def rms_norm(
    input_tensor: Tensor,
    *,
    memory_config: MemoryConfig | None = None,
    epsilon: float = 1e-12,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    residual_input_tensor: Tensor | None = None,
    program_config: Any = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    require_device("rms_norm", input_tensor, weight, bias, residual_input_tensor)
    dim = input_tensor.shape[-1]
    for name, t in (("weight", weight), ("bias", bias)):
        # Weights are stored as [1, 1, dim/32, 32] row-major sticks; any shape holding dim values is accepted.
        if t is not None and t.volume() != dim:
            raise TTError("rms_norm", f"{name} holds {t.volume()} values, input's last dim is {dim}")

    # torch's fused kernel computes bf16 inputs in fp32 and rounds once: bit-identical to the fp32 path below.
    native = input_tensor.dtype == DataType.BFLOAT16 and bias is None and residual_input_tensor is None

    def compute(x: torch.Tensor, w: Any, b: Any, r: Any) -> torch.Tensor:
        if native and x.dtype == torch.bfloat16 and (w is None or w.dtype == torch.bfloat16):
            return torch.nn.functional.rms_norm(x, (dim,), w.reshape(-1) if w is not None else None, epsilon)
        x = f32(x)
        if r is not None:
            x = x + f32(r)
        y = torch.nn.functional.rms_norm(x, (dim,), f32_cached(w).reshape(-1) if w is not None else None, epsilon)
        if b is not None:
            y = y + f32(b).reshape(-1)
        return y

    return output(input_tensor, per_device(compute, input_tensor, weight, bias, residual_input_tensor),
                  None, None, memory_config)
