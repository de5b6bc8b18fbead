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
_HOST = "experimental/transformer/nlp_create_qkv_heads/nlp_create_qkv_heads.cpp"
P_Q_HEADS = P("num_q_heads must be greater than 0", "heads-opt/nh-0", "heads/ok", source=_HOST)
P_KV_HEADS = P("num_kv_heads must be greater than 0 when a KV tensor is given", "heads-opt/input-kv/kv-0",
               "heads-opt/input-kv/ok", source=_HOST)
P_Q_FITS = P("num_q_heads ({}) exceeds the Q width ({})", "heads-opt/input-kv/q-heads-exceed-width",
             "heads-opt/input-kv/ok", source=_HOST)
P_KV_FITS = P("{} * num_kv_heads ({}) exceeds the KV width ({})", "heads-opt/input-kv/kv-heads-exceed-width",
              "heads-opt/input-kv/ok", source=_HOST)
P_HEAD_DIMS = P("Head dims must be the same for Q and K, V", "heads-opt/input-kv/head-dim-mismatch",
                "heads-opt/kv-tied/input-kv-two-sections", "heads-opt/input-kv/ok", source=_HOST)
P_TIED_FITS = P("num_q_heads ({}) + num_kv_heads ({}) exceeds the fused width ({})",
                "heads-opt/kv-tied/exceeds-width", "heads-opt/kv-tied/ok", source=_HOST)
P_AMBIGUOUS = P("Ambiguous kv_tied fused input shape: width {} is divisible by both {} (tied) and {} (untied) "
                "sections", "heads-opt/kv-tied/ambiguous", "heads-opt/kv-tied/ok", source=_HOST)
P_FUSED_FITS = P("num_q_heads ({}) + 2 * num_kv_heads ({}) exceeds the fused width ({})",
                 "heads-opt/untied/exceeds-width", "heads/ok", source=_HOST)
P_SHAPE = P("Unsupported input shape", "heads/width-6176", "heads/ok", source=_HOST)
P_GRID = P("Target number of cores {} is greater than total number of available cores {}",
           "heads-opt/sharded/65-heads", "heads-opt/sharded/32q-8kv-hd128", source="tt_metal/common/work_split.cpp")
P_DTYPE = P("Unsupported data format", "heads/bfp4", "heads/bfp8")
P_TILE = P("Input tensor layout must be TILE but got {}", "heads/row-major", "heads/ok")
P_SEQ = P("Unsupported input sequence length {} is not equal to 1", "heads/dim1-2", "heads/ok")
_FULL_HEIGHT = ("the Q output puts one 32-row shard per head on num_heads cores, so only a one-tile-row input "
                "(B * S = 32) gets this far, and any tile-aligned shard of it spans its height")
P_SH_HEIGHT = P("Shard spec shape[0] ({}) must equal physical volume / padded shape[-1] ({})",
                unreachable=_FULL_HEIGHT)
P_SH_OUTPUT = P("Output memory config must be sharded and not WIDTH_SHARDED but got memory_layout: {}",
                "heads-opt/sharded/output-interleaved", "heads-opt/sharded/ok")
P_SH_ORIENTATION = P("Input tensor shard orientation must be ROW_MAJOR but got {}", "heads-opt/sharded/col-major",
                     "heads-opt/sharded/ok")
P_SH_Q_CORES = P("Number of Q heads ({}) must be <= number of cores ({})",
                 unreachable="the Q output's num_heads cores are laid out first and refuse more than the grid")
P_SH_KV_CORES = P("Number of KV heads ({}) must be <= number of cores ({})",
                  unreachable="the K/V outputs' num_kv_heads cores are laid out first and refuse more than the grid")
P_SH_Q_GE_KV = P("Number of Q heads ({}) must be >= number of KV heads ({}), which must be greater than 0",
                 "heads-opt/sharded/q-lt-kv", "heads-opt/sharded/ok")
P_SH_Q_DIV = P("Number of Q heads ({}) must be divisible by number of cores ({})", "heads-opt/sharded/q-not-divisible",
               "heads-opt/sharded/ok")
P_SH_KV_SHARDED = P("Input tensor KV must be sharded", "heads-opt/sharded-kv/kv-interleaved",
                    "heads-opt/sharded-kv/ok")
P_SH_SAME_GRID = P("Input tensor and KV tensor must have the same shard grid", "heads-opt/sharded-kv/kv-other-grid",
                   "heads-opt/sharded-kv/ok")
P_SH_SAME_ORIENTATION = P("Input tensor and KV tensor must have the same shard orientation",
                          "heads-opt/sharded-kv/kv-col-major", "heads-opt/sharded-kv/ok")
P_SH_Q_WIDTH = P("Shard spec shape[1] ({}) must equal (num_q_heads / num_kv_heads) * head_dim ({})",
                 "heads-opt/sharded-kv/q-shard-width", "heads-opt/sharded-kv/ok")
P_SH_KV_DIV = P("Number of KV heads ({}) must be divisible by number of cores ({})",
                "heads-opt/sharded/kv-not-divisible", "heads-opt/sharded/ok")
P_SH_WIDTH = P("Shard spec shape[1] ({}) must equal (num_q_heads / num_kv_heads + {}) * head_dim ({})",
               "heads-opt/sharded/one-core", "heads-opt/sharded/kv-tied-shard-width", "heads-opt/sharded/ok")
P_SH_TRANSPOSE = P("Transpose K heads must be false", "heads-opt/sharded/transpose-k-hd32", "heads-opt/sharded/hd32")
P_IL_OUTPUT = P("Output memory config layout must be INTERLEAVED but got {}", "heads-opt/interleaved/hs-output",
                "heads-opt/interleaved/l1-output")
P_KV_DTYPE = P("KV tensor dtype must be same as Q tensor dtype!", "heads-opt/input-kv/dtype-mismatch",
               "heads-opt/input-kv/kv-bfp4", "heads-opt/input-kv/ok")
P_KV_TILE = P("Input tensor KV layout must be TILE but got {}", "heads-opt/input-kv/kv-row-major",
              "heads-opt/input-kv/ok")
P_KV_BATCH = P("KV tensor batch dim must be same as Q tensor batch!", "heads-opt/input-kv/batch-mismatch",
               "heads-opt/input-kv/batch-2")
P_KV_SEQ1 = P("Unsupported input shape {} is not equal to 1", "heads-opt/input-kv/kv-dim1-2", "heads-opt/input-kv/ok")
P_KV_SEQ = P("KV tensor seq_len dim must be same as Q tensor seq_len!", "heads-opt/input-kv/seq-mismatch",
             "heads-opt/input-kv/ok")
P_KV_Q_SHARDED = P("Input tensor must be sharded when KV tensor is sharded",
                   "heads-opt/input-kv/kv-sharded-q-interleaved", "heads-opt/sharded-kv/ok")
P_KV_SH_HEIGHT = P("KV tensor shard spec shape[0] ({}) must equal physical volume / padded shape[-1] ({})",
                   unreachable=_FULL_HEIGHT)
P_KV_SH_ORIENTATION = P("KV tensor shard orientation must be ROW_MAJOR but got {}",
                        unreachable="a sharded KV input needs a sharded, ROW_MAJOR Q input with the same orientation, "
                                    "checked first")
P_KV_SH_WIDTH = P("KV tensor shard spec shape[1] ({}) must equal {} * head_dim ({})",
                  "heads-opt/sharded-kv/kv-shard-width", "heads-opt/sharded-kv/ok")
P_KV_SH_CORES = P("Number of KV heads ({}) must be divisible by KV tensor number of cores ({})",
                  unreachable="the KV shard width rule fixes the KV input's core count at num_kv_heads")
P_OUT_L1 = P("DFB 'q_out' borrows memory from TensorParameter 'q', but its TensorSpec is not L1-resident (L1 is "
             "required). Both L1 and L1_SMALL are accepted.", "heads-opt/sharded/output-dram-hs",
             "heads-opt/sharded/ok",
             source="experimental/transformer/nlp_create_qkv_heads/device/nlp_create_qkv_heads_program_factory.cpp")

K = rules("experimental.nlp_concat_heads",
          "experimental/transformer/nlp_concat_heads/device/nlp_concat_heads_device_operation.cpp")
K_NO_SHARD_SPEC = K("bad optional access", "heads-opt/concat-interleaved/height-output",
                    "heads-opt/concat-interleaved/width-output", "heads-opt/concat-interleaved/dram")
K_DTYPE = K("Unsupported data format", "concat/bfp4", "concat/bfp8")
K_TILE = K("Input tensor layout must be TILE but got {}", "concat/row-major", "concat/ok")
K_NOT_WIDTH = K("Input tensor memory layout must not be WIDTH_SHARDED but got {}",
                "heads-opt/concat-sharded/width-sharded-input", "heads-opt/concat-sharded/ok")
K_SHARD_WIDTH = K("Input tensor shard width ({}) must equal padded width ({})",
                  "heads-opt/concat-sharded/block-input-narrow", "heads-opt/concat-sharded/block-input-full")
K_SHARD_HEIGHT = K("Input tensor shard height ({}) must be divisible by padded height ({})",
                   "heads-opt/concat-sharded/shard-96-rows", "heads-opt/concat-sharded/shard-64-rows-3-heads")
K_HEADS_DIVISIBLE = K("Input tensor padded height ({}) must be divisible by shard height / padded height ({} / {})",
                      "heads-opt/concat-sharded/three-heads-per-core", "heads-opt/concat-sharded/two-heads-per-core")
K_OUT_NOT_HS = K("Output memory config layout must not be HEIGHT_SHARDED but got {}",
                 "heads-opt/concat-sharded/height-output-all-heads", "heads-opt/concat-sharded/block-output")
K_SHARDED_OUT = K("Sharded input requires a sharded output memory config but got {}",
                  "heads-opt/concat-sharded/interleaved-output", "heads-opt/concat-sharded/ok")
K_OUT_L1 = K("DFB 'out0' borrows memory from TensorParameter 'output', but its TensorSpec is not L1-resident (L1 is "
             "required). Both L1 and L1_SMALL are accepted.", "heads-opt/concat-sharded/dram-output",
             "heads-opt/concat-sharded/ok",
             source="experimental/transformer/nlp_concat_heads/device/nlp_concat_heads_program_factory.cpp")


def _padded(n: int) -> int:
    return -(-n // TILE_SIZE) * TILE_SIZE


def _host_head_dim(x: Tensor, kv: Tensor | None, nh: int, nkv: int, kv_tied: bool) -> int:
    """head_dim as the host derives it from the (padded) widths, with its checks."""
    P_Q_HEADS.require(nh > 0)
    width = x.padded_shape[-1]
    if kv is not None:
        P_KV_HEADS.require(nkv > 0)
        sections = 1 if kv_tied else 2
        kv_width = kv.padded_shape[-1]
        P_Q_FITS.require(nh <= width, nh, width)
        P_KV_FITS.require(sections * nkv <= kv_width, sections, nkv, kv_width)
        P_SHAPE.require(width % nh == 0 and kv_width % (sections * nkv) == 0)
        hd = width // nh
        P_HEAD_DIMS.require(kv_width // (sections * nkv) == hd)
        return hd
    if kv_tied:
        P_TIED_FITS.require(nh + nkv <= width, nh, nkv, width)
        P_SHAPE.require(width % (nh + nkv) == 0)
        P_AMBIGUOUS.require(width % (nh + 2 * nkv) != 0, width, nh + nkv, nh + 2 * nkv)
        return width // (nh + nkv)
    P_FUSED_FITS.require(nh + 2 * nkv <= width, nh, nkv, width)
    P_SHAPE.require(width % (nh + 2 * nkv) == 0)
    return width // (nh + 2 * nkv)


def _shard_cores(mc: MemoryConfig) -> list[CoreCoord]:
    spec = mc.shard_spec
    return spec.grid.cores(row_major=spec.orientation == ShardOrientation.ROW_MAJOR)


def _column_blocks(mc: MemoryConfig) -> dict[CoreCoord, int]:
    """Which column block of a full-height sharded tensor each core holds (a height-sharded one: its first core
    holds it all)."""
    cores = _shard_cores(mc)
    if mc.memory_layout == TensorMemoryLayout.BLOCK_SHARDED:
        x0 = mc.shard_spec.grid.bounding_box().start.x
        return {c: c.x - x0 for c in cores}
    if mc.memory_layout == _HS:
        return {cores[0]: 0}
    return {c: i for i, c in enumerate(cores)}


def _sharded_sources(x: Tensor, kv: Tensor | None, nh: int, nkv: int, hd: int, kv_tied: bool,
                     q_grid: CoreRangeSet) -> tuple[list, list, list]:
    """Where each output head's columns come from, as (tensor index 0 = input / 1 = input_kv, first column) or None
    for a read the device lands on unrelated data. The sharded program reads head after head from the input's L1
    shards: Q head h from source core h // (nh / cores), K/V head j from core j // (nkv / cores), each at its offset
    in that core's own [q heads | k heads | v heads] block (or [q heads] and [k heads | v heads] blocks of the two
    inputs; tied K/V read the same columns). Source core i is looked up at (i % w, i // w), w the width of the Q
    output grid's bounding box, so a shard grid laid out otherwise reads other cores' L1."""
    xmc = x.memory_config()
    in_cores = len(_shard_cores(xmc))
    sw = xmc.shard_spec.shape[1]
    qpc = nh // in_cores
    kv_src = kv if kv is not None else x
    kvpc = nkv // len(_shard_cores(kv_src.memory_config()))
    ksw = kv_src.memory_config().shard_spec.shape[1]
    w = q_grid.bounding_box().end.x + 1
    blocks = [_column_blocks(xmc), _column_blocks(kv_src.memory_config())]
    in_l1 = [xmc.buffer_type != BufferType.DRAM, kv_src.memory_config().buffer_type != BufferType.DRAM]

    def source(which: int, core_index: int, offset: int, width: int) -> tuple[int, int] | None:
        blk = blocks[which].get(CoreCoord(core_index % w, core_index // w))
        if blk is None or not in_l1[which]:
            return None
        return which, blk * width + offset

    k_base = 0 if kv is not None else qpc * hd
    v_base = k_base if kv_tied else k_base + kvpc * hd
    kv_which = 1 if kv is not None else 0
    q = [source(0, h // qpc, (h % qpc) * hd, sw) for h in range(nh)]
    k = [source(kv_which, j // kvpc, k_base + (j % kvpc) * hd, ksw) for j in range(nkv)]
    v = [source(kv_which, j // kvpc, v_base + (j % kvpc) * hd, ksw) for j in range(nkv)]
    return q, k, v


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
    """[B, 1, S, (nh + 2 nkv) * hd] -> Q [B, nh, S, hd], K [B, nkv, S, hd] (or [B, nkv, hd, S]), V [B, nkv, S, hd].

    input_kv: Q heads from input [B, 1, S, nh * hd], K and V from input_kv [B, 1, S, 2 * nkv * hd]. kv_tied: one K/V
    section (nkv * hd wide) read for both K and V. A sharded input (full-height shards, one per core) is read per core:
    each shard is that core's own [nh/c q heads | nkv/c k heads | nkv/c v heads] block (with input_kv: [nh/c q heads]
    and [nkv/c k heads | nkv/c v heads]), and Q/K/V come out height-sharded one [32, hd] head per core.
    output_tensors: three preallocated outputs, used as they are (their specs are not checked)."""
    op = "experimental.nlp_create_qkv_heads"
    x, kv = input, input_kv
    nkv = num_heads if num_kv_heads is None else num_kv_heads
    hd = _host_head_dim(x, kv, num_heads, nkv, kv_tied)
    for t in (x, kv):
        if t is not None and (not isinstance(t, Tensor) or t.device_or_none is None):
            raise TTError(op, "Operands to TM need to be on device! {}")
    device = x.device_or_none
    mc = memory_config or x.memory_config()
    # Heads come out with head_dim rounded up to whole tiles, as the device lays them.
    hdp = _padded(hd)
    b, _, s, _ = x.shape
    shapes = [(b, num_heads, s, hdp), (b, nkv, hdp, s) if transpose_k_heads else (b, nkv, s, hdp), (b, nkv, s, hdp)]
    given = list(output_tensors) if output_tensors is not None and len(output_tensors) == 3 else None
    q_grid = None
    if given is not None:
        mcs = [t.memory_config() for t in given]
    elif mc.is_sharded():
        # The output specs are built before the device operation validates its inputs.
        from .placement import check_placement

        g = device.compute_with_storage_grid_size()
        grids = []
        for n in (num_heads, nkv):
            P_GRID.require(n <= g.x * g.y, n, g.x * g.y)
            grids.append(num_cores_to_corerangeset(n, g, True))
        q_grid = grids[0]
        mcs = [MemoryConfig(mc.memory_layout, mc.buffer_type, ShardSpec(grid, [TILE_SIZE, hd],
                                                                         ShardOrientation.ROW_MAJOR))
               for grid in (grids[0], grids[1], grids[1])]
        for shape, m in zip(shapes, mcs, strict=True):
            check_placement(op, device, shape, x.layout, m, x.dtype)
    else:
        mcs = [mc, mc, mc]
    P_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B))
    P_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    P_SEQ.require(x.padded_shape[1] == 1, x.padded_shape[1])
    xmc = x.memory_config()
    if x.is_sharded():
        spec = xmc.shard_spec
        P_SH_HEIGHT.require(spec.shape[0] * x.padded_shape[-1] == _volume(x.padded_shape), spec.shape[0],
                            _volume(x.padded_shape) // x.padded_shape[-1])
        P_SH_OUTPUT.require(mc.is_sharded() and mc.memory_layout != _WS,
                            f"TensorMemoryLayout::{mc.memory_layout.name}")
        P_SH_ORIENTATION.require(spec.orientation == ShardOrientation.ROW_MAJOR,
                                 f"ShardOrientation::{spec.orientation.name}")
        g = device.compute_with_storage_grid_size()
        P_SH_Q_CORES.require(num_heads <= g.x * g.y, num_heads, g.x * g.y)
        P_SH_KV_CORES.require(nkv <= g.x * g.y, nkv, g.x * g.y)
        P_SH_Q_GE_KV.require(num_heads >= nkv > 0, num_heads, nkv)
        cores = spec.num_cores()
        P_SH_Q_DIV.require(num_heads % cores == 0, num_heads, cores)
        if kv is not None:
            P_SH_KV_SHARDED.require(kv.is_sharded())
            kspec = kv.memory_config().shard_spec
            P_SH_SAME_GRID.require(kspec.grid == spec.grid)
            P_SH_SAME_ORIENTATION.require(kspec.orientation == spec.orientation)
            P_SH_Q_WIDTH.require(spec.shape[1] == num_heads // nkv * hd, spec.shape[1], num_heads // nkv * hd)
        else:
            P_SH_KV_DIV.require(nkv % cores == 0, nkv, cores)
            sections = 1 if kv_tied else 2
            want = (num_heads // nkv + sections) * hd
            P_SH_WIDTH.require(spec.shape[1] == want, spec.shape[1], sections, want)
        P_SH_TRANSPOSE.require(not transpose_k_heads)
    else:
        P_IL_OUTPUT.require(mc.memory_layout == _IL, f"TensorMemoryLayout::{mc.memory_layout.name}")
    if kv is not None:
        P_KV_DTYPE.require(kv.dtype == x.dtype)
        P_KV_TILE.require(kv.layout == Layout.TILE, f"Layout::{kv.layout.name}")
        P_KV_BATCH.require(kv.padded_shape[0] == x.padded_shape[0])
        P_KV_SEQ1.require(kv.padded_shape[1] == 1, kv.padded_shape[1])
        P_KV_SEQ.require(kv.padded_shape[2] == x.padded_shape[2])
        if kv.is_sharded():
            P_KV_Q_SHARDED.require(x.is_sharded())
            kspec = kv.memory_config().shard_spec
            P_KV_SH_HEIGHT.require(kspec.shape[0] * kv.padded_shape[-1] == _volume(kv.padded_shape), kspec.shape[0],
                                   _volume(kv.padded_shape) // kv.padded_shape[-1])
            P_KV_SH_ORIENTATION.require(kspec.orientation == ShardOrientation.ROW_MAJOR,
                                        f"ShardOrientation::{kspec.orientation.name}")
            sections = 1 if kv_tied else 2
            P_KV_SH_WIDTH.require(kspec.shape[1] == sections * hd, kspec.shape[1], sections, sections * hd)
            P_KV_SH_CORES.require(nkv % kspec.num_cores() == 0, nkv, kspec.num_cores())
    if x.is_sharded():
        for m in mcs:
            P_OUT_L1.require(m.buffer_type in (BufferType.L1, BufferType.L1_SMALL))

    if x.is_sharded():
        if q_grid is None:
            g = device.compute_with_storage_grid_size()
            q_grid = num_cores_to_corerangeset(num_heads, g, True)
        sources = _sharded_sources(x, kv, num_heads, nkv, hd, kv_tied, q_grid)
    else:
        k_src = (1, 0) if kv is not None else (0, num_heads * hd)
        v_src = k_src if kv_tied else (k_src[0], k_src[1] + nkv * hd)
        sources = ([(0, h * hd) for h in range(num_heads)],
                   [(k_src[0], k_src[1] + j * hd) for j in range(nkv)],
                   [(v_src[0], v_src[1] + j * hd) for j in range(nkv)])

    def heads(xs: torch.Tensor, kvs: torch.Tensor | None, cols: list, transpose: bool) -> torch.Tensor:
        bb, _, ss, _ = xs.shape
        parts = []
        for src in cols:
            if src is None:
                parts.append(torch.full((bb, ss, hd), float("nan")))
            else:
                t = xs if src[0] == 0 else kvs
                parts.append(t[:, 0, :, src[1] : src[1] + hd])
        out = torch.stack(parts, dim=1) if parts else xs.new_zeros((bb, 0, ss, hd))
        if hdp != hd:
            out = torch.nn.functional.pad(out, (0, hdp - hd))
        return out.transpose(-1, -2).contiguous() if transpose else out.contiguous()

    results = []
    for i, cols in enumerate(sources):
        transpose = transpose_k_heads and i == 1
        shards = per_device(lambda xs, kvs, cols=cols, transpose=transpose: heads(xs, kvs, cols, transpose), x, kv)
        if given is None:
            results.append(output(x, shards, memory_config=mcs[i]))
            continue
        out = given[i]
        if (tuple(out.shape), out.dtype, out.layout) != (shapes[i], x.dtype, x.layout) or (
                x.is_sharded() and out.memory_config() != mcs[i]):
            # Written through the input's layout into a buffer laid out otherwise: contents the caller cannot use.
            shards = [torch.full(tuple(out.shape), float("nan")) for _ in shards]
        out._rebind(output(x, shards, out.dtype, out.layout, out.memory_config()))
        results.append(out)
    return tuple(results)


def _volume(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


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


def _core_blocks(mc: MemoryConfig) -> dict[CoreCoord, tuple[int, int]]:
    """The (row block, column block) of the tensor's physical 2-D view that each core of a sharded config holds."""
    spec = mc.shard_spec
    row_major = spec.orientation == ShardOrientation.ROW_MAJOR
    cores = _shard_cores(mc)
    if mc.memory_layout == TensorMemoryLayout.BLOCK_SHARDED:
        start = spec.grid.bounding_box().start
        return {c: (c.y - start.y, c.x - start.x) if row_major else (c.x - start.x, c.y - start.y) for c in cores}
    if mc.memory_layout == _WS:
        return {c: (0, i) for i, c in enumerate(cores)}
    return {c: (i, 0) for i, c in enumerate(cores)}


@device_op(kernel_replay=True)
def nlp_concat_heads(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None) -> Tensor:
    """[B, nh, S, hd] -> [B, 1, S, nh * hd]; the output config defaults to the input's.

    A height-sharded (or block-sharded) input is concatenated core by core: each core's shard of hps = shard height
    / padded S whole heads becomes that core's [S, hps * hd] output shard (the output config's layout and buffer on
    the input's grid and orientation), so the result is the concatenation wherever that shard grid tiles the output
    as the input's does."""
    op = "experimental.nlp_concat_heads"
    x = input_tensor
    if not isinstance(x, Tensor) or x.device_or_none is None:
        raise TTError(op, "Device Operations expect device tensors as inputs")
    mc = memory_config or x.memory_config()
    b, nh, s, hd = x.shape
    sp, hdp = x.padded_shape[-2], x.padded_shape[-1]
    out_shape = (b, 1, s, nh * hd)
    out_mc = mc
    if mc.is_sharded():  # the output spec is built before the device operation validates its input
        from .placement import check_placement

        K_NO_SHARD_SPEC.require(x.is_sharded())
        spec = x.memory_config().shard_spec
        hps = spec.shape[0] // sp
        if hps == 0:
            raise TTError(op, f"shard height {spec.shape[0]} holds no whole head of {sp} rows (ttnn 0.81.1 divides by "
                              "zero here and dies with SIGFPE)")
        out_mc = MemoryConfig(mc.memory_layout, mc.buffer_type,
                              ShardSpec(spec.grid, [spec.shape[0] // hps, spec.shape[1] * hps], spec.orientation))
        check_placement(op, x.device_or_none, out_shape, Layout.TILE, out_mc, x.dtype)
    K_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B))
    K_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    if not x.is_sharded():
        return output(x, per_device(lambda t: t.transpose(1, 2).reshape(b, 1, s, nh * hd), x), memory_config=mc)
    xmc = x.memory_config()
    spec = xmc.shard_spec
    K_NOT_WIDTH.require(xmc.memory_layout != _WS, f"TensorMemoryLayout::{xmc.memory_layout.name}")
    K_SHARD_WIDTH.require(spec.shape[1] == hdp, spec.shape[1], hdp)
    K_SHARD_HEIGHT.require(spec.shape[0] % sp == 0, spec.shape[0], sp)
    hps = spec.shape[0] // sp
    K_HEADS_DIVISIBLE.require(x.padded_shape[1] % hps == 0, x.padded_shape[1], spec.shape[0], sp)
    K_OUT_NOT_HS.require(mc.memory_layout != _HS, f"TensorMemoryLayout::{mc.memory_layout.name}")
    K_SHARDED_OUT.require(mc.is_sharded(), f"TensorMemoryLayout::{mc.memory_layout.name}")
    K_OUT_L1.require(out_mc.buffer_type in (BufferType.L1, BufferType.L1_SMALL))
    in_blocks = _core_blocks(xmc)
    out_blocks = _core_blocks(out_mc)
    in_l1 = xmc.buffer_type != BufferType.DRAM

    def concat(t: torch.Tensor) -> torch.Tensor:
        full = torch.nn.functional.pad(t.float(), (0, hdp - hd, 0, sp - s)).reshape(-1, hdp)
        out = torch.full((b * sp, nh * hdp), float("nan"))
        for core, (row_block, _) in in_blocks.items():
            rows = full[row_block * spec.shape[0] : (row_block + 1) * spec.shape[0]]
            if not len(rows) or not in_l1:
                continue
            # Each core writes its heads side by side into its own output shard.
            block = rows.reshape(-1, sp, hdp).transpose(0, 1).reshape(sp, -1)
            r, c = out_blocks[core]
            w = out_mc.shard_spec.shape[1]
            dst = out[r * sp : (r + 1) * sp, c * w : c * w + block.shape[1]]
            dst.copy_(block[: dst.shape[0], : dst.shape[1]])
        if hdp != hd:  # the heads land hdp apart: the logical row reads them at that spacing
            out = out[:, : nh * hd]
        return out.reshape(b, sp, nh * hd)[:, :s].reshape(b, 1, s, nh * hd)

    return output(x, per_device(concat, x), memory_config=out_mc)


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


# ---------------- nlp_create_qkv_heads_falcon7b ----------------
F = rules("experimental.nlp_create_qkv_heads_falcon7b",
          "experimental/transformer/nlp_create_qkv_heads_falcon7b/device/"
          "nlp_create_qkv_heads_falcon7b_device_operation.cpp")
F_SHARDED_OUT = F("Sharded output memory config is not supported for nlp_create_qkv_heads_falcon7b",
                  "falcon7b-heads/height-sharded-out", "falcon7b-heads/batch-2-bfp8-l1-out")
F_HOST = F("Device Operations expect device tensors as inputs", "falcon7b-heads/host", "falcon7b-heads/ok",
           source="ttnn/cpp/ttnn/device_operation.hpp")
F_DTYPE = F("Unsupported data format", "falcon7b-heads/uint32", "falcon7b-heads/fp32-l1-in")
F_TILE = F("Input tensor layout must be TILE but got {}", "falcon7b-heads/row-major", "falcon7b-heads/ok")
F_SEQ = F("Input shape[2] ({}) must be divisible by TILE_HEIGHT ({})",
          unreachable="the rule reads the padded shape, and a TILE tensor's rows are always padded to 32")
F_SHAPE = F("Unsupported input shape", "falcon7b-heads/width-4608", "falcon7b-heads/dim1-2", "falcon7b-heads/ok")
F_INTERLEAVED_OUT = F("Output memory config layout must be INTERLEAVED but got {}",
                      unreachable="a sharded output config fails the output-spec check first")


@device_op()
def nlp_create_qkv_heads_falcon7b(
    input: Tensor,  # noqa: A002
    *,
    memory_config: MemoryConfig | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Falcon-7B's fixed split of a fused QKV [B, 1, S, 4672]: Q [B, 71, S, 64] (columns 0..4543), K [B, 1, S, 64]
    (4544..4607) and V [B, 1, S, 64] (4608..4671), in the input's dtype, TILE, in memory_config or else the input's.
    The outputs' sequence dimension is the input's padded one (a 100-row input gives 128-row heads, measured)."""
    x = input
    mc = memory_config or (x.memory_config() if isinstance(x, Tensor) and x.device_or_none is not None
                           else DRAM_MEMORY_CONFIG)
    F_SHARDED_OUT.require(not mc.is_sharded())
    F_HOST.require(isinstance(x, Tensor) and x.device_or_none is not None)
    F_DTYPE.require(x.dtype in (DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B))
    F_TILE.require(x.layout == Layout.TILE, f"Layout::{x.layout.name}")
    padded = tuple(x.padded_shape)
    F_SEQ.require(padded[2] % TILE_SIZE == 0, padded[2], TILE_SIZE)
    F_SHAPE.require(len(padded) == 4 and padded[1] == 1 and padded[3] == 4672)
    F_INTERLEAVED_OUT.require(mc.memory_layout == TensorMemoryLayout.INTERLEAVED,
                              f"TensorMemoryLayout::{mc.memory_layout.name}")
    b, s = padded[0], padded[2]

    def part(lo: int, heads: int) -> Any:
        def split(t: torch.Tensor) -> torch.Tensor:
            full = torch.nn.functional.pad(t, (0, 0, 0, s - t.shape[2]))  # the padded rows read as zeros
            return full[..., lo:lo + heads * 64].reshape(b, s, heads, 64).transpose(1, 2).contiguous()
        return split

    return tuple(output(x, per_device(part(lo, n), x), x.dtype, Layout.TILE, mc)
                 for lo, n in ((0, 71), (4544, 1), (4608, 1)))
