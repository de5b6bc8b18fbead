"""Shared helpers for op implementations: output construction with TT dtype rounding, and unary activations."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .errors import TTError
from .tensor import Tensor, store_as
from .types import DataType, Layout, MemoryConfig, UnaryOpType, UnaryWithParam


def output(
    ref: Tensor,
    shards: list[torch.Tensor],
    dtype: DataType | None = None,
    layout: Layout | None = None,
    memory_config: MemoryConfig | None = None,
) -> Tensor:
    """Store per-device results into the requested dtype (rounding as the device would) and wrap them."""
    dtype = dtype or ref.dtype
    layout = layout or ref.layout
    return Tensor.make([store_as(s, dtype) for s in shards], dtype, layout, ref.device_or_none,
                       memory_config or ref.memory_config())


def per_device(fn: Callable[..., torch.Tensor], *tensors: Any) -> list[torch.Tensor]:
    """Run fn on each chip's buffers; non-tensor arguments are passed unchanged to every call."""
    n = max((t.num_shards for t in tensors if isinstance(t, Tensor)), default=1)
    return [fn(*((t.shard(i) if isinstance(t, Tensor) else t) for t in tensors)) for i in range(n)]


def f32(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.float32 else x.float()


_F32_CACHE: dict[int, tuple[Any, int, torch.Tensor]] = {}
_F32_CACHE_MIN = 1 << 20


def f32_cached(x: torch.Tensor) -> torch.Tensor:
    """fp32 copy of a large, rarely written buffer (a weight), reused while the buffer is unchanged: a device
    matmul reads bf16 weights at full speed, while torch would convert them on every call."""
    if x.dtype == torch.float32 or x.numel() < _F32_CACHE_MIN:
        return f32(x)
    hit = _F32_CACHE.get(id(x))
    if hit is not None and hit[0]() is x and hit[1] == x._version:
        return hit[2]
    out = x.float()
    key = id(x)
    ref = weakref.ref(x, lambda _: _F32_CACHE.pop(key, None))
    _F32_CACHE[key] = (ref, x._version, out)
    return out


_UNARY: dict[Any, Callable[[torch.Tensor], torch.Tensor]] = {
    UnaryOpType.SILU: torch.nn.functional.silu,
    UnaryOpType.GELU: torch.nn.functional.gelu,
    UnaryOpType.RELU: torch.relu,
    UnaryOpType.SIGMOID: torch.sigmoid,
    UnaryOpType.IDENTITY: lambda x: x,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
}


def unary(op: str, act: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    key = act.op_type if isinstance(act, UnaryWithParam) else act
    if isinstance(key, str):
        key = key.lower()
    if key not in _UNARY:
        raise TTError(op, f"unsupported activation {act!r}; supported: silu, gelu, relu, sigmoid")
    return _UNARY[key]


def apply_activations(op: str, x: torch.Tensor, acts: Sequence[Any] | None) -> torch.Tensor:
    for act in acts or ():
        x = unary(op, act)(x)
    return x
