"""rms_norm: x * rsqrt(mean(x^2) + eps) * weight (+ bias), with an optional residual added first.

Interleaved inputs run the multi-core program (LayerNormDefaultProgramConfig); width- or block-sharded inputs the
sharded one (LayerNormShardedMultiCoreProgramConfig, derived from the input's shard spec when none is given), whose
output stays sharded: the requested spec, else the input's.
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, f32_cached, output, per_device
from .memory import MemoryConfig, ShardOrientation, TensorMemoryLayout
from .placement import check_placement
from .program_configs import LayerNormDefaultProgramConfig, LayerNormShardedMultiCoreProgramConfig
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

_IL, _HS = TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED
R = rules("rms_norm", "normalization/layernorm/device/layernorm_device_operation.cpp")
ROW_MAJOR = R("ttnn::rms_norm does not support ROW_MAJOR input tensors. Use TILE layout.", "rms-norm/input-row-major",
              "rms-norm/row-major-int32", "rms-norm/ok", source="normalization/rmsnorm/rmsnorm.cpp")
ON_DEVICE = R("Device Operations expect device tensors as inputs", "rms-norm/weight-host", "rms-norm/weight-rm",
              source="ttnn/api/ttnn/device_operation.hpp")
DTYPE = R("Input tensor must be FLOAT32, BFLOAT16, or BFLOAT8_B, got: {}", "rms-norm/input-int32",
          "rms-norm/input-bfp4", "rms-norm/int32-weight-narrow", "rms-norm/sharded-int32", "rms-norm/input-bfp8")
RESIDUAL_TILE = R("Residual tensor must have TILE layout, got: {}", "rms-norm/residual-row-major",
                  "rms-norm/weight-narrow-residual-row-major", "rms-norm/residual-row-major-taller",
                  "rms-norm/residual")
RESIDUAL_SHAPE = R("Input and residual logical and padded shapes must match, got input: logical={} padded={} vs "
                   "residual: logical={} padded={}", "rms-norm/residual-taller", "rms-norm/residual-30-rows",
                   "rms-norm/residual-bfp8")
GAMMA_WIDTH = R("Input and gamma padded widths must match and gamma logical width must be >= input logical width "
                "(otherwise valid input columns would be multiplied by gamma padding). Got input: logical[-1]={} "
                "padded[-1]={} vs gamma: logical[-1]={} padded[-1]={}", "rms-norm/weight-tile-narrow",
                "rms-norm/weight-tile-wider", "rms-norm/weight-tile-short-90", "rms-norm/weight-tile-64x64",
                "rms-norm/welford-weight-narrow", "rms-norm/weight-narrow-bias-rm",
                "rms-norm/sharded-weight-tile-narrow", "rms-norm/weight-tile-padded-120")
GAMMA_HEIGHT = R("Gamma tensor height must equal tile height ({}), got: {}", "rms-norm/weight-tile-64-rows",
                 "rms-norm/weight-tile-32-rows")
GAMMA_RM_SHAPE = R("Gamma's last padded dim needs to equal tile width and gamma's volume needs to align with last "
                   "padded dim of input. Error with gamma.value().padded_shape(): {}, tile_width: {}, "
                   "gamma.value().physical_volume(): {}, a.padded_shape(): {}", "rms-norm/weight-rm-flat",
                   "rms-norm/weight-rm-short", "rms-norm/weight-rm-8x16", "rms-norm/weight-rm-flat-uint32",
                   "rms-norm/weight-rm")
GAMMA_RM_DTYPE = R("Gamma tensor must be FLOAT32 or BFLOAT16, got: {}", "rms-norm/weight-rm-uint32",
                   "rms-norm/weight-rm-int32", "rms-norm/weight-rm-fp32")
SAME_LAYOUT = R("Gamma and beta must have the same layout!", "rms-norm/weight-tile-bias-rm", "rms-norm/bias-tile")
BETA_WIDTH = R("Input and beta padded widths must match and beta logical width must be >= input logical width "
               "(otherwise valid input columns would be offset by beta padding). Got input: logical[-1]={} "
               "padded[-1]={} vs beta: logical[-1]={} padded[-1]={}", "rms-norm/bias-tile-narrow",
               "rms-norm/bias-tile")
BETA_HEIGHT = R("Beta tensor height must equal tile height ({}), got: {}", "rms-norm/bias-tile-64-rows",
                "rms-norm/bias-tile")
BETA_RM_SHAPE = R("Beta tensor dimensions must align with input tensor. Got beta padded shape: {}, physical volume: "
                  "{}, input padded shape: {}, tile_width: {}", "rms-norm/bias-rm-short", "rms-norm/bias-only-rm")
BETA_RM_DTYPE = R("Beta tensor must be FLOAT32 or BFLOAT16, got: {}", "rms-norm/bias-rm-uint32",
                  "rms-norm/bias-only-rm")
HEIGHT_SHARDED = R("Height sharded inputs are not supported.", "rms-norm/height-sharded", "rms-norm/sharded-ok")
SHARDED_OUT = R("Sharded inputs require sharded outputs.", "rms-norm/sharded-to-dram", "rms-norm/sharded-to-l1",
                "rms-norm/sharded-grid-9x1-to-dram", "rms-norm/sharded-welford-to-dram",
                "rms-norm/sharded-to-dram-residual-dram", "rms-norm/sharded-to-dram-block-w-2",
                "rms-norm/sharded-inplace-to-dram", "rms-norm/sharded-to-width-no-spec")
RESIDUAL_SHARDED = R("residual tensor b should be sharded if input a is sharded", "rms-norm/sharded-residual-dram",
                     "rms-norm/sharded-grid-4x1-residual-dram", "rms-norm/sharded-residual-dram-block-w-2",
                     "rms-norm/sharded-residual")
RESIDUAL_SPEC = R("Both a and b should have the same shard spec", "rms-norm/sharded-residual-other-spec",
                  "rms-norm/sharded-residual-other-grid", "rms-norm/sharded-welford-residual-other-spec",
                  "rms-norm/sharded-residual-bfp8")
RESIDUAL_MC = R("Both a and b should have the same memory config", "rms-norm/sharded-residual-dram-sharded",
                "rms-norm/sharded-residual")
# The program config must match the input's placement; 0.81.1 dereferences the wrong one without a check.
SHARDED_CONFIG_INTERLEAVED = R("bad optional access", "rms-norm/interleaved-sharded-config", "rms-norm/ok")
DEFAULT_CONFIG_SHARDED = R("std::get: wrong index for variant", "rms-norm/sharded-default-config",
                           "rms-norm/sharded-no-config")
DEVICE_GRID = R("program_config grid ({}x{}) must be contained within device grid ({}x{})",
                "rms-norm/sharded-grid-9x1", "rms-norm/sharded-grid-9x1-to-dram-width",
                "rms-norm/sharded-grid-9x1-welford", "rms-norm/sharded-dram-input", "rms-norm/sharded-grid-8x8",
                source="normalization/shard_spec_validation.cpp")
GRID_FITS = R("shard_spec.grid size {}x{} does not fit within program_config grid {}x{}", "rms-norm/sharded-grid-4x1",
              "rms-norm/sharded-grid-4x1-to-dram-width", "rms-norm/sharded-grid-4x1-to-block",
              "rms-norm/sharded-grid-4x1-welford", "rms-norm/sharded-grid-4x1-subblock-3",
              "rms-norm/sharded-grid-4x1-block-w-2", "rms-norm/sharded-18-cores-grid-8x2",
              "rms-norm/sharded-offset-grid", source="normalization/shard_spec_validation.cpp")
SHARD_COUNT = R("Shard layout requires {}x{} = {} shards but shard grid has {} cores",
                "rms-norm/block-sharded-too-many-rows", "rms-norm/block-sharded-too-many-rows-and-cols",
                "rms-norm/block-sharded", source="normalization/shard_spec_validation.cpp")
PADDED_HEIGHT = R("Shard-padded height ({}x{} = {}) does not align with tensor height {}: trailing pad {} must be less "
                  "than one shard height ({})", source="normalization/shard_spec_validation.cpp",
                  unreachable="a width-sharded shard is the tensor's whole height, and a block-sharded input has as "
                              "many shard rows as the tensor needs (shard count rule and tensor spec)")
PADDED_WIDTH = R("Shard-padded width ({}x{} = {}) does not align with tensor width {}: trailing pad {} must be less "
                 "than one shard width ({})", "rms-norm/sharded-shard-padded-width", "rms-norm/sharded-uneven-width",
                 source="normalization/shard_spec_validation.cpp")
WELFORD = R("Welford's algorithm is not supported for RMSNorm", "rms-norm/welford", "rms-norm/sharded-welford",
            "rms-norm/sharded-welford-to-dram-width", "rms-norm/sharded-welford-block-w-2",
            "rms-norm/legacy-reduction")
INPLACE_SHARDED = R("Output memory config must be sharded for inplace operation",
                    unreachable="a sharded config only runs on a sharded input, whose interleaved output request "
                                "breaks 'Sharded inputs require sharded outputs.' first")
BUFFER = R("Input and output buffer types must match, got input: {} vs output: {}", "rms-norm/sharded-to-dram-width",
           "rms-norm/sharded-to-dram-block", "rms-norm/sharded-to-dram-width-block-w-2",
           "rms-norm/sharded-to-width-no-spec")
LAYOUT = R("Input and output memory layouts must match, got input: {} vs output: {}",
           "rms-norm/sharded-to-block-no-spec", "rms-norm/sharded-to-width-no-spec")
SUBBLOCK = R("block_w must be divisible by subblock_w.", "rms-norm/sharded-subblock-3",
             "rms-norm/sharded-subblock-2-block-w-3", "rms-norm/sharded-subblock-2")
M_TILES = R("M ({}) must be divisible by tile height ({})",
            unreachable="M is the input's padded height, a whole number of tiles")
K_TILES = R("K ({}) must be divisible by tile width ({})",
            unreachable="K is the input's padded width, a whole number of tiles")
BLOCK_W_1D = R("block_w ({}) must equal to K (in tiles) / num_cores ({})", "rms-norm/sharded-block-w-2",
               "rms-norm/sharded-two-rows-block-w-8", "rms-norm/sharded-ok")
BLOCK_H_1D = R("block_h ({}) must equal to M (in tiles) ({})",
               unreachable="the one-row (mcast 1-D) program is chosen exactly when M is block_h tiles")
BLOCK_W_ROWS = R("block_w ({}) must equal to K (in tiles) / num_cores_c ({})", "rms-norm/block-sharded-block-w-8",
                 "rms-norm/block-sharded-block-h-2-block-w-8", "rms-norm/sharded-block-h-2-block-w-2",
                 "rms-norm/block-sharded-offset-block-w-7", "rms-norm/block-sharded")
BLOCK_H_ROWS = R("block_h ({}) must equal ceil(Mt / num_cores_r) ({}); Mt={}, num_cores_r={}",
                 "rms-norm/sharded-block-h-2", "rms-norm/sharded-64-rows-block-h-1",
                 "rms-norm/block-sharded-block-h-2", "rms-norm/block-sharded-64-rows-block-h-1",
                 "rms-norm/block-sharded-64-rows")
BLOCK_W_COLS = R("block_w ({}) must equal to K (in tiles) / num_cores_r ({})",
                 "rms-norm/block-sharded-col-major-block-w-4", "rms-norm/block-sharded-col-major")
BLOCK_H_COLS = R("block_h ({}) must equal ceil(Mt / num_cores_c) ({}); Mt={}, num_cores_c={}",
                 "rms-norm/block-sharded-col-major-block-h-2", "rms-norm/block-sharded-col-major")
BLOCK_H_SHARD = R("Block height * tile_height must match shard shape[0], got {} vs {}",
                  "rms-norm/sharded-two-rows-block-h-1", "rms-norm/sharded-two-rows-64-rows")
BLOCK_W_SHARD = R("Block width * tile_width must match shard shape[1], got {} vs {}",
                  "rms-norm/sharded-9-tiles-on-3-cores", "rms-norm/sharded-ok")
# The interleaved program with a row-major gamma holds whole rows per core in its circular buffers; a TILE gamma (or
# none) streams the row in blocks and fits any width (measured on the real ttnn 0.81.1, mock N150, up to 131,072).
CB_WHOLE_ROW = R("Statically allocated dataflow buffers on core range [{}] grow to {} B which is beyond max L1 size "
                 "of {} B", "rms-norm/whole-row-5120-fp32-acc", "rms-norm/whole-row-8192-bf16-acc",
                 "rms-norm/whole-row-5120-tile-gamma", source="tt_metal/impl/program/program.cpp")
COL_MAJOR_WIDTH = R("Start core must be within grid size", "rms-norm/sharded-col-major-no-config",
                    "rms-norm/sharded-col-major",
                    "rms-norm/block-sharded-col-major-no-config", source="tt_metal/common/work_split.cpp")
_DTYPES = (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B)
_RM_PARAM_DTYPES = (DataType.FLOAT32, DataType.BFLOAT16)


def _physical_volume(t: Tensor) -> int:
    n = 1
    for d in t.padded_shape:
        n *= d
    return n


def _check_param(name: str, t: Tensor, x: Tensor) -> None:
    """gamma (weight) or beta (bias): a TILE row as wide as the input, or row-major 32-wide sticks."""
    width, height, rm_shape, rm_dtype = {"gamma": (GAMMA_WIDTH, GAMMA_HEIGHT, GAMMA_RM_SHAPE, GAMMA_RM_DTYPE),
                                         "beta": (BETA_WIDTH, BETA_HEIGHT, BETA_RM_SHAPE, BETA_RM_DTYPE)}[name]
    xp, tp = x.padded_shape, t.padded_shape
    if t.layout == Layout.TILE:
        width.require(tp[-1] == xp[-1] and t.shape[-1] >= x.shape[-1], x.shape[-1], xp[-1], t.shape[-1], tp[-1])
        rows = tp[-2] if len(tp) >= 2 else TILE_SIZE  # a rank-1 TILE tensor is one tile row
        height.require(rows == TILE_SIZE, TILE_SIZE, rows)
        return
    fits = tp[-1] == TILE_SIZE and _physical_volume(t) // TILE_SIZE == xp[-1] // TILE_SIZE
    if name == "gamma":
        rm_shape.require(fits, tp, TILE_SIZE, _physical_volume(t), xp)
    else:
        rm_shape.require(fits, tp[-1], _physical_volume(t), xp[-1], TILE_SIZE)
    rm_dtype.require(t.dtype in _RM_PARAM_DTYPES, f"DataType::{t.dtype.name}")


def _derived_config(x: Tensor) -> LayerNormShardedMultiCoreProgramConfig:
    """The sharded config ttnn derives from the input's shard spec: the grid up to its last core, one block per
    shard."""
    spec = x.memory_config().shard_spec
    end = spec.grid.bounding_box().end
    block_w = spec.shape[1] // TILE_SIZE
    subblock_w = next(s for s in (4, 2, 1) if block_w % s == 0)
    return LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(end.x + 1, end.y + 1),
                                                  subblock_w=subblock_w, block_h=spec.shape[0] // TILE_SIZE,
                                                  block_w=block_w, inplace=False)


def _validate_sharded(x: Tensor, out_mc: MemoryConfig, pc: Any) -> None:
    a_mc, spec = x.memory_config(), x.memory_config().shard_spec
    gx, gy = pc.compute_with_storage_grid_size.x, pc.compute_with_storage_grid_size.y
    dx, dy = x.device_or_none.chip.grid
    DEVICE_GRID.require(gx <= dx and gy <= dy, gx, gy, dx, dy)
    box = spec.grid.bounding_box().grid_size()
    GRID_FITS.require(box.x <= gx and box.y <= gy, box.x, box.y, gx, gy)
    height, width = _physical_volume(x) // x.padded_shape[-1], x.padded_shape[-1]
    sh, sw = spec.shape
    if a_mc.memory_layout == TensorMemoryLayout.BLOCK_SHARDED:  # one shard per core of the block
        rows, cols = -(-height // sh), -(-width // sw)
        SHARD_COUNT.require(rows * cols == spec.num_cores(), rows, cols, rows * cols, spec.num_cores())
    else:  # the shards along the width (one per core) may overhang the tensor by less than one shard
        n = spec.num_cores()
        PADDED_HEIGHT.require(sh - height < sh, 1, sh, sh, height, sh - height, sh)
        PADDED_WIDTH.require(n * sw - width < sw, n, sw, n * sw, width, n * sw - width, sw)
    WELFORD.require(not pc.use_welford)
    INPLACE_SHARDED.require(not pc.inplace or out_mc.is_sharded())
    BUFFER.require(a_mc.buffer_type == out_mc.buffer_type, f"BufferType::{a_mc.buffer_type.name}",
                   f"BufferType::{out_mc.buffer_type.name}")
    LAYOUT.require(a_mc.memory_layout == out_mc.memory_layout, f"TensorMemoryLayout::{a_mc.memory_layout.name}",
                   f"TensorMemoryLayout::{out_mc.memory_layout.name}")
    SUBBLOCK.require(pc.block_w % pc.subblock_w == 0)
    padded = x.padded_shape
    k = padded[-1]
    m = _physical_volume(x) // k
    M_TILES.require(m % TILE_SIZE == 0, m, TILE_SIZE)
    K_TILES.require(k % TILE_SIZE == 0, k, TILE_SIZE)
    mt, kt = m // TILE_SIZE, k // TILE_SIZE
    if m == pc.block_h * TILE_SIZE:  # one block row: the whole width is multicast along the grid
        per = -(-kt // spec.num_cores())
        BLOCK_W_1D.require(pc.block_w == per, pc.block_w, per)
        BLOCK_H_1D.require(pc.block_h == mt, pc.block_h, mt)
    elif spec.orientation == ShardOrientation.ROW_MAJOR:  # blocks along the grid's columns and rows
        per_w, per_h = -(-kt // box.x), -(-mt // box.y)
        BLOCK_W_ROWS.require(pc.block_w == per_w, pc.block_w, per_w)
        BLOCK_H_ROWS.require(pc.block_h == per_h, pc.block_h, per_h, mt, box.y)
    else:
        per_w, per_h = -(-kt // box.y), -(-mt // box.x)
        BLOCK_W_COLS.require(pc.block_w == per_w, pc.block_w, per_w)
        BLOCK_H_COLS.require(pc.block_h == per_h, pc.block_h, per_h, mt, box.x)
    BLOCK_H_SHARD.require(pc.block_h * TILE_SIZE == spec.shape[0], pc.block_h * TILE_SIZE, spec.shape[0])
    BLOCK_W_SHARD.require(pc.block_w * TILE_SIZE == spec.shape[1], pc.block_w * TILE_SIZE, spec.shape[1])
    # The program for a column-major width-sharded input asks work_split for cores outside its grid.
    COL_MAJOR_WIDTH.require(not (a_mc.memory_layout == TensorMemoryLayout.WIDTH_SHARDED and
                                 spec.orientation == ShardOrientation.COL_MAJOR))


def _validate(x: Tensor, weight: Tensor | None, bias: Tensor | None, residual: Tensor | None,
              out_mc: MemoryConfig, program_config: Any) -> None:
    ROW_MAJOR.require(x.layout != Layout.ROW_MAJOR)
    ON_DEVICE.require(all(t is None or t.device_or_none is not None for t in (x, weight, bias, residual)))
    require_device("rms_norm", x, weight, bias, residual)
    # The output's spec is built (and checked) before the op validates its inputs; in place it is the input's.
    inplace = isinstance(program_config, LayerNormShardedMultiCoreProgramConfig) and program_config.inplace
    check_placement("rms_norm", x.device_or_none, tuple(x.shape), Layout.TILE,
                    x.memory_config() if inplace and x.is_sharded() else out_mc, x.dtype)
    DTYPE.require(x.dtype in _DTYPES, f"DataType::{x.dtype.name}")
    if residual is not None:
        RESIDUAL_TILE.require(residual.layout == Layout.TILE, f"Layout::{residual.layout.name}")
        RESIDUAL_SHAPE.require(residual.shape == x.shape and residual.padded_shape == x.padded_shape,
                               x.shape, x.padded_shape, residual.shape, residual.padded_shape)
    if weight is not None:
        _check_param("gamma", weight, x)
        if bias is not None:
            SAME_LAYOUT.require(weight.layout == bias.layout)
    if bias is not None:
        _check_param("beta", bias, x)
    sharded_pc = isinstance(program_config, LayerNormShardedMultiCoreProgramConfig)
    if x.is_sharded():
        HEIGHT_SHARDED.require(x.memory_config().memory_layout != _HS)
        SHARDED_OUT.require(out_mc.is_sharded() and out_mc.memory_layout != _HS)
        if residual is not None:
            RESIDUAL_SHARDED.require(residual.is_sharded())
            RESIDUAL_SPEC.require(residual.memory_config().shard_spec == x.memory_config().shard_spec)
            RESIDUAL_MC.require(residual.memory_config() == x.memory_config())
        DEFAULT_CONFIG_SHARDED.require(program_config is None or sharded_pc)
        _validate_sharded(x, out_mc, program_config or _derived_config(x))
        return
    SHARDED_CONFIG_INTERLEAVED.require(not sharded_pc)
    if isinstance(program_config, LayerNormDefaultProgramConfig):
        WELFORD.require(not program_config.use_welford)


# (input dtype, fp32 accumulation, residual input) -> (tiles per input width tile, constant tiles) of 2 KiB the
# whole-row program's circular buffers take per core, measured on the real ttnn 0.81.1 (mock N150) at widths 4096 to
# 131072: the input row, the accumulation row (fp32: twice), the gamma row, and fixed buffers.
_WHOLE_ROW_CB = {
    (DataType.BFLOAT16, True, False): (4, 48), (DataType.BFLOAT16, False, False): (3, 46),
    (DataType.FLOAT32, True, False): (5, 56), (DataType.FLOAT32, False, False): (4, 62),
    (DataType.BFLOAT8_B, True, False): (3.53125, 44.25), (DataType.BFLOAT8_B, False, False): (2.53125, 38.5),
    (DataType.BFLOAT16, True, True): (5, 64), (DataType.BFLOAT16, False, True): (3, 78),
}


def whole_row_cb_bytes(x: Tensor, fp32_acc: bool, residual: bool) -> int | None:
    """Circular-buffer bytes per core of the interleaved rms_norm with a row-major gamma; None for an input dtype /
    option combination not measured."""
    coeffs = _WHOLE_ROW_CB.get((x.dtype, fp32_acc, residual))
    if coeffs is None:
        return None
    wt = x.padded_shape[-1] // TILE_SIZE
    return int((coeffs[0] * wt + coeffs[1]) * 2048)


def _check_whole_row(x: Tensor, weight: Tensor | None, residual: Tensor | None, kernel: Any) -> None:
    if x.is_sharded() or weight is None or weight.layout != Layout.ROW_MAJOR:
        return
    cb = whole_row_cb_bytes(x, bool(getattr(kernel, "fp32_dest_acc_en", False)), residual is not None)
    chip = x.device_or_none.chip_memories()[0].chip
    if cb is None or chip.l1_unreserved_base + cb <= chip.l1_size:
        return
    rows = x.padded_shape[-2] // TILE_SIZE
    for d in x.padded_shape[:-2]:
        rows *= d
    cores = min(rows, chip.grid[0] * chip.grid[1])
    last = (min(cores, chip.grid[0]) - 1, (cores - 1) // chip.grid[0])
    raise CB_WHOLE_ROW.error(f"0-0 - {last[0]}-{last[1]}", chip.l1_unreserved_base + cb, chip.l1_size)


def _output_mc(x: Tensor, memory_config: MemoryConfig | None) -> MemoryConfig:
    mc = memory_config or x.memory_config()
    if x.is_sharded() and mc.is_sharded() and mc.shard_spec is None:  # the input's shards, as requested
        return MemoryConfig(mc.memory_layout, mc.buffer_type, x.memory_config().shard_spec)
    return mc


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
    out_mc = _output_mc(input_tensor, memory_config)
    _validate(input_tensor, weight, bias, residual_input_tensor, out_mc, program_config)
    _check_whole_row(input_tensor, weight, residual_input_tensor, compute_kernel_config)
    dim = input_tensor.shape[-1]
    tile_w, tile_b = (t is not None and t.layout == Layout.TILE for t in (weight, bias))

    def values(t: torch.Tensor | None, tiled: bool) -> torch.Tensor | None:
        # A TILE weight holds its values in row 0; a row-major one in its 32-wide sticks, in order.
        if t is None:
            return None
        return (t.reshape(-1, t.shape[-1])[0] if tiled else t.reshape(-1))[:dim]

    # torch's fused kernel computes bf16 inputs in fp32 and rounds once: bit-identical to the fp32 path below.
    native = input_tensor.dtype == DataType.BFLOAT16 and bias is None and residual_input_tensor is None

    def compute(x: torch.Tensor, w: Any, b: Any, r: Any) -> torch.Tensor:
        if native and x.dtype == torch.bfloat16 and (w is None or w.dtype == torch.bfloat16):
            return torch.nn.functional.rms_norm(x, (dim,), values(w, tile_w), epsilon)
        x = f32(x)
        if r is not None:
            x = x + f32(r)
        y = torch.nn.functional.rms_norm(x, (dim,), values(f32_cached(w) if w is not None else None, tile_w),
                                         epsilon)
        if b is not None:
            y = y + f32(values(b, tile_b))
        return y

    inplace = isinstance(program_config, LayerNormShardedMultiCoreProgramConfig) and program_config.inplace
    out = output(input_tensor, per_device(compute, input_tensor, weight, bias, residual_input_tensor),
                 None, None, input_tensor.memory_config() if inplace else out_mc)
    if inplace:  # the input's own buffer holds the result (whatever output memory config was asked for)
        input_tensor._rebind(out)
        return input_tensor
    return out

