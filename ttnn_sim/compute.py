"""Shared helpers for op implementations: output construction with TT dtype rounding, and unary activations."""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .errors import TTError
from .memory import MemoryConfig
from .tensor import Tensor, store_as
from .types import DataType, Layout, UnaryOpType, UnaryWithParam


class Recording:
    """What an op computed while a trace was being captured: its per-device computations and the outputs built from
    them. Trace replay can rerun exactly those (see trace.Kernel) without the op's argument checks."""

    def __init__(self) -> None:
        self.runs: list[tuple[Callable[..., torch.Tensor], tuple, list[torch.Tensor]]] = []
        self.outputs: list[tuple[list[torch.Tensor], DataType, Tensor]] = []
        self.writes: list[tuple[Callable[..., None], tuple]] = []


_recording: list[Recording] = []  # innermost last


def output(
    ref: Tensor,
    shards: list[torch.Tensor],
    dtype: DataType | None = None,
    layout: Layout | None = None,
    memory_config: MemoryConfig | None = None,
    op: str = "allocate",
) -> Tensor:
    """Store per-device results into the requested dtype (rounding as the device would) and wrap them."""
    dtype = dtype or ref.dtype
    layout = layout or ref.layout
    out = Tensor.make([store_as(s, dtype) for s in shards], dtype, layout, ref.device_or_none,
                      memory_config or ref.memory_config(), op=op)
    if _recording:
        _recording[-1].outputs.append((shards, dtype, out))
    return out


def per_device(fn: Callable[..., torch.Tensor], *tensors: Any) -> list[torch.Tensor]:
    """Run fn on each chip's buffers; non-tensor arguments are passed unchanged to every call."""
    n = max((t.num_shards for t in tensors if isinstance(t, Tensor)), default=1)
    shards = [fn(*((t.shard(i) if isinstance(t, Tensor) else t) for t in tensors)) for i in range(n)]
    if _recording:
        _recording[-1].runs.append((fn, tensors, shards))
    return shards


def per_device_write(fn: Callable[..., None], *tensors: Any) -> None:
    """Run an in-place write on each chip's buffers (None for a missing optional tensor). While a trace is being
    captured the write is only recorded: persistent buffers change when the trace runs, as on hardware."""
    if _recording:
        _recording[-1].writes.append((fn, tensors))
        return
    run_write(fn, tensors)


def run_write(fn: Callable[..., None], tensors: tuple) -> None:
    n = max((t.num_shards for t in tensors if isinstance(t, Tensor)), default=1)
    for i in range(n):
        fn(*((t.shard(i) if isinstance(t, Tensor) else t) for t in tensors))


def recorded_output(fn: Callable[..., torch.Tensor], tensors: tuple, dtype: DataType,
                    out: Tensor) -> Callable[[], None]:
    """A replay closure recomputing one recorded output from its inputs' current buffers into the same tensor
    object. Which arguments are tensors, and how many chips they span, is fixed at capture."""
    slots = [i for i, t in enumerate(tensors) if isinstance(t, Tensor)]
    chips = max((tensors[i].num_shards for i in slots), default=1)
    args = list(tensors)

    def replay() -> None:
        shards = []
        for chip in range(chips):
            for i in slots:
                args[i] = tensors[i]._shards[chip]
            shards.append(store_as(fn(*args), dtype))
        out._shards[:] = shards  # in place: the model's tensor object shares this list with the trace's twin
        out._deallocated = False

    return replay


def reference_precision(t: Any) -> bool:
    """Whether t's device runs at the simulator-only reference precision (fp32 wherever the model asks for it,
    beyond what a device accepts); enabled by the `reference` profile, which real ttnn refuses."""
    dev = getattr(t, "device_or_none", None)
    return bool(dev is not None and getattr(dev, "reference_precision", False))


def f32(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.float32 else x.float()


_DERIVED: dict[tuple, tuple[tuple, Any]] = {}


def derived_from(name: str, sources: tuple[torch.Tensor | None, ...], fn: Callable[[], Any]) -> Any:
    """fn(), computed once per version of all the buffers in sources (None entries are ignored) and reused while
    they live unwritten. name must capture every other input of fn."""
    live = tuple(t for t in sources if t is not None)
    key = (name, *map(id, live))
    hit = _DERIVED.get(key)
    if hit is not None and all(r() is t and v == t._version for (r, v), t in zip(hit[0], live, strict=True)):
        return hit[1]
    value = fn()
    if isinstance(value, torch.Tensor):
        # A view (e.g. a reshape of the source) keeps its base tensor alive through ._base, and with it the cache
        # entry that waits for the base to die: every derived view would outlive its model. detach() shares the
        # storage without the reference.
        value = value.detach()
    # The callback holds the dict itself: at interpreter exit module globals are cleared before the last tensors die.
    refs = tuple((weakref.ref(t, lambda _, cache=_DERIVED: cache.pop(key, None)), t._version) for t in live)
    _DERIVED[key] = (refs, value)
    return value


def derived(x: torch.Tensor, name: str, fn: Callable[[torch.Tensor], Any]) -> Any:
    """fn(x), computed once per version of the buffer x and reused while x lives and is not written."""
    return derived_from(name, (x,), lambda: fn(x))


@functools.cache
def _cpu_has_bf16_gemm() -> bool:
    forced = os.environ.get("TT_SIM_BF16_GEMM", "").strip().lower()
    if forced in ("native", "fp32"):
        return forced == "native"
    if forced:
        raise TTError("simulator", f"TT_SIM_BF16_GEMM={forced!r}; use 'native' or 'fp32'")
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


# Up to this many rows a GEMM is a weight stream (memory bound): bf16 halves the bytes read whatever the hardware.
BF16_STREAM_ROWS = 2


def bf16_gemm_is_native(rows: int | None = None) -> bool:
    """Whether a bf16 x bf16 GEMM with `rows` rows should run as a torch bf16 GEMM. Without bf16 hardware
    (AVX512-BF16 / AMX) torch's bf16 GEMM is several times slower than an fp32 GEMM of the same values, which gives
    the same result (exact products, fp32 accumulation, one rounding); a row or two stays bf16. TT_SIM_BF16_GEMM=
    native|fp32 overrides the hardware probe."""
    return _cpu_has_bf16_gemm() or (rows is not None and rows <= BF16_STREAM_ROWS)


def f32_cached(x: torch.Tensor) -> torch.Tensor:
    """fp32 copy of a buffer read many times between writes (a weight, a step's cos/sin): the device reads bf16 at
    full speed, while torch would convert it on every call."""
    return x if x.dtype == torch.float32 else derived(x, "f32", torch.Tensor.float)


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
