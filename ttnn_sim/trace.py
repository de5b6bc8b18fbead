"""Trace capture and replay.

A capture records the device ops issued between begin and end, with the very tensor objects they used. Replay runs
that sequence again: inputs are read from the captured tensors as they are *now* (refreshed by the caller with
copy_host_to_device_tensor), and every op's result is written into the tensor object the capture returned, so the
caller reads the new values from the same output tensors. Scalars and Python control flow are frozen at capture.

As on hardware, ops that write persistent buffers in place (cache updates) do not execute while capturing, and
reading a device tensor back to the host, or opening/closing a device, during capture raises.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import torch

from .compute import Recording, _recording, recorded_output, run_write
from .device import MeshDevice
from .errors import TTError
from .memory import MemoryConfig
from .tensor import Tensor


class DuringCapture(Enum):
    RUN = "run"  # pure ops: executing shows the shapes and has no visible effect
    SKIP = "skip"  # in-place writes to persistent buffers: only recorded, as on hardware


@dataclass
class Kernel:
    """An op's replay without its host-side work: the per-device computations recorded at capture, rerun on the
    inputs' current buffers, results stored into the captured output tensors. Shapes, dtypes and options are fixed
    once captured (as in a device trace), so the argument checks are not repeated; data-dependent checks live in
    the computations and still run."""

    parts: list[Callable[[list[tuple[int, int]] | None], None]]

    def __call__(self, live: list[tuple[int, int]] | None = None) -> None:
        for part in self.parts:
            part(live)


@dataclass
class _Step:
    fn: Callable[..., Any]
    args: tuple
    kwargs: dict
    out: Any
    kernel: Kernel | None = None


def _kernel_for(rec: Any, out: Any, twin: Callable[[Any], Any]) -> Kernel | None:
    """A Kernel when the op's effect is exactly its recorded in-place writes, or its result exactly the outputs it
    built from its own per-device runs; else None (the op is then replayed by calling it). The kernel works on the
    trace's twins of the tensors involved."""
    if rec.writes:
        # An in-place op returns the buffers it wrote (the cache), which replay leaves where they are.
        written = {id(t) for _, tensors in rec.writes for t in tensors if isinstance(t, Tensor)}
        returned = [] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
        if rec.runs or rec.outputs or any(id(o) not in written for o in returned):
            return None
        return Kernel([_Write(fn, twin(tensors)) for fn, tensors in rec.writes])
    runs = {id(shards): (fn, tensors, rows) for fn, tensors, shards, rows in rec.runs}
    returned = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, (list, tuple)) else None
    if not returned or len(rec.runs) != len(rec.outputs) or len(returned) != len(rec.outputs):
        return None
    parts = []
    for shards, dtype, tensor in rec.outputs:
        if id(shards) not in runs or not any(tensor is r for r in returned):
            return None
        fn, tensors, rows = runs[id(shards)]
        parts.append(recorded_output(fn, twin(tensors), dtype, twin(tensor), rows, [s.shape for s in shards]))
    return Kernel(parts)


@dataclass
class _Write:
    """A recorded in-place write, replayed whole (a cache update skips the slots at -1 itself, as the device's
    does); it takes the live rows only to share Kernel's call."""

    fn: Callable[..., None]
    tensors: tuple

    def __call__(self, live: list[tuple[int, int]] | None = None) -> None:
        run_write(self.fn, self.tensors)


@dataclass
class Trace:
    """A captured sequence of ops. The steps hold twins of the tensors they touch: objects on the same buffers
    (the same shard lists) that reserve no device memory, so a tensor the model drops during capture frees its
    memory as on the device, while the trace keeps the storage its replay writes and reads."""

    trace_id: int
    steps: list[_Step] = field(default_factory=list)
    complete: bool = False
    twins: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary)
    positions: Any = None  # the decode step's per-user positions (see live_rows), found at end of capture

    def twin(self, value: Any) -> Any:
        if isinstance(value, Tensor):
            tw = self.twins.get(value)
            if tw is None:
                tw = value.twin()
                self.twins[value] = tw
            return tw
        if isinstance(value, tuple):
            return tuple(self.twin(v) for v in value)
        if isinstance(value, list):
            return [self.twin(v) for v in value]
        if isinstance(value, dict):
            return {k: self.twin(v) for k, v in value.items()}
        return value


def _device_of(args: tuple, kwargs: dict) -> MeshDevice | None:
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            if a._device is not None:
                return a._device
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor) and b._device is not None:
                    return b._device
    return None


# Ops whose cached program takes every shape as a runtime argument (one cache entry across shapes, measured on
# 0.81.1 for add, mul, silu and fill); every other op's program hash includes its inputs' shapes.
_SHAPE_FREE_PROGRAMS = {"add", "mul", "multiply", "silu", "fill"}
# Arguments a device op passes as runtime arguments, not program attributes: a new value reuses the cached program
# (tt-metal's paged-cache tests assert one entry across positions and users).
_RUNTIME_ARGS = {"paged_update_cache": {"update_idxs"}, "paged_fused_update_cache": {"update_idxs"},
                 "paged_fill_cache": {"batch_idx"}}


def _spec(v: Any, shapes: bool) -> Any:
    """What of an argument goes into a program's cache key: a tensor's dtype, layout and placement (and shape, for
    the ops whose programs are built per shape), anything else as itself."""
    if isinstance(v, Tensor):
        return ("tensor", v._dtype, v._layout, _mc_repr(v._memory_config), tuple(v._shape) if shapes else None)
    if isinstance(v, (list, tuple)):
        return tuple(_spec(x, shapes) for x in v)
    if v is None:
        return "None"
    return _mc_repr(v) if type(v) is MemoryConfig else repr(v)


_INTERLEAVED_REPRS: dict[tuple, str] = {}


def _mc_repr(mc: Any) -> str:
    """repr(mc), kept per (layout, buffer type) for the unsharded configs most tensors have."""
    if type(mc) is not MemoryConfig or mc.shard_spec is not None:
        return repr(mc)
    key = (mc.memory_layout, mc.buffer_type)
    r = _INTERLEAVED_REPRS.get(key)
    if r is None:
        r = _INTERLEAVED_REPRS[key] = repr(mc)
    return r


def _note_program(dev: MeshDevice, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any,
                  in_place: bool = False) -> None:
    """Count the program an op ran in the device's program cache; a view or alias of an input runs none, unless the
    op writes that input in place (the paged-cache ops run a program and hand back the cache they wrote)."""
    ins = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    if not in_place and isinstance(out, Tensor) and any(out is t or (out._alloc is not None and out._alloc is t._alloc)
                                       for t in ins):
        return
    name = _program_name(fn)
    shapes = name not in _SHAPE_FREE_PROGRAMS
    runtime = _RUNTIME_ARGS.get(name, set())
    attrs = tuple(sorted((k, "runtime" if k in runtime else _spec(v, shapes)) for k, v in kwargs.items()))
    dev.note_program((name, _spec(args, shapes), attrs))


@functools.cache
def _program_name(fn: Callable[..., Any]) -> str:
    return fn.__name__.lstrip("_").replace("device_to_layout", "to_layout")


@functools.cache
def _takes_small_tiles(fn: Callable[..., Any]) -> bool:
    from .conversion import SMALL_TILE_OPS

    return fn.__name__.lstrip("_") in SMALL_TILE_OPS


def _check_tiles(fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """A tensor stored in tiles other than 32x32 (conversion.SMALL_TILES) goes only to the ops modelled for them."""
    if _takes_small_tiles(fn):
        return
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor) and t._tile is not None:
                from .conversion import SMALL_TILE_OPS

                name = fn.__name__.lstrip("_")
                raise TTError(name, f"an input stored in {t._tile[0]}x{t._tile[1]} tiles: the simulator models tiles "
                                    f"other than 32x32 only for {sorted(SMALL_TILE_OPS)}")


def device_op(during_capture: DuringCapture = DuringCapture.RUN,
              kernel_replay: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a function a traceable device op. kernel_replay: the op does all its data-dependent work inside the
    per-device computations it hands to compute.per_device, so a trace may replay just those (Kernel)."""

    in_place = during_capture is DuringCapture.SKIP  # the SKIP ops are the ones that write an input in place

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _check_tiles(fn, args, kwargs)
            dev = _device_of(args, kwargs)
            trace = dev.capturing if dev is not None else None
            if trace is None:
                out = fn(*args, **kwargs)
                if dev is not None:
                    _note_program(dev, fn, args, kwargs, out, in_place)
                return out
            if not kernel_replay:
                if during_capture is DuringCapture.SKIP:
                    trace.steps.append(_Step(fn, trace.twin(args), trace.twin(kwargs), None))
                    return None
                out = fn(*args, **kwargs)
                _note_program(dev, fn, args, kwargs, out, in_place)
                trace.steps.append(_Step(fn, trace.twin(args), trace.twin(kwargs), trace.twin(out)))
                return out
            # Under a recording the op checks its arguments now; in-place writes are recorded, not executed.
            _recording.append(Recording())
            try:
                out = fn(*args, **kwargs)
            finally:
                rec = _recording.pop()
            _note_program(dev, fn, args, kwargs, out, in_place)
            kernel = _kernel_for(rec, out, trace.twin)
            if during_capture is DuringCapture.SKIP and kernel is None:
                raise TTError(fn.__name__, "an in-place op must record its writes with per_device_write")
            trace.steps.append(_Step(fn, trace.twin(args), trace.twin(kwargs), trace.twin(out), kernel))
            return out

        return wrapper

    return deco


def _assign(captured: Any, fresh: Any) -> None:
    if isinstance(captured, Tensor):
        captured._shards[:] = fresh._shards  # in place: the model's own object shares this list
    elif isinstance(captured, (list, tuple)):
        for c, f in zip(captured, fresh, strict=True):
            _assign(c, f)


def begin_trace_capture(mesh_device: MeshDevice, *, cq_id: int = 0) -> int:
    mesh_device.check_open("begin_trace_capture")
    if mesh_device.capturing is not None:
        raise TTError("begin_trace_capture", "a trace is already being captured on this device")
    if mesh_device.trace_region_size <= 0:
        raise TTError("begin_trace_capture", "device was opened with trace_region_size=0: no room for a trace")
    tid = mesh_device._next_trace_id
    mesh_device._next_trace_id += 1
    mesh_device.capturing = Trace(tid)
    return tid


# Replay computes row-by-row ops for live users only (LIVE_ROWS; TT_SIM_LIVE_ROWS=0 computes every row).
LIVE_ROWS = os.environ.get("TT_SIM_LIVE_ROWS", "1") != "0"
# The ops whose position argument says which users a decode step serves: -1 marks a slot with no user.
_POSITION_ARGS = {"paged_scaled_dot_product_attention_decode": "cur_pos_tensor",
                  "paged_update_cache": "update_idxs_tensor", "paged_fused_update_cache": "update_idxs_tensor"}
# Live rows are rounded up to this multiple: from 4 rows up torch's fp32 GEMM gives a row the same bits whatever the
# number of rows beside it (below, it switches kernels: 1 row differs).
_ROW_QUANTUM = 4


def _positions(trace: Trace) -> Any:
    """The one position tensor every paged decode op of the trace reads, or None (none, or several)."""
    found = {id(t): t for step in trace.steps
             if (name := _POSITION_ARGS.get(step.fn.__name__)) and (t := step.kwargs.get(name)) is not None}
    return next(iter(found.values())) if len(found) == 1 else None


def live_rows(positions: Any) -> list[tuple[int, int]]:
    """Per chip, (rows to compute, users): the users up to the last one with a position (>= 0), rounded up to
    _ROW_QUANTUM. A slot at -1 has no user: the device computes its rows and nothing reads them, so a replay may
    leave rows past the last live user uncomputed."""
    live = []
    for shard in positions._shards:
        pos = shard.reshape(-1)
        users = pos.numel()
        idx = torch.nonzero(pos >= 0)
        last = int(idx[-1]) + 1 if idx.numel() else 0
        live.append((min(users, max(_ROW_QUANTUM, -(-last // _ROW_QUANTUM) * _ROW_QUANTUM)), users))
    return live


def end_trace_capture(mesh_device: MeshDevice, trace_id: int, *, cq_id: int = 0) -> None:
    trace = mesh_device.capturing
    if trace is None or trace.trace_id != trace_id:
        raise TTError("end_trace_capture", f"trace {trace_id} is not being captured")
    trace.complete = True
    trace.positions = _positions(trace)
    trace.twins = weakref.WeakKeyDictionary()  # replay works on the twins alone from here on
    mesh_device.traces[trace_id] = trace
    mesh_device.capturing = None


def execute_trace(mesh_device: MeshDevice, trace_id: int, *, cq_id: int = 0, blocking: bool = True) -> None:
    mesh_device.check_open("execute_trace")
    if mesh_device.capturing is not None:
        raise TTError("execute_trace", "cannot execute a trace while capturing one")
    trace = mesh_device.traces.get(trace_id)
    if trace is None:
        raise TTError("execute_trace", f"no captured trace {trace_id} (released or never captured)")
    live = live_rows(trace.positions) if LIVE_ROWS and trace.positions is not None else None
    for step in trace.steps:
        if step.kernel is not None:
            step.kernel(live)
            continue
        fresh = step.fn(*step.args, **step.kwargs)
        if step.out is not None:
            _assign(step.out, fresh)


def release_trace(mesh_device: MeshDevice, trace_id: int) -> None:
    if mesh_device.traces.pop(trace_id, None) is None:
        raise TTError("release_trace", f"no captured trace {trace_id}")


def forbid_host_read(op: str, device: MeshDevice | None) -> None:
    if device is not None and device.capturing is not None:
        raise TTError(op, "reading a device tensor back to host is not allowed during trace capture")
