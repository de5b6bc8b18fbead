"""Shape and placement ops on device tensors: reshape, permute, transpose, slice, concat, clone, memory configs."""

from __future__ import annotations

import builtins
from typing import Any

import torch

from .errors import TTError, refuse_options
from .memory import MemoryConfig
from .tensor import Tensor, require_device
from .trace import device_op
from .types import TILE_SIZE, Layout


def _like(t: Tensor, shards: list[torch.Tensor], memory_config: MemoryConfig | None = None) -> Tensor:
    return Tensor.make(shards, t.dtype, t.layout, t.device_or_none, memory_config or t.memory_config())


def _view(t: Tensor, shards: list[torch.Tensor]) -> Tensor:
    """A new tensor object on t's very buffer (the device reshapes in place when the pages do not move)."""
    return Tensor.make(shards, t.dtype, t.layout, t.device_or_none, t.memory_config(), alloc=t._alloc)


def _is_view(t: Tensor, shape: tuple[int, ...], memory_config: MemoryConfig | None) -> bool:
    """Whether a device reshape keeps the pages where they are: the last dim unchanged, the placement unchanged, and
    for tiles the second-last dim unchanged or whole tiles before and after (ttnn's reshape_view rule)."""
    if memory_config is not None and memory_config != t.memory_config():
        return False
    old = tuple(t.shape)
    if not old or not shape or old[-1] != shape[-1]:
        return False
    if t.layout != Layout.TILE:
        return True
    h_old = old[-2] if len(old) > 1 else 1
    h_new = shape[-2] if len(shape) > 1 else 1
    return h_old == h_new or (h_old % TILE_SIZE == 0 and h_new % TILE_SIZE == 0)


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
    require_device("reshape", input_tensor)
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise TTError("reshape", f"Shape cannot have more than 1 elements that is set to -1! Shape used: {shape}")
    if -1 in shape:
        known = _numel(tuple(d for d in shape if d != -1))
        if known == 0 or input_tensor.volume() % known:
            raise TTError("reshape", "Invalid arguments to reshape")
        shape = tuple(input_tensor.volume() // known if d == -1 else d for d in shape)
    if _numel(shape) != input_tensor.volume():
        raise TTError("reshape", "Invalid arguments to reshape")
    if shape == tuple(input_tensor.shape) and memory_config in (None, input_tensor.memory_config()):
        return input_tensor
    shards = [s.reshape(shape) for s in input_tensor._shards]
    if _is_view(input_tensor, shape, memory_config):
        return _view(input_tensor, shards)
    return _like(input_tensor, shards, memory_config)


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@device_op()
def permute(input_tensor: Tensor, dims: Any, *, memory_config: MemoryConfig | None = None,
            pad_value: float | None = None) -> Tensor:
    require_device("permute", input_tensor)
    dims = tuple(dims)
    if sorted(d % input_tensor.shape.rank for d in dims) != list(range(input_tensor.shape.rank)):
        raise TTError("permute", f"dims {dims} are not a permutation of rank {input_tensor.shape.rank}")
    return _like(input_tensor, [s.permute(dims).contiguous() for s in input_tensor._shards], memory_config)


@device_op()
def transpose(input_tensor: Tensor, dim1: int, dim2: int, *, memory_config: MemoryConfig | None = None,
              pad_value: float | None = None) -> Tensor:
    require_device("transpose", input_tensor)
    return _like(input_tensor, [s.transpose(dim1, dim2).contiguous() for s in input_tensor._shards], memory_config)


@device_op()
def slice(
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
    require_device("slice", input_tensor)
    refuse_options("slice", output_tensor=output_tensor, slice_dim=slice_dim, num_devices=num_devices)
    rank = input_tensor.shape.rank
    starts, ends = list(starts), list(ends)
    steps = list(slice_step) if slice_step is not None else [1] * rank
    if not len(starts) == len(ends) == len(steps) == rank:
        raise TTError("slice", f"starts/ends/steps must each have {rank} entries (the tensor's rank)")
    for d, (a, b) in enumerate(zip(starts, ends, strict=True)):
        if not 0 <= a <= b <= input_tensor.shape[d]:
            raise TTError("slice", f"dim {d}: [{a}, {b}) is outside 0..{input_tensor.shape[d]}")
    index = tuple(builtins.slice(a, b, c) for a, b, c in zip(starts, ends, steps, strict=True))
    return _like(input_tensor, [s[index].contiguous() for s in input_tensor._shards], memory_config)



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
    require_device("concat", *tensors)
    first = tensors[0]
    for t in tensors[1:]:
        if t.dtype != first.dtype or t.layout != first.layout:
            raise TTError("concat", "all inputs must share dtype and layout")
    shards = [torch.cat(parts, dim=dim) for parts in zip(*(t._shards for t in tensors), strict=True)]
    return _like(first, shards, memory_config)


@device_op()
def clone(input: Tensor, *, dtype: Any = None, memory_config: MemoryConfig | None = None,  # noqa: A002
          compute_kernel_config: Any = None) -> Tensor:
    input_tensor = input
    require_device("clone", input_tensor)
    out = _like(input_tensor, [s.clone() for s in input_tensor._shards], memory_config)
    if dtype is not None and dtype != input_tensor.dtype:
        from .tensor import store_as

        out = Tensor.make([store_as(s, dtype) for s in out._shards], dtype, out.layout, out.device_or_none,
                          out.memory_config())
    return out


@device_op()
def unsqueeze_to_4D(tensor: Tensor) -> Tensor:  # noqa: N802 (the real name)
    rank = tensor.shape.rank
    if rank > 4:
        raise TTError("unsqueeze_to_4D", f"rank {rank} > 4")
    if rank == 4:
        return tensor
    shape = (1,) * (4 - rank) + tuple(tensor.shape)
    return _view(tensor, [s.reshape(shape) for s in tensor._shards])


@device_op()
def to_memory_config(tensor: Tensor, memory_config: MemoryConfig, dtype: Any = None,
                     output_tensor: Tensor | None = None) -> Tensor:
    require_device("to_memory_config", tensor)
    refuse_options("to_memory_config", output_tensor=output_tensor)
    if memory_config == tensor.memory_config() and dtype in (None, tensor.dtype):
        return tensor  # already there: the device hands back the same tensor
    out = _like(tensor, list(tensor._shards), memory_config)
    if dtype is not None and dtype != tensor.dtype:
        from .tensor import store_as

        out = Tensor.make([store_as(s, dtype) for s in out._shards], dtype, out.layout, out.device_or_none,
                          memory_config)
    return out


@device_op()
def sharded_to_interleaved(input_tensor: Tensor, memory_config: MemoryConfig | None = None,
                           output_dtype: Any = None) -> Tensor:
    from .memory import DRAM_MEMORY_CONFIG

    require_device("sharded_to_interleaved", input_tensor)
    return _like(input_tensor, list(input_tensor._shards), memory_config or DRAM_MEMORY_CONFIG)


@device_op()
def interleaved_to_sharded(input_tensor: Tensor, sharded_memory_config: MemoryConfig, output_dtype: Any = None, *,
                           keep_l1_aligned: bool = False, preallocated_output: Tensor | None = None) -> Tensor:
    require_device("interleaved_to_sharded", input_tensor)
    refuse_options("interleaved_to_sharded", preallocated_output=preallocated_output)
    return _like(input_tensor, list(input_tensor._shards), sharded_memory_config)
