"""sparse_matmul: a batch of matmuls of which only those whose sparsity entry is non-zero run; the others' output
blocks are zero (the device zero-fills the output first). How mixture-of-experts layers run only the selected
experts: with dense A [*a, M, K] and sparse B [*b, K, N] every (a, b) product is a candidate and the output is
[*a, *b, M, N]; with sparse A [*a, M, K] and dense B, product a uses B's expert a mod |b| and the output is
[*a, M, N]; with both sparse, product e pairs A[e] with B[e]. The sparsity tensor holds one entry per candidate,
in row-major order of the output's batch dims.

Rules as ttnn 0.81.1 gives them on a mock N150 (tt_checks/cases_moe.py): the op-level checks of
sparse_matmul_device_operation.cpp, then the program factory's (1-D multicast config with mcast_in0 only).
`nnz`, when given, must equal the number of non-zero sparsity entries: a device whose kernels loop nnz times while
the sender multicasts once per non-zero entry deadlocks (tt-metal issue #45943), which the host cannot see; the
simulator reports it as an error at the step that would hang.
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import f32, f32_cached, output, per_device
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, MemoryConfig
from .program_configs import MatmulMultiCoreReuseMultiCast1DProgramConfig
from .rules import rules
from .tensor import Tensor, require_device
from .trace import device_op
from .types import FLOAT_TYPES, TILE_SIZE, DataType, Layout

R = rules("sparse_matmul", "matmul/device/sparse/sparse_matmul_device_operation.cpp")
_FACTORY = "matmul/device/sparse/factory/sparse_matmul_multicore_reuse_mcast_1d_optimized.cpp"
A_TILE = R("Input tensor A must be TILE layout, got {}", "sparse-matmul/a-row-major", "sparse-matmul/ok")
B_TILE = R("Input tensor B must be TILE layout, got {}", "sparse-matmul/b-row-major", "sparse-matmul/ok")
A_FLOAT = R("Input tensor A must be a floating point type, got {}", "sparse-matmul/uint32-a", "sparse-matmul/fp32-a")
B_FLOAT = R("Input tensor B must be a floating point type, got {}", "sparse-matmul/uint32-b", "sparse-matmul/bfp4-b")
SPARSITY_RM = R("Sparsity tensor must be ROW_MAJOR layout, got {}", "sparse-matmul/sparsity-tile",
                "sparse-matmul/sparsity-fp32")
ONE_SPARSE = R("sparse_matmul requires at least one of is_input_a_sparse or is_input_b_sparse to be true",
               "sparse-matmul/neither-sparse", "sparse-matmul/both-sparse")
K_MATCH = R("Dimension K (A.shape[-1] {}) and B.shape[-2] ({}) must match for A and B", "sparse-matmul/k-mismatch",
            "sparse-matmul/ok")
NNZ_POSITIVE = R("nnz ({}) must be greater than 0", "sparse-matmul/nnz-0", "sparse-matmul/ok")
VOLUME = R("sparsity logical_volume ({}) must equal batch_length ({}) [sparsity_shape={}, is_input_a_sparse={}, "
           "is_input_b_sparse={}]", "sparse-matmul/sparsity-volume", "sparse-matmul/sparse-a-volume",
           "sparse-matmul/sparse-a-groups-2")
NNZ_MAX = R("nnz ({}) must be less than or equal to the length of all batch dimensions ({})", "sparse-matmul/nnz-9",
            "sparse-matmul/ok")
PC_KIND = R("std::get: wrong index for variant", "sparse-matmul/2d-config", "sparse-matmul/ok", source=_FACTORY)
MCAST_IN0 = R("Only mcast_in0 is supported for sparse matmul", "sparse-matmul/mcast-in1", "sparse-matmul/ok",
              source=_FACTORY)
KT_BLOCKS = R("Kt ({}) must be divisible by in0_block_w ({})", "sparse-matmul/in0-block-w-3",
              "sparse-matmul/in0-block-w-2", source=_FACTORY)
SUBBLOCKS = R("sparse_matmul: out_block_w ({}) must be divisible by out_subblock_w ({}); otherwise in1_num_subblocks "
              "becomes 0 and the mcast_in0 kernel deadlocks", "sparse-matmul/out-block-w-not-multiple",
              "sparse-matmul/subblock-w-3", source=_FACTORY)
BLOCKS = R("Number of blocks exceeds number of cores available: {} blocks > {} cores", "sparse-matmul/m-64",
           "sparse-matmul/n-256-per-core-1", "sparse-matmul/m-64-per-core-2", source=_FACTORY)
# The output blocks go to the grid's cores row by row and in0 is multicast to their bounding box: a last row left
# part-empty would leave receivers without work (a hang), so the blocks must fill whole rows of the grid (or one).
RECTANGLE = R("num_cores_with_work ({}) must be equal to in0_mcast_receiver_num_cores ({}), please adjust the core "
              "grid to make it rectangular.", "sparse-matmul/12-blocks-on-8x2", "sparse-matmul/16-blocks-on-8x2",
              source=_FACTORY)


def _tiles(n: int) -> int:
    return -(-n // TILE_SIZE)


def _volume(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _cpp_bool(v: bool) -> str:
    return "true" if v else "false"


def _shape_str(shape: Any) -> str:
    return f"Shape([{', '.join(str(d) for d in shape)}])"


@device_op(kernel_replay=True)
def sparse_matmul(
    input_tensor_a: Tensor,
    input_tensor_b: Tensor,
    *,
    sparsity: Tensor,
    program_config: Any,
    nnz: int | None = None,
    is_input_a_sparse: bool = False,
    is_input_b_sparse: bool = True,
    memory_config: MemoryConfig | None = None,
    dtype: DataType | None = None,
    compute_kernel_config: Any = None,
    core_grid: Any = None,
    output_tile: Any = None,
    optional_output_tensor: Tensor | None = None,
    global_cb: Any = None,
    sub_device_id: Any = None,
    indices: Tensor | None = None,
    bias: Tensor | None = None,
) -> Tensor:
    # The indexed (gather) mode and its bias, a preallocated output and a global CB are not modelled.
    refuse_options("sparse_matmul", output_tile=output_tile, optional_output_tensor=optional_output_tensor,
                   global_cb=global_cb, indices=indices, bias=bias)
    a, b = input_tensor_a, input_tensor_b
    require_device("sparse_matmul", a, b, sparsity)
    A_TILE.require(a.layout == Layout.TILE, f"Layout::{a.layout.name}")
    B_TILE.require(b.layout == Layout.TILE, f"Layout::{b.layout.name}")
    A_FLOAT.require(a.dtype in FLOAT_TYPES, f"DataType::{a.dtype.name}")
    B_FLOAT.require(b.dtype in FLOAT_TYPES, f"DataType::{b.dtype.name}")
    SPARSITY_RM.require(sparsity.layout == Layout.ROW_MAJOR, f"Layout::{sparsity.layout.name}")
    ONE_SPARSE.require(is_input_a_sparse or is_input_b_sparse)
    a_shape, b_shape = list(a.shape), list(b.shape)
    K_MATCH.require(_tiles(a_shape[-1]) * TILE_SIZE == _tiles(b_shape[-2]) * TILE_SIZE,
                    _tiles(a_shape[-1]) * TILE_SIZE, _tiles(b_shape[-2]) * TILE_SIZE)
    NNZ_POSITIVE.require(nnz is None or nnz > 0, nnz)
    a_batch, b_batch = a_shape[:-2], b_shape[:-2]
    na, nb = _volume(a_batch), _volume(b_batch)
    batch = nb if (is_input_a_sparse and is_input_b_sparse) else na if is_input_a_sparse else na * nb
    VOLUME.require(_volume(sparsity.shape) == batch, _volume(sparsity.shape), batch, _shape_str(sparsity.shape),
                   _cpp_bool(is_input_a_sparse), _cpp_bool(is_input_b_sparse))
    NNZ_MAX.require(nnz is None or nnz <= batch, nnz, batch)

    pc = program_config
    PC_KIND.require(isinstance(pc, MatmulMultiCoreReuseMultiCast1DProgramConfig))
    mt, kt, nt = _tiles(a_shape[-2]), _tiles(a_shape[-1]), _tiles(b_shape[-1])
    KT_BLOCKS.require(kt % pc.in0_block_w == 0, kt, pc.in0_block_w)
    grid = pc.compute_with_storage_grid_size
    blocks = -(-mt // pc.per_core_M) * -(-nt // pc.per_core_N)
    BLOCKS.require(blocks <= grid.x * grid.y, blocks, grid.x * grid.y)
    MCAST_IN0.require(bool(pc.mcast_in0))
    receivers = blocks if blocks <= grid.x else -(-blocks // grid.x) * grid.x
    RECTANGLE.require(blocks == receivers, blocks, receivers)
    SUBBLOCKS.require(pc.out_block_w % pc.out_subblock_w == 0, pc.out_block_w, pc.out_subblock_w)
    mc = memory_config or DRAM_MEMORY_CONFIG
    if mc.is_sharded():
        raise TTError("sparse_matmul", "the simulator models interleaved outputs only")

    a_dims = [] if (is_input_a_sparse and is_input_b_sparse) else a_batch
    b_dims = [] if (is_input_a_sparse and not is_input_b_sparse) else b_batch
    out_shape = [*a_dims, *b_dims, a_shape[-2], b_shape[-1]]
    out_dtype = dtype or a.dtype
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]

    def compute(x: torch.Tensor, w: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        live = s.reshape(-1) != 0
        count = int(live.sum())
        if nnz is not None and nnz != count:
            raise TTError("sparse_matmul", f"nnz ({nnz}) differs from the {count} non-zero sparsity entries: the "
                                           f"device's kernels would deadlock (tt-metal #45943)")
        xs, ws = f32(x).reshape(-1, m, k), f32_cached(w).reshape(-1, k, n)
        idx = live.nonzero().reshape(-1)
        if is_input_a_sparse and is_input_b_sparse:
            ia, ib = idx, idx
        elif is_input_a_sparse:
            ia, ib = idx, idx % nb
        else:
            ia, ib = idx // nb, idx % nb
        y = torch.zeros(batch, m, n)
        if count:
            # The matrix engine multiplies the stored operands exactly and accumulates in fp32.
            y[idx] = torch.bmm(xs[ia], ws[ib])
        return y.reshape(out_shape)

    return output(a, per_device(compute, a, b, sparsity), out_dtype, Layout.TILE, mc)


__all__ = ["sparse_matmul"]
