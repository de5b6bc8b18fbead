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
        self.runs: list[tuple[Callable[..., torch.Tensor], tuple, list[torch.Tensor], tuple[int, ...]]] = []
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
    out._topology = ref._topology
    if _recording:
        _recording[-1].outputs.append((shards, dtype, out))
    return out


def per_device(fn: Callable[..., torch.Tensor], *tensors: Any, rows: tuple[int, ...] = ()) -> list[torch.Tensor]:
    """Run fn on each chip's buffers; non-tensor arguments are passed unchanged to every call. rows: the arguments
    fn reads row by row (each row of the result, every index but the last dimension's, depends only on the same row
    of these and on any part of the others, e.g. a weight), so a trace replay may compute only live users' rows."""
    n = max((t.num_shards for t in tensors if isinstance(t, Tensor)), default=1)
    shards = [fn(*((t.shard(i) if isinstance(t, Tensor) else t) for t in tensors)) for i in range(n)]
    if _recording:
        _recording[-1].runs.append((fn, tensors, shards, rows))
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


# Counters of what trace replays did (a diagnostic, read by tests and benchmarks).
replay_stats = {"rows_left_out": 0}


def user_dim(shape: torch.Size, users: int) -> int | None:
    """The dimension holding a decode step's users in a tensor of `shape`: the first one longer than 1, if it has
    exactly one row per user (TT decode keeps users ahead of heads: [1, 1, users, width], [1, users, heads, dim])."""
    for d, n in enumerate(shape[:-1]):
        if n != 1:
            return d if n == users else None
    return None


def recorded_output(fn: Callable[..., torch.Tensor], tensors: tuple, dtype: DataType, out: Tensor,
                    rows: tuple[int, ...] = (),
                    shapes: list[torch.Size] | None = None) -> Callable[[list[tuple[int, int]] | None], None]:
    """A replay closure recomputing one recorded output from its inputs' current buffers into the same tensor
    object. Which arguments are tensors, and how many chips they span, is fixed at capture.

    The closure takes each chip's (live rows m, users) (trace.live_rows; None computes every row). For a row-by-row
    op (`rows`: its row arguments; `shapes`: the output's recorded ones), a chip whose m is below its user count
    computes the first m users' rows only, from those rows of the row arguments, and leaves NaN in the rest: rows
    no live user reads, which a device fills with whatever its padding computes. m is a multiple of 4, at which
    torch's GEMM gives each row exactly the bits it gives it in the whole batch (tests/models/test_live_rows.py holds
    every family to that)."""
    slots = [i for i, t in enumerate(tensors) if isinstance(t, Tensor)]
    chips = max((tensors[i].num_shards for i in slots), default=1)
    args = list(tensors)
    row_args = [i for i in rows if isinstance(tensors[i], Tensor)]

    def compute(chip: int, live: tuple[int, int] | None) -> torch.Tensor:
        for i in slots:
            args[i] = tensors[i]._shards[chip]
        if live is None or not row_args or shapes is None:
            return store_as(fn(*args), dtype)
        m, users = live
        full = shapes[chip]
        d = user_dim(full, users)
        if d is None or m >= users:
            return store_as(fn(*args), dtype)
        for i in row_args:
            a = args[i]
            if a.dim() == len(full) and a.shape[:d + 1] == full[:d + 1]:
                args[i] = a.narrow(d, 0, m)
        y = fn(*args)
        padded = y.new_full(full, float("nan"))  # undefined, and visibly so, as the attention left them
        padded.narrow(d, 0, m).copy_(y)
        replay_stats["rows_left_out"] += full[d] - m
        return store_as(padded, dtype)

    def replay(live: list[tuple[int, int]] | None = None) -> None:
        out._shards[:] = [compute(chip, live[chip] if live else None) for chip in range(chips)]
        out._deallocated = False  # in place above: the model's tensor object shares this list with the twin

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
    hit = _DERIVED.get((name, id(x)))  # derived_from's entry for the one source, looked up without its generality
    if hit is not None:
        ((ref, version),) = hit[0]
        if ref() is x and version == x._version:
            return hit[1]
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
    # GELU's tanh form (HF's gelu_pytorch_tanh); GELU above is the erf form.
    UnaryOpType.GELU_TANH: lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    UnaryOpType.RELU: torch.relu,
    UnaryOpType.SIGMOID: torch.sigmoid,
    UnaryOpType.IDENTITY: lambda x: x,
    UnaryOpType.RECIP: torch.reciprocal,
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
        raise TTError(op, f"unsupported activation {act!r}; supported: silu, gelu, gelu_tanh, relu, sigmoid, recip")
    return _UNARY[key]


def apply_activations(op: str, x: torch.Tensor, acts: Sequence[Any] | None) -> torch.Tensor:
    for act in acts or ():
        x = unary(op, act)(x)
    return x
