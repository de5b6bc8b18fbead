"""The distributed RMSNorm pair (tt_transformers' tt_distributed_rmsnorm), for a residual stream whose columns are
split over the chips of a mesh:

- rms_norm_pre_all_gather(x): each chip's per-row sum of x^2 over its own columns, as one tile column ([.., rows, 32];
  the sum in column 0, zeros in the rest, as the device's row reduction leaves it), in `dtype` (bf16 by default);
- the caller all_gathers these along the last dim (one tile column per chip);
- rms_norm_post_all_gather(x, stats): x * rsqrt(sum of the gathered stats / (width * chips) + eps) * weight (+ bias),
  where chips = the stats' padded width / 32 and width = x's padded width (the kernel's reduce scaler).

Interleaved inputs only: a sharded input with a sharded program config runs ttnn's sharded LayerNorm program in
0.81.1, which the simulator does not model (refused, naming it). Rules: ttnn/cpp/ttnn/operations/normalization/
layernorm_distributed/device/layernorm_{pre,post}_all_gather_device_operation.cpp validate_on_program_cache_miss, in
the order the device checks them, with the fp32 kernel-config checks that 0.81.1 adds (the post one from its program
factory, so after every validation rule).
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, f32_cached, output, per_device
from .errors import TTError
from .memory import MemoryConfig
from .program_configs import LayerNormDefaultProgramConfig, LayerNormShardedMultiCoreProgramConfig
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

_SRC = "normalization/layernorm_distributed/device/"
_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32)
_PARAM_DTYPES = (DataType.BFLOAT16, DataType.FLOAT32)
_DEVICE_OP = "ttnn/api/ttnn/device_operation.hpp"

P = rules("rms_norm_pre_all_gather", _SRC + "layernorm_pre_all_gather_device_operation.cpp")
PRE_RANK = P("ShapeBase[] index out of range. 3 not in [-4, {})", "rms-norm-pre/rank3", "rms-norm-pre/rank2",
             "rms-norm-pre/ok", source="tt_metal/common/shape_base.cpp")
PRE_RESIDUAL_TILE = P("Residual tensor must have TILE layout, got: {}", "rms-norm-pre/residual-row-major",
                      "rms-norm-pre/residual")
PRE_RESIDUAL_SHAPE = P("Input and residual logical and padded shapes must match, got input: logical={} padded={} vs "
                       "residual: logical={} padded={}", "rms-norm-pre/residual-other-shape", "rms-norm-pre/residual")
PRE_TILE = P("Only tilized inputs supported.", "rms-norm-pre/row-major", "rms-norm-pre/fp32-row-major",
             "rms-norm-pre/ok")
PRE_SHARDED = P("std::get: wrong index for variant", "rms-norm-pre/width-sharded", "rms-norm-pre/l1",
                source="normalization/layernorm_distributed/layernorm_pre_all_gather.cpp")
PRE_DTYPE = P("Input data format not supported.", "rms-norm-pre/int32", "rms-norm-pre/uint32", "rms-norm-pre/bfp4",
              "rms-norm-pre/bfp8")
PRE_FP32_ACC = P("rms_norm_pre_all_gather with Float32 input requires fp32_dest_acc_en=true in the compute kernel "
                 "config; otherwise precision is silently lost in the unpacker format conversion.",
                 "rms-norm-pre/fp32", "rms-norm-pre/fp32-kernel-no-fp32-acc", "rms-norm-pre/fp32-kernel")
PRE_WELFORD = P("RMSNorm with Welford's algorithm not supported in pre_all_gather", "rms-norm-pre/welford",
                "rms-norm-pre/default-config")

Q = rules("rms_norm_post_all_gather", _SRC + "layernorm_post_all_gather_device_operation.cpp")
ON_DEVICE = Q("Device Operations expect device tensors as inputs", "rms-norm-post/stats-host",
              "rms-norm-post/weight-rm-host", "rms-norm-post/model", source=_DEVICE_OP)
POST_SHARDED = Q("std::get: wrong index for variant", "rms-norm-post/width-sharded", "rms-norm-post/input-l1",
                 source="normalization/layernorm_distributed/layernorm_post_all_gather.cpp")
INPUT_TILE = Q("Input tensor must have TILE layout, got: {}", "rms-norm-post/input-row-major",
               "rms-norm-post/input-row-major-stats-int32", "rms-norm-post/ok")
INPUT_DTYPE = Q("Input tensor must be BFLOAT16, BFLOAT8_B, or FLOAT32, got: {}", "rms-norm-post/input-int32",
                "rms-norm-post/input-bfp8")
STATS_TILE = Q("Stats tensor must have TILE layout, got: {}", "rms-norm-post/stats-row-major",
               "rms-norm-post/input-fp32-stats-row-major", "rms-norm-post/ok")
STATS_DTYPE = Q("Stats tensor must be BFLOAT16, BFLOAT8_B, or FLOAT32, got: {}", "rms-norm-post/stats-int32",
                "rms-norm-post/stats-bfp8")
STATS_WIDTH = Q("Stats inner dimension must be divisible by tile_width ({}), got: {}",
                unreachable="a TILE tensor's padded width is a whole number of tiles")
STATS_BATCH = Q("Stats and input batch sizes must match, got stats: {} vs input: {}", "rms-norm-post/stats-batch",
                "rms-norm-post/ok")
STATS_DIM1 = Q("Stats and input dim1 must match, got stats: {} vs input: {}", "rms-norm-post/stats-dim1",
               "rms-norm-post/ok")
STATS_ROWS = Q("Stats and input dim2 must match, got stats: {} vs input: {}", "rms-norm-post/stats-fewer-rows",
               "rms-norm-post/ok")
GAMMA_DTYPE = Q("Gamma tensor must be BFLOAT16 or FLOAT32, got: {}", "rms-norm-post/weight-rm-uint32",
                "rms-norm-post/weight-tile-bfp8", "rms-norm-post/weight-rm-fp32")
GAMMA_WIDTH = Q("Input and gamma last logical and padded dims must match, got input: logical[-1]={} padded[-1]={} vs "
                "gamma: logical[-1]={} padded[-1]={}", "rms-norm-post/weight-tile-narrow",
                "rms-norm-post/weight-tile")
GAMMA_HEIGHT = Q("Gamma tensor height must equal tile height ({}), got: {}", "rms-norm-post/weight-tile-64-rows",
                 "rms-norm-post/weight-tile-32-rows")
GAMMA_RM_SHAPE = Q("Gamma tensor dimensions must align with input tensor. Got gamma padded shape: {}, physical "
                   "volume: {}, input padded shape: {}, tile_width: {}", "rms-norm-post/weight-rm-short",
                   "rms-norm-post/weight-rm-flat", "rms-norm-post/model")
BETA_DTYPE = Q("Beta tensor must be BFLOAT16 or FLOAT32, got: {}", "rms-norm-post/bias-rm-uint32",
               "rms-norm-post/bias-tile-bfp8", "rms-norm-post/bias-rm")
BETA_WIDTH = Q("Input and beta last logical and padded dims must match, got input: logical[-1]={} padded[-1]={} vs "
               "beta: logical[-1]={} padded[-1]={}", "rms-norm-post/bias-tile-narrow", "rms-norm-post/bias-rm")
BETA_HEIGHT = Q("Beta tensor height must equal tile height ({}), got: {}", "rms-norm-post/bias-tile-64-rows",
                "rms-norm-post/bias-tile-32-rows")
BETA_RM_SHAPE = Q("Beta tensor dimensions must align with input tensor. Got beta padded shape: {}, physical volume: "
                  "{}, input padded shape: {}, tile_width: {}", "rms-norm-post/bias-rm-short", "rms-norm-post/bias-rm")
POST_WELFORD = Q("RMS norm is not compatible with Welford algorithm. Please disable use_welford flag.",
                 "rms-norm-post/welford", "rms-norm-post/ok")
POST_FP32_ACC = Q("FLOAT32 input/stats require fp32_dest_acc_en=true in the compute kernel config.",
                  "rms-norm-post/input-fp32", "rms-norm-post/stats-fp32", "rms-norm-post/input-fp32-kernel-no-fp32-acc",
                  "rms-norm-post/input-fp32-kernel", source=_SRC + "layernorm_post_all_gather_program_factory.cpp")


def _volume(t: Tensor) -> int:
    n = 1
    for d in t.padded_shape:
        n *= d
    return n


def _fp32_acc(kernel: Any) -> bool:
    # ttnn's default kernel config for these ops leaves fp32_dest_acc_en off.
    return bool(getattr(kernel, "fp32_dest_acc_en", False)) if kernel is not None else False


def _not_simulated_sharded(op: str, x: Tensor, program_config: Any) -> None:
    """A sharded input: with no (or the default) program config the real op fails looking for the sharded one; with
    a sharded config 0.81.1 runs its sharded LayerNorm program, which is not simulated."""
    if not x.is_sharded():
        return
    if isinstance(program_config, LayerNormShardedMultiCoreProgramConfig):
        raise TTError(op, "a sharded input (ttnn's sharded LayerNorm program for the distributed stages) is not "
                          "supported by the simulator; pass an interleaved input")
    (PRE_SHARDED if op == "rms_norm_pre_all_gather" else POST_SHARDED).require(False)


def _welford(program_config: Any) -> bool:
    return isinstance(program_config, LayerNormDefaultProgramConfig) and program_config.use_welford


@device_op(kernel_replay=True)
def rms_norm_pre_all_gather(
    input_tensor: Tensor,
    *,
    dtype: DataType = DataType.BFLOAT16,
    residual_input_tensor: Tensor | None = None,
    compute_kernel_config: Any = None,
    program_config: Any = None,
    memory_config: MemoryConfig | None = None,
    use_2d_core_grid: bool | None = None,
    fast_and_approximate_mode: bool = False,
) -> Tensor:
    """Per row, the sum of (x + residual)^2 over this chip's columns, in column 0 of a [.., rows, 32] tile column."""
    op = "rms_norm_pre_all_gather"
    x, r = input_tensor, residual_input_tensor
    require_device(op, x, r)
    rank = len(x.shape)
    PRE_RANK.require(rank >= 4, rank)
    if rank > 4:  # 0.81.1 sets the output's dim 3 (not the last) to one tile: a shape no caller wants
        raise TTError(op, f"a rank-{rank} input is not supported by the simulator (the real op returns a malformed "
                          f"stats shape for ranks above 4); reshape it to 4-D")
    if r is not None:  # checked before the op pads its inputs (layernorm_pre_all_gather's launch)
        PRE_RESIDUAL_TILE.require(r.layout == Layout.TILE, f"Layout::{r.layout.name}")
        PRE_RESIDUAL_SHAPE.require(r.shape == x.shape and r.padded_shape == x.padded_shape, x.shape, x.padded_shape,
                                   r.shape, r.padded_shape)
    PRE_TILE.require(x.layout == Layout.TILE)
    _not_simulated_sharded(op, x, program_config)
    PRE_DTYPE.require(x.dtype in _DTYPES)
    PRE_FP32_ACC.require(x.dtype != DataType.FLOAT32 or _fp32_acc(compute_kernel_config))
    PRE_WELFORD.require(not _welford(program_config))

    def stats(t: torch.Tensor, res: torch.Tensor | None) -> torch.Tensor:
        v = f32(t) if res is None else f32(t) + f32(res)
        out = torch.zeros(*v.shape[:-1], TILE_SIZE, dtype=torch.float32)
        out[..., 0] = (v * v).sum(dim=-1)
        return out

    return output(x, per_device(stats, x, r), dtype, Layout.TILE, memory_config or x.memory_config())


def _check_param(x: Tensor, t: Tensor, dtype_rule: Any, width: Any, height: Any, rm_shape: Any) -> None:
    dtype_rule.require(t.dtype in _PARAM_DTYPES, f"DataType::{t.dtype.name}")
    xp, tp = x.padded_shape, t.padded_shape
    if t.layout == Layout.TILE:
        width.require(x.shape[-1] == t.shape[-1] and xp[-1] == tp[-1], x.shape[-1], xp[-1], t.shape[-1], tp[-1])
        rows = tp[-2] if len(tp) >= 2 else TILE_SIZE
        height.require(rows == TILE_SIZE, TILE_SIZE, rows)
        return
    rm_shape.require(tp[-1] == TILE_SIZE and _volume(t) // TILE_SIZE == xp[-1] // TILE_SIZE, tp[-1], _volume(t),
                     xp[-1], TILE_SIZE)


@device_op(kernel_replay=True)
def rms_norm_post_all_gather(
    input_tensor: Tensor,
    stats: Tensor,
    *,
    epsilon: float = 1e-12,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    memory_config: MemoryConfig | None = None,
    compute_kernel_config: Any = None,
    program_config: Any = None,
    dtype: DataType | None = None,
    use_2d_core_grid: bool | None = None,
) -> Tensor:
    """x * rsqrt(sum(stats) / (x's padded width * stats' tile columns) + eps) * weight (+ bias), per row."""
    op = "rms_norm_post_all_gather"
    x = input_tensor
    ON_DEVICE.require(all(t is None or t.device_or_none is not None for t in (x, stats, weight, bias)))
    require_device(op, x, stats, weight, bias)
    _not_simulated_sharded(op, x, program_config)
    INPUT_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    INPUT_DTYPE.require(x.dtype in _DTYPES, f"DataType::{x.dtype.name}")
    STATS_TILE.require(stats.layout == Layout.TILE, f"Layout::{stats.layout.name}")
    STATS_DTYPE.require(stats.dtype in _DTYPES, f"DataType::{stats.dtype.name}")
    sp, xp = stats.padded_shape, x.padded_shape
    STATS_WIDTH.require(sp[-1] % TILE_SIZE == 0, TILE_SIZE, sp[-1])
    STATS_BATCH.require(sp[0] == xp[0], sp[0], xp[0])
    STATS_DIM1.require(sp[1] == xp[1], sp[1], xp[1])
    STATS_ROWS.require(sp[2] == xp[2], sp[2], xp[2])
    if weight is not None:
        _check_param(x, weight, GAMMA_DTYPE, GAMMA_WIDTH, GAMMA_HEIGHT, GAMMA_RM_SHAPE)
    if bias is not None:
        _check_param(x, bias, BETA_DTYPE, BETA_WIDTH, BETA_HEIGHT, BETA_RM_SHAPE)
    POST_WELFORD.require(not _welford(program_config))
    POST_FP32_ACC.require(DataType.FLOAT32 not in (x.dtype, stats.dtype) or _fp32_acc(compute_kernel_config))

    width, chips = xp[-1], sp[-1] // TILE_SIZE
    dim = x.shape[-1]
    tile_w, tile_b = (t is not None and t.layout == Layout.TILE for t in (weight, bias))

    def values(t: torch.Tensor, tiled: bool) -> torch.Tensor:
        # A TILE parameter holds its values in row 0; a row-major one in its 32-wide sticks, in order.
        return (t.reshape(-1, t.shape[-1])[0] if tiled else t.reshape(-1))[:dim]

    def norm(t: torch.Tensor, s: torch.Tensor, w: Any, b: Any) -> torch.Tensor:
        mean_sq = f32(s).sum(dim=-1, keepdim=True) / (width * chips)
        y = f32(t) * torch.rsqrt(mean_sq + epsilon)
        if w is not None:
            y = y * values(f32_cached(w), tile_w)
        if b is not None:
            y = y + values(f32_cached(b), tile_b)
        return y

    return output(x, per_device(norm, x, stats, weight, bias), dtype or x.dtype, Layout.TILE,
                  memory_config or x.memory_config())
