"""Splitting fused QKV projections into heads and concatenating heads back (prefill and decode forms).

Decode heads live height-sharded one user per core: nlp_create_qkv_heads_decode puts user b's Q, K and V heads
(padded to whole tiles of heads) on the b-th core of its output grid; nlp_concat_heads_decode takes that form back to
one width-sharded row block of 32 users, one head per core.
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import output, per_device
from .cores import CoreCoord, CoreRange, CoreRangeSet, num_cores_to_corerangeset
from .errors import TTError, refuse_options
from .memory import DRAM_MEMORY_CONFIG, BufferType, MemoryConfig, ShardOrientation, ShardSpec, TensorMemoryLayout
from .rules import rules
from .tensor import Tensor
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

_IL, _HS, _WS = TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED, TensorMemoryLayout.WIDTH_SHARDED

D = rules("experimental.nlp_create_qkv_heads_decode",
          "experimental/transformer/nlp_create_qkv_heads_decode/device/"
          "nlp_create_qkv_heads_decode_device_operation.cpp")
D_WIDTH = D("Input shape {} must be divisible by num_heads + 2*num_kv_heads = {}", "heads-decode/width-6176",
            "heads-decode/ok",
            source="experimental/transformer/nlp_create_qkv_heads_decode/nlp_create_qkv_heads_decode.cpp")
D_ON_DEVICE = D("Operands to TM need to be on device!",
                unreachable="ttnn 0.81.1 segfaults on a host input before validating it (measured)")
D_DTYPE = D("Unsupported data format", "heads-decode/bfp8", "heads-decode/fp32")
D_TILE = D("Only tile layout is supported for input tensor", "heads-decode/row-major", "heads-decode/ok")
D_SHAPE = D("Unsupported input shape = {}", "heads-decode/64-users", "heads-decode/dim1-2", "heads-decode/4-users")
D_WS_INPUT = D("Current input memory layout is {}. It must be width sharded", "heads-decode/height-sharded-input",
               "heads-decode/width-sharded-input")
D_ROW_MAJOR = D("Shard orientation must be ROW_MAJOR", "heads-decode/col-major-input",
                "heads-decode/width-sharded-input")
D_HEADS = D("num_q_heads={} must be greater than or equal to num_kv_heads={}", "heads-decode/4q-8kv",
            "heads-decode/12q-8kv")
D_GRID = D("Target number of cores {} is greater than total available cores {}", "heads-decode/output-grid-16",
           "heads-decode/output-grid-64", source="tt_metal/common/work_split.cpp")

C = rules("experimental.nlp_concat_heads_decode",
          "experimental/transformer/nlp_concat_heads_decode/device/nlp_concat_heads_decode_device_operation.cpp")
C_DTYPE = C("Unsupported data format", "concat-decode/bfp8", "concat-decode/fp32")
C_TILE = C("Input tensor layout must be TILE but got {}", unreachable="a ROW_MAJOR input cannot be height-sharded "
           "with tile-padded heads, and an interleaved one breaks the sharding rule first")
C_USERS = C("currently only support less than 32 users", "concat-decode/64-users", "concat-decode/8-users")
C_HEADS = C("head_dim must be multiple of TILE_WIDTH", "concat-decode/33-heads", "concat-decode/ok")
C_SHARDED = C("Input tensor must be sharded", "concat-decode/interleaved", "concat-decode/ok")
C_HS = C("Input tensor memory layout must be HEIGHT_SHARDED but got {}", "concat-decode/width-sharded",
         "concat-decode/ok")
C_SHARD_H = C("Shard spec shape[0] ({}) must match input tensor padded shape[-2] ({})",
              "concat-decode/two-users-per-core", "concat-decode/ok")
C_SUBGRID = C("bad optional access", "concat-decode/offset-grid", "concat-decode/offset-grid-with-subgrids")

P = rules("experimental.nlp_create_qkv_heads",
          "experimental/transformer/nlp_create_qkv_heads/device/nlp_create_qkv_heads_device_operation.cpp")
P_SHAPE = P("Unsupported input shape", "heads/width-6176", "heads/ok",
            source="experimental/transformer/nlp_create_qkv_heads/nlp_create_qkv_heads.cpp")
P_DTYPE = P("Unsupported data format", "heads/bfp4", "heads/bfp8")
P_TILE = P("Input tensor layout must be TILE but got {}", "heads/row-major", "heads/ok")
P_SEQ = P("Unsupported input sequence length {} is not equal to 1", "heads/dim1-2", "heads/ok")

K = rules("experimental.nlp_concat_heads",
          "experimental/transformer/nlp_concat_heads/device/nlp_concat_heads_device_operation.cpp")
K_DTYPE = K("Unsupported data format", "concat/bfp4", "concat/bfp8")
K_TILE = K("Input tensor layout must be TILE but got {}", "concat/row-major", "concat/ok")


def _head_dim(width: int, num_heads: int, num_kv_heads: int) -> int | None:
    total = num_heads + 2 * num_kv_heads
    return width // total if width % total == 0 else None


def _padded(n: int) -> int:
    return -(-n // TILE_SIZE) * TILE_SIZE


@device_op(kernel_replay=True)
def nlp_create_qkv_heads(
    input: Tensor,  # noqa: A002
    input_kv: Tensor | None = None,
    *,
    num_heads: int,
    num_kv_heads: int | None = None,
    transpose_k_heads: bool = True,
    kv_tied: bool = False,
    memory_config: MemoryConfig | None = None,
    output_tensors: Any = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """[B, 1, S, (nh + 2 nkv) * hd] -> Q [B, nh, S, hd], K [B, nkv, S, hd] (or [B, nkv, hd, S]), V [B, nkv, S, hd]."""
    op = "experimental.nlp_create_qkv_heads"
    x = input
    refuse_options(op, input_kv=input_kv is not None, kv_tied=kv_tied, output_tensors=output_tensors)
    nkv = num_kv_heads or num_heads
    hd = _head_dim(x.shape[-1], num_heads, nkv)
    P_SHAPE.require(hd is not None)
    if not isinstance(x, Tensor) or x.device_or_none is None:
        raise TTError(op, "Operands to TM need to be on device! {}")
    P_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B))
    P_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    P_SEQ.require(x.shape[1] == 1, x.shape[1])
    mc = memory_config or x.memory_config()
    if x.is_sharded() or mc.is_sharded():
        raise TTError(op, "the simulator models nlp_create_qkv_heads on interleaved tensors only")
    # Heads come out with head_dim rounded up to whole tiles, as the device lays them.
    hdp = _padded(hd)

    def split(t: torch.Tensor, lo: int, n: int) -> torch.Tensor:
        b, _, s, _ = t.shape
        heads = t[..., lo * hd : (lo + n) * hd].reshape(b, s, n, hd).transpose(1, 2)
        return torch.nn.functional.pad(heads, (0, hdp - hd)) if hdp != hd else heads.contiguous()

    q = output(x, per_device(lambda t: split(t, 0, num_heads), x), memory_config=mc)
    k = output(x, per_device(lambda t: split(t, num_heads, nkv), x), memory_config=mc)
    if transpose_k_heads:
        k = Tensor.make([s.transpose(-1, -2).contiguous() for s in k._shards], k.dtype, k.layout, k.device_or_none,
                        mc)
    v = output(x, per_device(lambda t: split(t, num_heads + nkv, nkv), x), memory_config=mc)
    return q, k, v


def _users_grid(cores: int, pool: CoreRangeSet | None, device: Any, start: int = 0) -> CoreRangeSet:
    """Cores start..start+cores-1 of the output grid (the given one, else the whole worker grid) in row order."""
    if pool is None:
        g = device.compute_with_storage_grid_size()
        pool = CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(g.x - 1, g.y - 1))])
    order = pool.cores(row_major=True)
    D_GRID.require(start + cores <= len(order), start + cores, len(order))
    if start == 0 and pool.size() == 1:
        box = pool.bounding_box().grid_size()
        return num_cores_to_corerangeset(cores, box, True) if pool.bounding_box().start == CoreCoord(0, 0) else \
            CoreRangeSet([CoreRange(c, c) for c in order[:cores]]).merge([])
    return CoreRangeSet([CoreRange(c, c) for c in order[start : start + cores]]).merge([])


@device_op(kernel_replay=True)
def nlp_create_qkv_heads_decode(
    input_tensor: Tensor,
    *,
    num_heads: int,
    num_kv_heads: int | None = None,
    output_tensors: Any = None,
    overlap_qk_coregrid: bool = True,
    batch_offset: Tensor | None = None,
    slice_size: int | None = None,
    memory_config: MemoryConfig | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """[1, 1, B, (nh + 2 nkv) * hd] -> Q [1, B, nh, hd], K [1, B, nkv, hd], V [1, B, nkv, hd], each height-sharded
    one user per core: Q and V on the first B cores of the output grid, K on the same cores (or, for a
    width-sharded input without overlap_qk_coregrid, on the next B)."""
    op = "experimental.nlp_create_qkv_heads_decode"
    x = input_tensor
    refuse_options(op, output_tensors=output_tensors, batch_offset=batch_offset, slice_size=slice_size)
    nkv = num_kv_heads or num_heads
    total = num_heads + 2 * nkv
    D_WIDTH.require(x.shape[-1] % total == 0, x.shape[-1], total)
    hd = x.shape[-1] // total
    D_ON_DEVICE.require(isinstance(x, Tensor) and x.device_or_none is not None)
    D_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16))
    D_TILE.require(x.layout == Layout.TILE)
    users = x.shape[2]
    D_SHAPE.require(x.shape[0] == 1 and x.shape[1] == 1 and users <= TILE_SIZE and x.shape[-1] % TILE_SIZE == 0,
                    x.shape)
    xmc = x.memory_config()
    if xmc.is_sharded():
        D_WS_INPUT.require(xmc.memory_layout == _WS, f"TensorMemoryLayout::{xmc.memory_layout.name}")
        D_ROW_MAJOR.require(xmc.shard_spec.orientation == ShardOrientation.ROW_MAJOR)
    D_HEADS.require(num_heads >= nkv, num_heads, nkv)
    # The output grid: a height-sharded config's own grid, else the whole worker grid (any other config is replaced).
    pool = memory_config.shard_spec.grid if (memory_config is not None and memory_config.memory_layout == _HS
                                             and memory_config.shard_spec is not None) else None
    separate_k = xmc.is_sharded() and not overlap_qk_coregrid
    q_grid = _users_grid(users, pool, x.device_or_none)
    k_grid = _users_grid(users, pool, x.device_or_none, users if separate_k else 0)

    def mc(rows: int, grid: CoreRangeSet) -> MemoryConfig:
        return MemoryConfig(_HS, BufferType.L1, ShardSpec(grid, [_padded(rows), hd], ShardOrientation.ROW_MAJOR))

    def split(t: torch.Tensor, lo: int, n: int) -> torch.Tensor:
        return t.narrow(-1, lo * hd, n * hd).reshape(1, t.shape[2], n, hd)

    parts = ((0, num_heads, q_grid), (num_heads, nkv, k_grid), (num_heads + nkv, nkv, q_grid))
    return tuple(
        output(x, per_device(lambda t, lo=lo, n=n: split(t, lo, n), x), memory_config=mc(n, grid))
        for lo, n, grid in parts
    )


@device_op(kernel_replay=True)
def nlp_concat_heads(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None) -> Tensor:
    """[B, nh, S, hd] -> [B, 1, S, nh * hd]."""
    op = "experimental.nlp_concat_heads"
    x = input_tensor
    if not isinstance(x, Tensor) or x.device_or_none is None:
        raise TTError(op, "Device Operations expect device tensors as inputs")
    K_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B))
    K_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    mc = memory_config or x.memory_config()
    if x.is_sharded() or mc.is_sharded():
        raise TTError(op, "the simulator models nlp_concat_heads on interleaved tensors only")
    b, nh, s, hd = x.shape
    return output(x, per_device(lambda t: t.transpose(1, 2).reshape(b, 1, s, nh * hd), x), memory_config=mc)


@device_op(kernel_replay=True)
def nlp_concat_heads_decode(
    input_tensor: Tensor, *, num_heads: int, memory_config: MemoryConfig | None = None,
    output_tensor: Tensor | None = None, sub_core_grids: Any = None
) -> Tensor:
    """[1, B, heads (padded), hd], height-sharded one user per core -> [1, 1, 32, num_heads * hd] width-sharded one
    head per core (the memory_config argument is not used, as on the device), padded heads dropped."""
    op = "experimental.nlp_concat_heads_decode"
    x = input_tensor
    refuse_options(op, output_tensor=output_tensor)
    if not isinstance(x, Tensor) or x.device_or_none is None:
        raise TTError(op, "Operands to TM need to be on device!")
    C_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16))
    C_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    _, users, _, hd = x.shape
    C_USERS.require(x.padded_shape[1] <= TILE_SIZE)
    C_HEADS.require(x.padded_shape[2] >= num_heads)
    xmc = x.memory_config()
    C_SHARDED.require(xmc.is_sharded())
    C_HS.require(xmc.memory_layout == _HS, f"TensorMemoryLayout::{xmc.memory_layout.name}")
    spec = xmc.shard_spec
    C_SHARD_H.require(spec.shape[0] == x.padded_shape[-2], spec.shape[0], x.padded_shape[-2])
    on_subgrids = spec.grid.size() != 1 or spec.grid.bounding_box().start != CoreCoord(0, 0)
    if on_subgrids:
        C_SUBGRID.require(sub_core_grids is not None)
        start = spec.grid.cores()[0]
        order = sub_core_grids.cores(row_major=True)
        cores = order[order.index(start) : order.index(start) + num_heads]
        grid = CoreRangeSet([CoreRange(c, c) for c in cores]).merge([])
    else:
        grid = num_cores_to_corerangeset(num_heads, x.device_or_none.compute_with_storage_grid_size(), True)
    rows = max(users, TILE_SIZE)
    out_mc = MemoryConfig(_WS, BufferType.L1, ShardSpec(grid, [rows, hd], ShardOrientation.ROW_MAJOR))

    def concat(t: torch.Tensor) -> torch.Tensor:
        heads = t.narrow(2, 0, num_heads).reshape(1, 1, users, num_heads * hd)
        return torch.nn.functional.pad(heads, (0, 0, 0, rows - users)) if rows != users else heads

    return output(x, per_device(concat, x), memory_config=out_mc)


__all__ = ["nlp_concat_heads", "nlp_concat_heads_decode", "nlp_create_qkv_heads", "nlp_create_qkv_heads_decode",
           "DRAM_MEMORY_CONFIG"]
