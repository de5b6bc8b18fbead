"""The attention softmaxes: ttnn.scale_mask_softmax, ttnn.scale_mask_softmax_in_place and ttnn.softmax_in_place.

Each computes softmax(input * scale + mask) over the last dim (scale and mask optional), in fp32 with the result
rounded once into the input's dtype. The mask is either a padding mask of one row per
batch ([batch, 1, 1, W], broadcast over heads and rows) or, with is_causal_mask, one row per input row; other mask
shapes are refused as not implemented. The in-place forms write the input's own buffer and hand it back; with a
SoftmaxShardedMultiCoreProgramConfig every core normalises the rows of its shard (the values do not depend on the
split). The argument checks are those of ttnn 0.81.1's SoftmaxDeviceOperation, in its order.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .compute import f32, output, per_device, per_device_write
from .errors import TTError
from .program_configs import SoftmaxDefaultProgramConfig, SoftmaxShardedMultiCoreProgramConfig
from .rules import rules
from .tensor import Tensor, require_device, store_as
from .trace import DuringCapture, device_op
from .types import TILE_SIZE, DataType, Layout

_DTYPES = (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B)

R = rules("scale_mask_softmax_in_place", "normalization/softmax/device/softmax_device_operation.cpp")
SMS_TILED = R("Inputs to softmax must be tilized", "sms-in-place/row-major", "sms-in-place/ok")
SMS_DTYPE = R("Input tensor must be FLOAT32, BFLOAT16, or BFLOAT8_B, got: {}", "sms-in-place/int32",
              "sms-in-place/ok")
SMS_MASK_DIMS = R("Non-sharded mask intermediate dimensions must be 1, got {} at dimension {}. This path requires "
                  "head-uniform masks; apply a per-head bias with a separate ttnn::add before ttnn::softmax.",
                  "sms-in-place/mask-heads", "sms-in-place/ok")
SMS_MASK_BATCH = R("Input and mask batch sizes must match, got {} for input and {} for mask",
                   "sms-in-place/mask-batch", "sms-in-place/ok")
SMS_SUBBLOCK = R("block_w must be divisible by subblock_w.", "sms-in-place/sharded-subblock-w",
                 "sms-in-place/sharded-ok")
SMS_SHARD_WIDTH = R("shard width must equal to input tensor shape[3]!", "sms-in-place/sharded-block-w",
                    "sms-in-place/sharded-ok")
SMS_NUM_SHARDS = R("number of shards must equal to number of cores. M = {}, K = {}, block_w = {}, block_h = {}, "
                   "num_cores = {}", "sms-in-place/sharded-block-h", "sms-in-place/sharded-grid",
                   "sms-in-place/sharded-ok")
SMS_SCALE_NEEDS_MASK = R("Scale value must not be set when mask is not present", "sms-in-place/scale-no-mask",
                         "sms-in-place/ok")
SMS_DEVICE_GRID = R("program_config grid ({}x{}) must be contained within device grid ({}x{})",
                    "sms-in-place/sharded-grid-9x1", "sms-in-place/sharded-ok",
                    source="normalization/shard_spec_validation.cpp")
SMS_GRID_FITS = R("shard_spec.grid size {}x{} does not fit within program_config grid {}x{}",
                  "sms-in-place/sharded-grid-fit", "softmax-in-place/sharded-grid-fit", "sms-in-place/sharded-ok",
                  source="normalization/shard_spec_validation.cpp")
# scale_mask_softmax (not in place) checks the batch before it builds the device operation.
SM = rules("scale_mask_softmax", "normalization/softmax/softmax.cpp")
SM_MASK_BATCH = SM("Input and mask batch sizes must match, got input: {} vs mask: {}", "scale-mask-softmax/mask-batch",
                   "scale-mask-softmax/ok")


def _require(op: str, rule: Any, condition: bool, *values: Any) -> None:
    """A SoftmaxDeviceOperation check, raised under the name of the op that was called (one device operation
    serves the three entry points; the corpus records them through scale_mask_softmax_in_place)."""
    if not condition:
        raise TTError(op, rule.message.format(*values) if values else rule.message)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "Shape([" + ", ".join(str(d) for d in shape) + "])"


def _validate(op: str, x: Tensor, scale: float | None, mask: Tensor | None, program_config: Any,
              is_causal_mask: bool) -> None:
    require_device(op, x, mask)
    _require(op, SMS_TILED, x.layout == Layout.TILE)
    _require(op, SMS_DTYPE, x.dtype in _DTYPES, f"DataType::{x.dtype.name}")
    if mask is None:
        _require(op, SMS_SCALE_NEEDS_MASK, scale is None)
        return
    if mask.is_sharded() or mask.layout != Layout.TILE:
        raise TTError(op, "the simulator implements a non-sharded TILE mask only")
    xp, mp = x.padded_shape, mask.padded_shape
    rank = len(xp)
    bad = [i for i in range(1, min(rank, len(mp)) - 2) if mp[i] != 1]
    _require(op, SMS_MASK_DIMS, not bad, mp[bad[0]] if bad else 0, bad[0] if bad else 0)
    if isinstance(program_config, SoftmaxShardedMultiCoreProgramConfig):
        pc = program_config
        m, k = math.prod(xp) // xp[-1], xp[-1]
        _require(op, SMS_SUBBLOCK, pc.block_w % pc.subblock_w == 0)
        _require(op, SMS_SHARD_WIDTH, pc.block_w * TILE_SIZE == xp[3])
        cores = pc.compute_with_storage_grid_size.x * pc.compute_with_storage_grid_size.y
        _require(op, SMS_NUM_SHARDS, m * k // (pc.block_w * pc.block_h * TILE_SIZE * TILE_SIZE) == cores,
                 m, k, pc.block_w, pc.block_h, cores)
    else:
        _require(op, SMS_MASK_BATCH, xp[0] == mp[0], _shape_text(xp), _shape_text(mp))
    _check_mask_shape(op, x, mask, is_causal_mask)


def _check_shard_grid(op: str, x: Tensor, program_config: Any) -> None:
    """The sharded program's placement checks (normalization/shard_spec_validation.cpp), after validate."""
    if not isinstance(program_config, SoftmaxShardedMultiCoreProgramConfig):
        return
    if not x.is_sharded():
        raise TTError(op, "the simulator implements SoftmaxShardedMultiCoreProgramConfig on a sharded input only")
    gx, gy = program_config.compute_with_storage_grid_size.x, program_config.compute_with_storage_grid_size.y
    dx, dy = x.device_or_none.chip.grid
    _require(op, SMS_DEVICE_GRID, gx <= dx and gy <= dy, gx, gy, dx, dy)
    box = x.memory_config().shard_spec.grid.bounding_box().grid_size()
    _require(op, SMS_GRID_FITS, box.x <= gx and box.y <= gy, box.x, box.y, gx, gy)


def _check_mask_shape(op: str, x: Tensor, mask: Tensor, is_causal_mask: bool) -> None:
    if is_causal_mask and tuple(mask.shape[-2:]) != tuple(x.shape[-2:]):
        raise TTError(op, "the simulator implements a causal mask with one row per input row only")
    if not is_causal_mask and (mask.shape[-1] != x.shape[-1] or mask.shape[-2] != 1):
        raise TTError(op, "the simulator implements a non-causal mask of one row as wide as the input only")


def _fn(scale: float | None, causal: bool) -> Any:
    def compute(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        y = f32(x)
        if scale is not None:
            y = y * float(scale)
        if mask is not None:
            m = f32(mask)
            y = y + m  # [batch, 1, 1, W] broadcast over heads and rows, or (causal) one row per input row
        return torch.softmax(y, dim=-1)

    return compute


@device_op(kernel_replay=True)
def scale_mask_softmax(
    input_tensor: Tensor,
    scale: float | None = None,
    mask: Tensor | None = None,
    *,
    memory_config: Any = None,
    is_causal_mask: bool = False,
    compute_kernel_config: Any = None,
    numeric_stable: bool = False,
) -> Tensor:
    """softmax(input * scale + mask) into a new TILE tensor (memory_config, else the input's)."""
    op = "scale_mask_softmax"
    if mask is not None and input_tensor.device_or_none is not None and mask.device_or_none is not None:
        SM_MASK_BATCH.require(input_tensor.shape[0] == mask.shape[0], input_tensor.shape[0], mask.shape[0])
    _validate(op, input_tensor, scale, mask, SoftmaxDefaultProgramConfig(), is_causal_mask)
    out = output(input_tensor, per_device(_fn(scale, is_causal_mask), input_tensor, mask), None, Layout.TILE,
                 memory_config or input_tensor.memory_config())
    return out


def _in_place(op: str, x: Tensor, scale: float | None, mask: Tensor | None, program_config: Any,
              is_causal_mask: bool) -> Tensor:
    _validate(op, x, scale, mask, program_config or SoftmaxDefaultProgramConfig(), is_causal_mask)
    _check_shard_grid(op, x, program_config)
    compute, dtype = _fn(scale, is_causal_mask), x.dtype

    def write(buf: torch.Tensor, m: torch.Tensor | None) -> None:
        buf.copy_(store_as(compute(buf, m), dtype))

    per_device_write(write, x, mask)
    return x


@device_op(DuringCapture.SKIP, kernel_replay=True)
def scale_mask_softmax_in_place(
    input_tensor: Tensor,
    scale: float | None = None,
    mask: Tensor | None = None,
    *,
    program_config: Any = None,
    is_causal_mask: bool = False,
    compute_kernel_config: Any = None,
    numeric_stable: bool = False,
) -> Tensor:
    """softmax(input * scale + mask) written over the input, which is returned."""
    return _in_place("scale_mask_softmax_in_place", input_tensor, scale, mask, program_config, is_causal_mask)


@device_op(DuringCapture.SKIP, kernel_replay=True)
def softmax_in_place(
    input_tensor: Tensor,
    dim: int = -1,
    *,
    program_config: Any = None,
    compute_kernel_config: Any = None,
    numeric_stable: bool = False,
) -> Tensor:
    """softmax over the last dim written over the input, which is returned."""
    rank = len(input_tensor.shape)
    if dim % max(rank, 1) != rank - 1:
        raise TTError("softmax_in_place", "the simulator implements the last dim only")
    return _in_place("softmax_in_place", input_tensor, None, None, program_config, False)
