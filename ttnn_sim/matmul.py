"""matmul and linear: a @ b (+ bias, + activation), weights stored transposed as [.., in, out] in TILE layout.

The output lands in DRAM interleaved unless memory_config says otherwise; a sharded output takes the shard spec the
program config implies (the requested shape is ignored, as on the device): DRAM-sharded and 1-D configs place one
[per_core_M, per_core_N] tile block per core row by row, 2-D configs a block grid, the reuse config one block per
core in the inputs' orientation.
"""

from __future__ import annotations

from typing import Any

import torch

from .allocator import TILE_BYTES
from .compute import BF16_STREAM_ROWS, bf16_gemm_is_native, derived, f32, f32_cached, output, per_device, unary
from .cores import CoreCoord, CoreRange, CoreRangeSet, num_cores_to_corerangeset
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, BufferType, MemoryConfig, ShardOrientation, ShardSpec, TensorMemoryLayout
from .program_configs import (
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
)
from .rules import rules
from .tensor import Tensor
from .trace import device_op
from .types import FLOAT_TYPES, TILE_SIZE, DataType, Layout, UnaryWithParam, round_up

_WS, _HS, _BS = (TensorMemoryLayout.WIDTH_SHARDED, TensorMemoryLayout.HEIGHT_SHARDED,
                 TensorMemoryLayout.BLOCK_SHARDED)
R = rules("matmul", "matmul/device/matmul_device_operation.cpp")
ON_DEVICE = R("Operand to matmul must be on device", "matmul/a-host", "matmul/ok")
TILED = R("Inputs to matmul must be tilized", "matmul/a-row-major", "matmul/ok")
A_FORMAT = R("Unsupported data format for input A: {}", "matmul/a-int32", "matmul/a-bfp8")
B_FORMAT = R("Unsupported data format for input B: {}", "matmul/b-uint16", "matmul/b-bfp4")
INNER = R("The width of the first tensor must be equal to the height of the second tensor. Mismatch: width={} "
          "height={}", "matmul/k-mismatch", "matmul/k-unaligned")
BCAST_FRONT = R("When in1 rank greater than in0 rank front dimensions need to be 1", "matmul/b-batched-rank-up",
                "matmul/a-rank2-b-rank2", source="matmul/device/utilities/matmul_utilities.cpp")
SAME_RANK = R("Batched (non-bcast) matmul requires inputs of the same rank, got a_shape rank: {} vs b_shape rank: {}",
              "matmul/batched-b-rank-3-vs-4", "matmul/batched-equal")
BATCH_MATCH = R("bmm (non-bcast matmul) expects input tensors of shapes BCMK*BCKN=BCMN or batch dimension {} "
                "mismatch: a={} vs b={} (dimension mismatch only allowed when all batch dimensions of a are size 1 "
                "and using MatmulMultiCoreReuseMultiCast1DProgramConfig with fuse_batch=false, fused_activation=none, "
                "mcast_in0=false, and non-sharded inputs for in0 reuse optimization)", "matmul/batched-2-vs-3",
                "matmul/batched-equal")
CORE_GRID_AND_PC = R("Cannot use both user core grid/coordinates and a program config", "matmul/core-grid-and-pc",
                     "matmul/dram-sharded/ok")
ZERO_FIELD = R("{}: {} is 0, which is not valid", "matmul/pc-in0-block-w-0", "matmul/dram-sharded/ok")
SUBBLOCK_FITS = R("{}: out_subblock_w {} times out_subblock_h {} needs to be at most {} to fit in hardware",
                  "matmul/2d/subblock-2x8", "matmul/2d/ok")
GRID_FITS = R("{}: compute_with_storage_grid_size ({}, {}) must fit within device grid ({}, {})",
              "matmul/2d/grid-9x8", "matmul/2d/ok")
KT_BLOCKS = R("{}: Kt ({}) must be divisible by in0_block_w ({})", "matmul/2d/in0-block-w-3", "matmul/2d/ok")
MCAST2D_X = R("{}: Num output blocks along x ({}) must be smaller than or equal to the number of columns in compute "
              "grid ({})!", "matmul/2d/too-many-x", "matmul/2d/ok")
MCAST2D_Y = R("{}: Num output blocks along y ({}) must be smaller than or equal to the number of rows in compute "
              "grid ({})!", "matmul/2d/too-many-y", "matmul/2d/ok")
MCAST2D_PER_CORE_M = R("{}: per_core_M ({}) exceeds Mt ({}). Each core would compute more output row tiles than the "
                       "tensor has. Reduce per_core_M to at most Mt.", "matmul/2d/per-core-m-too-big",
                       "matmul/2d/ok")
DRAM_A_SHARDED = R("bad optional access", "matmul/dram-sharded/a-interleaved", "matmul/dram-sharded/ok")
DRAM_OUT_SHARDED = R("{}: Output memory config must be sharded for DRAM sharded program config",
                     "matmul/dram-sharded/out-dram", "matmul/dram-sharded/ok")
DRAM_A_ROW_MAJOR = R("{}: Input A shard orientation must be ROW_MAJOR, got: {}", "matmul/dram-sharded/a-col-major",
                     "matmul/dram-sharded/ok")
DRAM_ONE_TILE_ROW = R("{}: currently only support in0 tensor height of tile height", "matmul/dram-sharded/m-64",
                      "matmul/dram-sharded/ok")
DRAM_K_BLOCKS = R("{}: K ({}) must be divisible by in0_block_w ({})", "matmul/dram-sharded/in0-block-w-3",
                  "matmul/dram-sharded/ok")
DRAM_B_WS = R("{}: Input B memory layout must be WIDTH_SHARDED, got: {}", "matmul/dram-sharded/b-interleaved",
              "matmul/dram-sharded/ok")
DRAM_EVEN_K = R("in DRAM sharded Matmul we don't have support for un-even sharding currently. K: {}, per_core_K: {}.",
                "matmul/dram-sharded/uneven-k", "matmul/dram-sharded/k80-on-27x3",
                "matmul/dram-sharded/k152-on-26x6-bw5", "matmul/dram-sharded/k80-on-40x2")
DRAM_DIVIDE = R("{}: shard_shape[1] / in0_tile.get_width() ({}) and in0_block_w ({}) must divide one another",
                "matmul/dram-sharded/k28-on-4x7-bw2", "matmul/dram-sharded/k160-n864-bfp8-bw4",
                "matmul/dram-sharded/k28-on-14x2-bw14")
# A program's statically allocated circular buffers grow up from the L1 unreserved base; they must end within the
# core's L1 and below the lowest L1 buffer (L1 buffers are allocated top-down), checked when the program is built.
CB_BEYOND_L1 = R("Statically allocated dataflow buffers on core range [{}] grow to {} B which is beyond max L1 size "
                 "of {} B", "matmul/dram-sharded/k128-n640-bf16-bw4", "matmul/dram-sharded/k256-n448-bf16-bw8",
                 "matmul/dram-sharded/k128-n640-bf16-bw2", source="tt_metal/impl/program/program.cpp")
CB_CLASH = R("Statically allocated dataflow buffers in program {} clash with L1 buffers on core range [{}]. L1 buffer "
             "allocated at {} and static dataflow buffer region ends at {}", "matmul/dram-sharded/k160-n864-bfp8-bw5",
             "matmul/dram-sharded/k160-n864-bfp8-bw1", source="tt_metal/impl/program/program.cpp")
# A fused activation (core_grid or program config: the kernel applies it) must be one the matmul kernels have an SFPU
# routine for; without either the activation runs as its own unary op afterwards and mish is fine.
FUSED_ACTIVATION = R("Unsupported UnaryOpType for fused activation: UnaryOpType::{}", "matmul/fused-mish-core-grid",
                     "matmul/mish-unfused", source="matmul/device/utilities/matmul_utilities.hpp")
OPTIONAL_OUT_DTYPE = R("Type mismatch between optional output tensor {} & output tensor {}",
                       "matmul/optional-out-dtype-mismatch", "matmul/optional-out-bfp8")
OPTIONAL_OUT_VOLUME = R("Invalid optional output tensor", "matmul/optional-out-shape", "matmul/optional-out",
                        source="matmul/matmul.cpp")

# Activations ttnn's matmul parses beyond the shared unary set (compute.unary), by the names it takes.
_MATMUL_ACTIVATIONS = {
    "relu6": torch.nn.functional.relu6,
    "hardsigmoid": torch.nn.functional.hardsigmoid,
    "tanh": torch.tanh,
    # The device's approximate GELU; its tanh form stands for it.
    "gelu_approx": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "mish": torch.nn.functional.mish,
}
_NOT_FUSABLE = ("mish",)


def _activation(op: str, act: Any, fused: bool) -> Any:
    """The torch function of a matmul activation; refused where the kernel would have to fuse one it cannot."""
    key = act.op_type if isinstance(act, UnaryWithParam) else act
    name = key.lower() if isinstance(key, str) else getattr(key, "name", "").lower()
    if fused and name in _NOT_FUSABLE:
        raise FUSED_ACTIVATION.error(name.upper())
    if isinstance(key, str) and name in _MATMUL_ACTIVATIONS:
        return _MATMUL_ACTIVATIONS[name]
    return unary(op, act)


def _as_2d(w: torch.Tensor) -> torch.Tensor:
    return w.reshape(w.shape[-2:])


def _as_2d_nk(w: torch.Tensor) -> torch.Tensor:
    """The [k, n] matrix as a view of an [n, k] row-major copy (a copy only when w is not already held so)."""
    w2 = _as_2d(w)
    return w2 if w2.stride(-2) == 1 else w2.t().contiguous().t()


def _tiles(n: int) -> int:
    return -(-n // TILE_SIZE)


def _out_shape(a_shape: list[int], b_shape: list[int]) -> list[int]:
    """The device's output shape: a's leading dims (b's where b has more), then M and N."""
    rank = max(len(a_shape), len(b_shape))
    lead_a = [1] * (rank - len(a_shape)) + list(a_shape[:-2])
    lead_b = [1] * (rank - len(b_shape)) + list(b_shape[:-2])
    lead = lead_a if len(a_shape) >= len(b_shape) else [x if x != 1 else y for x, y in zip(lead_a, lead_b,
                                                                                            strict=True)]
    return [*lead, a_shape[-2], b_shape[-1]]


def _pc_name(pc: Any) -> str:
    return type(pc).__name__


def _check_batches(a_shape: list[int], b_shape: list[int]) -> None:
    batch_b = 1
    for d in b_shape[:-2]:
        batch_b *= d
    if len(b_shape) > len(a_shape) and any(d != 1 for d in b_shape[: len(b_shape) - len(a_shape)]):
        raise BCAST_FRONT.error()
    if batch_b == 1:
        return
    SAME_RANK.require(len(a_shape) == len(b_shape), len(a_shape), len(b_shape))
    for i, (x, y) in enumerate(zip(a_shape[:-2], b_shape[:-2], strict=True)):
        BATCH_MATCH.require(x == y, i, list(a_shape), list(b_shape))


def _check_common(pc: Any, device: Any, mt: int, kt: int, nt: int, fp32_acc: bool) -> None:
    name = _pc_name(pc)
    for f in ("in0_block_w", "out_subblock_h", "out_subblock_w", "per_core_M", "per_core_N"):
        if hasattr(pc, f):
            ZERO_FIELD.require(getattr(pc, f) != 0, name, f)
    if hasattr(pc, "out_subblock_w"):
        limit = 4 if fp32_acc else 8
        SUBBLOCK_FITS.require(pc.out_subblock_w * pc.out_subblock_h <= limit, name, pc.out_subblock_w,
                              pc.out_subblock_h, limit)
    if hasattr(pc, "compute_with_storage_grid_size"):
        g = pc.compute_with_storage_grid_size
        gx, gy = device.chip.grid
        GRID_FITS.require(g.x <= gx and g.y <= gy, name, g.x, g.y, gx, gy)
        KT_BLOCKS.require(kt % pc.in0_block_w == 0, name, kt, pc.in0_block_w)


def _sharded_output(pc: Any, a: Tensor, b: Tensor, mc: MemoryConfig, mt: int, nt: int, device: Any) -> MemoryConfig:
    """The shard spec a sharded output gets from the program config (the requested one's shape is not used)."""
    name = _pc_name(pc)
    shard = [pc.per_core_M * TILE_SIZE, pc.per_core_N * TILE_SIZE]
    blocks_m, blocks_n = -(-mt // pc.per_core_M), -(-nt // pc.per_core_N)
    grid_c = device.compute_with_storage_grid_size()
    if isinstance(pc, MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig):
        grid = num_cores_to_corerangeset(blocks_m * blocks_n, grid_c, True)
        return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(grid, shard, ShardOrientation.ROW_MAJOR))
    if isinstance(pc, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        grid = num_cores_to_corerangeset(blocks_m * blocks_n, pc.compute_with_storage_grid_size, True)
        return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(grid, shard, ShardOrientation.ROW_MAJOR))
    if isinstance(pc, MatmulMultiCoreReuseMultiCastProgramConfig):
        nx, ny = (blocks_m, blocks_n) if pc.transpose_mcast else (blocks_n, blocks_m)
        grid = mc.shard_spec.grid if mc.shard_spec is not None else CoreRangeSet(
            [CoreRange(CoreCoord(0, 0), CoreCoord(nx - 1, ny - 1))])
        orient = ShardOrientation.COL_MAJOR if pc.transpose_mcast else ShardOrientation.ROW_MAJOR
        return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(grid, shard, orient))
    if isinstance(pc, MatmulMultiCoreReuseProgramConfig):
        orient = (a.memory_config().shard_spec.orientation if a.is_sharded() else
                  b.memory_config().shard_spec.orientation if b.is_sharded() else ShardOrientation.COL_MAJOR)
        grid = mc.shard_spec.grid if mc.shard_spec is not None else num_cores_to_corerangeset(
            blocks_m * blocks_n, grid_c, orient == ShardOrientation.ROW_MAJOR)
        return MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(grid, shard, orient))
    raise TTError("matmul", f"{name}: the simulator does not model this program config's sharded output")


def _validate_dram_sharded(pc: Any, a: Tensor, b: Tensor, mc: MemoryConfig, mt: int, kt: int) -> None:
    name = _pc_name(pc)
    # The output spec is computed first: it reads A's shard spec and needs K split evenly over it.
    DRAM_A_SHARDED.require(a.is_sharded())
    amc = a.memory_config()
    per_core_k = amc.shard_spec.shape[1] // TILE_SIZE
    DRAM_EVEN_K.require(kt % per_core_k == 0, kt, per_core_k)
    DRAM_OUT_SHARDED.require(mc.is_sharded(), name)
    DRAM_A_ROW_MAJOR.require(amc.shard_spec.orientation == ShardOrientation.ROW_MAJOR, name,
                             f"ShardOrientation::{amc.shard_spec.orientation.name}")
    DRAM_ONE_TILE_ROW.require(mt == 1, name)
    DRAM_K_BLOCKS.require(kt % pc.in0_block_w == 0, name, kt, pc.in0_block_w)
    w = pc.in0_block_w
    DRAM_DIVIDE.require(per_core_k % w == 0 or w % per_core_k == 0, name, per_core_k, w)
    DRAM_B_WS.require(b.memory_config().memory_layout == _WS, name,
                      f"TensorMemoryLayout::{b.memory_config().memory_layout.name}")


def dram_sharded_cb_bytes(pc: Any, a: Tensor, b: Tensor, out_dtype: DataType, fp32_acc: bool) -> int:
    """The DRAM-sharded program's statically allocated circular buffers per core (measured on the real ttnn 0.81.1,
    mock N150 and P150, to the byte): the input block (2 x in0_block_w tiles, 3 x when a block spans several input
    shards), the weight stream (3 x in0_block_w x the weight's strip per bank), and the output block of a strip's
    width rounded up to whole subblocks (8 tiles, 4 with fp32 accumulation), twice when the accumulation format (fp32
    with fp32 accumulation, else bf16) differs from the output's. The sharded input and the output's storage shards
    are the tensors' own L1."""
    w = pc.in0_block_w
    per_core_k = a.memory_config().shard_spec.shape[1] // TILE_SIZE
    strip = b.memory_config().shard_spec.shape[1] // TILE_SIZE
    out_w = round_up(strip, 4 if fp32_acc else 8)
    interm = DataType.FLOAT32 if fp32_acc else DataType.BFLOAT16
    cbs = (3 if w > per_core_k else 2) * w * TILE_BYTES[a.dtype] + 3 * w * strip * TILE_BYTES[b.dtype]
    cbs += out_w * TILE_BYTES[out_dtype]
    return cbs + (out_w * TILE_BYTES[interm] if interm != out_dtype else 0)


def _check_circular_buffers(op: str, device: Any, cb_bytes: int, out: Tensor | None) -> None:
    """The program's circular buffers against the core's L1 (before the output is placed) and against the lowest L1
    buffer once it is (its storage shards are L1 buffers too). The error names the op called (matmul or linear),
    as the real one reports the program of that call."""
    mem = device.chip_memories()[0]
    chip = mem.chip
    end = chip.l1_unreserved_base + cb_bytes
    gx, gy = chip.grid
    cores = f"0-0 - {gx - 1}-{gy - 1}"
    if out is None:
        if end > chip.l1_size:
            raise TTError(op, CB_BEYOND_L1.error(cores, end, chip.l1_size).rule)
        return
    lowest = mem.lowest_l1_buffer()
    if lowest is not None and end > lowest:
        if out._alloc is not None:  # the failed call leaves nothing allocated
            out._alloc.free()
            out._alloc = None
        raise TTError(op, CB_CLASH.error(0, cores, lowest, end).rule)


def _validate_2d(pc: Any, mt: int, nt: int) -> None:
    name = _pc_name(pc)
    nx, ny = -(-nt // pc.per_core_N), -(-mt // pc.per_core_M)
    if pc.transpose_mcast:
        nx, ny = ny, nx
    g = pc.compute_with_storage_grid_size
    MCAST2D_PER_CORE_M.require(pc.per_core_M <= mt, name, pc.per_core_M, mt)
    MCAST2D_X.require(nx <= g.x, name, nx, g.x)
    MCAST2D_Y.require(ny <= g.y, name, ny, g.y)


def _matmul(op: str, a: Tensor, b: Tensor, bias: Tensor | None, transpose_a: bool, transpose_b: bool,
            dtype: DataType | None, activation: Any, memory_config: MemoryConfig | None, program_config: Any,
            compute_kernel_config: Any, core_grid: Any, optional_output_tensor: Tensor | None = None) -> Tensor:
    for t in (a, b, bias):
        ON_DEVICE.require(t is None or (isinstance(t, Tensor) and t.device_or_none is not None))
    CORE_GRID_AND_PC.require(core_grid is None or program_config is None)
    TILED.require(a.layout == Layout.TILE and b.layout == Layout.TILE)
    A_FORMAT.require(a.dtype in FLOAT_TYPES, f"DataType::{a.dtype.name}")
    B_FORMAT.require(b.dtype in FLOAT_TYPES, f"DataType::{b.dtype.name}")
    a_shape, b_shape = list(a.shape), list(b.shape)
    if transpose_a:
        a_shape[-2], a_shape[-1] = a_shape[-1], a_shape[-2]
    if transpose_b:
        b_shape[-2], b_shape[-1] = b_shape[-1], b_shape[-2]
    INNER.require(a_shape[-1] == b_shape[-2], a_shape[-1], b_shape[-2])
    _check_batches(a_shape, b_shape)
    out_shape = _out_shape(a_shape, b_shape)
    out_dtype = dtype or a.dtype
    device = a.device_or_none
    mc = memory_config or DRAM_MEMORY_CONFIG
    opt = optional_output_tensor
    if opt is not None:
        # The output is written into the given tensor: its dtype (an explicit dtype must agree) and its place.
        ON_DEVICE.require(isinstance(opt, Tensor) and opt.device_or_none is not None)
        OPTIONAL_OUT_DTYPE.require(dtype is None or dtype == opt.dtype, f"DataType::{opt.dtype.name}",
                                   f"DataType::{out_dtype.name}")
        out_dtype, mc = opt.dtype, opt.memory_config()
    batch = 1
    for d in a_shape[:-2]:
        batch *= d
    kt, nt = _tiles(a_shape[-1]), _tiles(b_shape[-1])
    mt = batch * _tiles(a_shape[-2])  # batch fused into M: every config the models use fuses it
    pc = program_config
    cb_bytes = None
    if pc is not None:
        fp32_acc = bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))
        _check_common(pc, device, mt, kt, nt, fp32_acc)
        if isinstance(pc, MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig):
            _validate_dram_sharded(pc, a, b, mc, mt, kt)
            cb_bytes = dram_sharded_cb_bytes(pc, a, b, out_dtype, fp32_acc)
        elif isinstance(pc, MatmulMultiCoreReuseMultiCastProgramConfig):
            _validate_2d(pc, mt, nt)
    if mc.is_sharded():
        if pc is None:
            raise TTError(op, "the simulator does not model the program config ttnn picks for a sharded output; "
                              "pass program_config")
        mc = _sharded_output(pc, a, b, mc, mt, nt, device)
    act = _activation(op, activation, core_grid is not None) if activation is not None else None
    # The program config's fused activation runs in the kernel on each output block (after the bias, before the
    # pack to the output format), as the multicast program factories apply it.
    fused = getattr(pc, "fused_activation", None)
    fused_act = _activation(op, fused, True) if fused is not None else None
    if bias is not None:
        out_shape = list(torch.broadcast_shapes(tuple(out_shape), tuple(bias.shape)))

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
        if y.dim() < len(out_shape):
            y = y.reshape(out_shape)
        if bb is not None:
            y = y.float() + bb.float()
        if fused_act is not None:
            y = fused_act(y.float())
        return act(y.float()) if act is not None else y

    if cb_bytes is not None:
        _check_circular_buffers(op, device, cb_bytes, None)
    # Row by row when every row meets the same weight and bias, with fp32 GEMMs (tested row-exact at any multiple of
    # 4 rows; bf16 GEMMs on CPUs that have them are not).
    shared = b_shape[:-2] == [1] * (len(b_shape) - 2) and (bias is None or bias.shape[-2] == 1)
    rows = (0,) if shared and not transpose_a and not bf16_gemm_is_native() else ()
    shards = per_device(compute, a, b, bias, rows=rows)
    if opt is not None:
        OPTIONAL_OUT_VOLUME.require(torch.Size(out_shape).numel() == torch.Size(tuple(opt.shape)).numel())
        shards = [s.reshape(tuple(opt.shape)) for s in shards]
    out = output(a, shards, out_dtype, Layout.TILE, mc)
    if cb_bytes is not None:
        _check_circular_buffers(op, device, cb_bytes, out)
    if opt is not None:
        opt._rebind(out)
        return opt
    return out


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
    refuse_options("matmul", global_cb=global_cb)
    return _matmul("matmul", input_tensor_a, input_tensor_b, None, transpose_a, transpose_b, dtype, activation,
                   memory_config, program_config, compute_kernel_config, core_grid, optional_output_tensor)


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
    refuse_options("linear", global_cb=global_cb, in0_column_offset=in0_column_offset)
    return _matmul("linear", input_tensor_a, input_tensor_b, bias, transpose_a, transpose_b, dtype, activation,
                   memory_config, program_config, compute_kernel_config, core_grid, optional_output_tensor)


__all__ = ["linear", "matmul", "BufferType"]
