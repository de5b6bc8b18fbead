"""matmul and linear: a @ b (+ bias, + activation), weights stored transposed as [.., in, out] in TILE layout."""

from __future__ import annotations

from typing import Any

import torch

from .compute import BF16_STREAM_ROWS, bf16_gemm_is_native, derived, f32, f32_cached, output, per_device, unary
from .errors import TTError, refuse_options
from .memory import MemoryConfig
from .tensor import Tensor, require_device, require_layout
from .trace import device_op
from .types import DataType, Layout


def _as_2d(w: torch.Tensor) -> torch.Tensor:
    return w.reshape(w.shape[-2:])


def _as_2d_nk(w: torch.Tensor) -> torch.Tensor:
    """The [k, n] matrix as a view of an [n, k] row-major copy (a copy only when w is not already held so)."""
    w2 = _as_2d(w)
    return w2 if w2.stride(-2) == 1 else w2.t().contiguous().t()


def _matmul(op: str, a: Tensor, b: Tensor, bias: Tensor | None, transpose_a: bool, transpose_b: bool,
            dtype: DataType | None, activation: Any, memory_config: MemoryConfig | None) -> Tensor:
    require_device(op, a, b, bias)
    require_layout(op, "input_tensor_a", a, Layout.TILE)
    require_layout(op, "input_tensor_b", b, Layout.TILE)
    ka = a.shape[-2] if transpose_a else a.shape[-1]
    kb = b.shape[-1] if transpose_b else b.shape[-2]
    if ka != kb:
        raise TTError(op, f"inner dims differ: a {tuple(a.shape)} vs b {tuple(b.shape)} "
                          f"(transpose_a={transpose_a}, transpose_b={transpose_b})")
    out_dtype = dtype or a.dtype
    act = unary(op, activation) if activation is not None else None

    def compute(x: torch.Tensor, w: torch.Tensor, bb: torch.Tensor | None) -> torch.Tensor:
        if transpose_a:
            x = x.transpose(-1, -2)
        if transpose_b:
            w = w.transpose(-1, -2)
        # The matrix engine multiplies bf16 operands exactly, accumulates in fp32 and rounds once. torch's bf16 GEMM
        # does the same; where the CPU lacks bf16 hardware an fp32 GEMM on the same values is faster and equal.
        rows = x.numel() // x.shape[-1]
        native = x.dtype == w.dtype == torch.bfloat16 and out_dtype != DataType.FLOAT32 and bf16_gemm_is_native(rows)
        if not native:
            x, w = f32(x), f32_cached(w)
        if w.dim() > 2 and w.shape[:-2].numel() == 1:
            # A weight shared by every row: one [rows, k] x [k, n] GEMM, which torch runs faster than a batched one.
            # A bf16 weight stream (a row or two) reads the weight held [n, k]: torch's bf16 GEMV is slow on [k, n].
            stream = native and rows <= BF16_STREAM_ROWS
            w = derived(w, "2d_nk", _as_2d_nk) if stream else derived(w, "2d", _as_2d)
        y = torch.matmul(x, w)
        if bb is not None:
            y = y.float() + bb.float().reshape(-1)[: y.shape[-1]]
        return act(y.float()) if act is not None else y

    return output(a, per_device(compute, a, b, bias), out_dtype, Layout.TILE, memory_config)


@device_op(kernel_replay=True)
def matmul(
    input_tensor_a: Tensor,
    input_tensor_b: Tensor,
    *,
    transpose_a: bool = False,
    transpose_b: bool = False,
    memory_config: MemoryConfig | None = None,
    dtype: DataType | None = None,
    program_config: Any = None,
    activation: Any = None,
    compute_kernel_config: Any = None,
    core_grid: Any = None,
    output_tile: Any = None,
    optional_output_tensor: Tensor | None = None,
    global_cb: Any = None,
    sub_device_id: Any = None,
    prefetcher_pipes: Any = None,
) -> Tensor:
    refuse_options("matmul", optional_output_tensor=optional_output_tensor, global_cb=global_cb)
    return _matmul("matmul", input_tensor_a, input_tensor_b, None, transpose_a, transpose_b, dtype, activation,
                   memory_config)


@device_op(kernel_replay=True)
def linear(
    input_tensor_a: Tensor,
    input_tensor_b: Tensor,
    *,
    bias: Tensor | None = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
    memory_config: MemoryConfig | None = None,
    dtype: DataType | None = None,
    program_config: Any = None,
    activation: Any = None,
    compute_kernel_config: Any = None,
    core_grid: Any = None,
    output_tile: Any = None,
    optional_output_tensor: Tensor | None = None,
    global_cb: Any = None,
    sub_device_id: Any = None,
    prefetcher_pipes: Any = None,
    in0_column_offset: Any = None,
) -> Tensor:
    refuse_options("linear", optional_output_tensor=optional_output_tensor, global_cb=global_cb,
                   in0_column_offset=in0_column_offset)
    return _matmul("linear", input_tensor_a, input_tensor_b, bias, transpose_a, transpose_b, dtype, activation,
                   memory_config)
