"""rotary_embedding_llama: out = x * cos + (x @ T) * sin, T applied to every 32-wide tile of head_dim.

T is the caller's transformation matrix (for Llama, the pairwise rotation T[2k, 2k+1] = 1, T[2k+1, 2k] = -1), so a
model that passes the wrong matrix or non-interleaved cos/sin gets wrong numbers here, as it would on hardware.

Decode mode works on height-sharded tensors, one user per core: x [1, B, heads (padded to 32), hd] with a
[padded heads, hd] shard per user, cos/sin [1, B, 32, hd] with a [32, hd] shard per user (row 0 holds the user's
position), and the transformation matrix one [32, 32] tile per core. Prefill takes interleaved x [b, heads, S, hd]
with cos/sin [1, 1 or heads, S, hd] and a single [1, 1, 32, 32] transformation matrix.
"""

from __future__ import annotations

from typing import Any

import torch

from .compute import derived, f32, f32_cached, output, per_device, reference_precision
from .memory import MemoryConfig, TensorMemoryLayout
from .rules import rules
from .tensor import Tensor
from .trace import device_op
from .types import TILE_SIZE, DataType, Layout

_HS, _IL = TensorMemoryLayout.HEIGHT_SHARDED, TensorMemoryLayout.INTERLEAVED
R = rules("experimental.rotary_embedding_llama",
          "experimental/transformer/rotary_embedding_llama/device/rotary_embedding_llama_device_operation.cpp")
_NAMES = {"input": "input tensor", "cos": "cos tensor", "sin": "sin tensor", "trans_mat": "transformation matrix"}
ON_DEVICE = {k: R(f"{v} to rotary embedding need to be on device!",
                  unreachable="ttnn 0.81.1 segfaults on a host tensor before validating it (measured); the "
                              "simulator raises this message instead") for k, v in _NAMES.items()}
TILIZED = {k: R(f"{v} to rotary embedding must be tilized", f"rope/{k}-row-major", "rope/decode/ok")
           for k, v in _NAMES.items()}
FP32_ACC_WIDE_HEADS = R("If head_dim is > 128, fp32_dest_acc_en must be False", "rope/prefill/hd256-fp32-acc",
                        "rope/prefill/hd256")
HEAD_DIM_MAX = R("Head dim must be less than 256", "rope/prefill/hd512", "rope/prefill/hd256")
HEAD_DIM_TILE = R("Head dim must be a multiple of TILE_WIDTH in decode mode", "rope/decode/hd48-interleaved",
                  "rope/prefill/hd48")
BF16_ONLY = R("All input tensors must have dtype = bfloat16", "rope/decode/bfp8-input", "rope/prefill/fp32-cos",
              "rope/decode/ok")
SAME_LAYOUT = R("Input tensor and output tensor must have same memory layout", "rope/decode/dram-output",
                "rope/decode/ok")
COS_SIN_DIMS = R("Cos and Sin dims must match", "rope/prefill/sin-shorter", "rope/prefill/ok")
DECODE_SEQ1 = R("rotary_embedding_llama currently only supports sharded inputs in decode mode, and therefore, "
                "seq_len (in dim 0) must be 1.", "rope/decode/dim0-2", "rope/decode/ok")
DECODE_HS = {k: R(m, f"rope/decode/{k}-interleaved", "rope/decode/ok") for k, m in (
    ("input", "Sharded inputs for RoPE must be HEIGHT_SHARDED."),
    ("cos", "cos tensor for RoPE must be HEIGHT_SHARDED."),
    ("sin", "sin tensor for RoPE must be HEIGHT_SHARDED."),
    ("trans_mat", "transformation matrix for RoPE must be HEIGHT_SHARDED."))}
DECODE_BATCH_CORES = R("In decode mode, RoPE is parallelized over batch dimension, and therefore, batch size must be "
                       "less than or equal to the number of cores",
                       unreachable="a height-sharded input with one user per core cannot hold more users than the "
                                   "grid has cores, and an interleaved one breaks the HEIGHT_SHARDED rule first")
DECODE_COS_BATCH = R("Cos and Sin must have the same batch size as the input", "rope/decode/cos-16-users",
                     "rope/decode/ok")
DECODE_COS_SHARD = R("In decode mode, RoPE only supports n_heads (shard_shape[0]) less than equal to TILE_HEIGHT",
                     "rope/decode/cos-shard-64", "rope/decode/ok")
TRANS_DIMS01 = R("Transformation matrix must have 1st & 2nd dim equal to 1", "rope/decode/trans-mat-2x",
                 "rope/decode/ok")
TRANS_DIM2 = R("Transformation matrix must have 3rd dim equal to TILE_HEIGHT", "rope/decode/trans-shard-64",
               "rope/prefill/trans-mat-64", "rope/decode/ok")
TRANS_DIM3 = R("Transformation matrix must have 4th dim equal to TILE_WIDTH", "rope/prefill/trans-mat-wide",
               "rope/prefill/trans-mat-shard-width", "rope/prefill/ok")
DECODE_ONE_USER_PER_CORE = R("DFB 'cos' (entry_size {} * num_entries {} = {} bytes) is larger than the per-bank "
                             "allocation of its borrowed TensorParameter 'cos' ({} bytes).",
                             "rope/decode/two-users-per-core", "rope/decode/ok")
PREFILL_INTERLEAVED = R("Input tensor must be interleaved in prefill mode", "rope/prefill/input-sharded",
                        "rope/prefill/ok")
PREFILL_COS_DIMS = R("Cos dims must match input dims: cos.shape = {}, head_dim = {}", "rope/prefill/cos-hd-32",
                     "rope/prefill/ok")
PREFILL_COS_HEADS = R("Num heads in cos/sin must match input tensor num heads or be 1. Expected {}, got {}",
                      "rope/prefill/cos-2-heads", "rope/prefill/cos-per-head")
PREFILL_COS_LAYOUT = R("Cos tensor must be either INTERLEAVED or HEIGHT_SHARDED for prefill RoPE",
                       "rope/prefill/cos-width-sharded", "rope/prefill/cos-height-sharded")
PREFILL_COS_SIN_KIND = R("Cos and sin must both be HEIGHT_SHARDED or both be INTERLEAVED for prefill RoPE",
                         "rope/prefill/cos-sharded-sin-not", "rope/prefill/cos-height-sharded")
PREFILL_HS_BROADCAST = R("HEIGHT_SHARDED cos/sin in prefill RoPE requires head-broadcast (cos.shape[1]==1), got {}",
                         "rope/prefill/cos-sharded-per-head", "rope/prefill/cos-height-sharded")
PREFILL_HS_HEIGHT = {k: R(f"HEIGHT_SHARDED {k} shard height must equal TILE_HEIGHT for prefill RoPE",
                          f"rope/prefill/{k}-shard-64", "rope/prefill/cos-height-sharded") for k in ("cos", "sin")}
PREFILL_HS_WIDTH = {k: R(f"HEIGHT_SHARDED {k} shard width must equal padded head_dim ({{}}) for prefill RoPE, "
                         "got {}", unreachable="a height-sharded shard spans the whole width, which the cos dims "
                                               "rule already ties to head_dim") for k in ("cos", "sin")}
PREFILL_TRANS_LAYOUT = R("Transformation matrix must be either INTERLEAVED or HEIGHT_SHARDED for prefill RoPE",
                         "rope/prefill/trans-mat-width-sharded", "rope/prefill/trans-mat-height-sharded")
PREFILL_TRANS_SHARD = {
    "height": R("HEIGHT_SHARDED trans_mat shard height must equal TILE_HEIGHT for prefill RoPE",
                "rope/prefill/trans-mat-shard-height", "rope/prefill/trans-mat-height-sharded"),
    "width": R("HEIGHT_SHARDED trans_mat shard width must equal TILE_WIDTH for prefill RoPE",
               unreachable="the 4th-dim rule already holds the matrix's width to one tile"),
}


def _signed_permutation(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    tile = t.reshape(-1, TILE_SIZE, TILE_SIZE)[0].float()
    src = tile.abs().argmax(0)
    sign = tile.gather(0, src[None])[0]
    ok = bool(((tile != 0).sum(0) == 1).all()) and bool((sign.abs() == 1).all())
    return (src, sign) if ok else None


def signed_permutation(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(source column, sign) per output column when the first 32x32 tile of t has exactly one +-1 per column and
    zeros elsewhere (Llama's rotation matrix is one), else None."""
    return derived(t, "signed_permutation", _signed_permutation)


def _layout(t: Tensor) -> TensorMemoryLayout:
    return t.memory_config().memory_layout


def _validate(x: Tensor, cos: Tensor, sin: Tensor, tm: Tensor, decode: bool, out_mc: MemoryConfig,
              compute_kernel_config: Any) -> None:
    named = {"input": x, "cos": cos, "sin": sin, "trans_mat": tm}
    for k, t in named.items():
        ON_DEVICE[k].require(isinstance(t, Tensor) and t.device_or_none is not None)
    for k, t in named.items():
        TILIZED[k].require(t.layout == Layout.TILE)
    hd = x.shape[-1]
    if compute_kernel_config is not None and hd > 128:
        FP32_ACC_WIDE_HEADS.require(not compute_kernel_config.fp32_dest_acc_en)
    HEAD_DIM_MAX.require(hd <= 256)
    if decode:
        HEAD_DIM_TILE.require(hd % TILE_SIZE == 0)
    BF16_ONLY.require(all(t.dtype == DataType.BFLOAT16 or reference_precision(t) for t in named.values()))
    SAME_LAYOUT.require(out_mc.memory_layout == _layout(x))
    COS_SIN_DIMS.require(tuple(cos.shape) == tuple(sin.shape))
    if decode:
        DECODE_SEQ1.require(x.shape[0] == 1)
        for k, t in named.items():
            DECODE_HS[k].require(_layout(t) == _HS)
        users = x.shape[1]
        gx, gy = x.device_or_none.chip.grid
        DECODE_BATCH_CORES.require(users <= gx * gy)
        DECODE_COS_BATCH.require(cos.shape[1] == users)
        DECODE_COS_SHARD.require(cos.memory_config().shard_spec.shape[0] <= TILE_SIZE)
        TRANS_DIMS01.require(tm.shape[0] == 1 and tm.shape[1] == 1)
        tsh = tm.memory_config().shard_spec.shape
        TRANS_DIM2.require(tsh[0] == TILE_SIZE)
        TRANS_DIM3.require(tsh[1] == TILE_SIZE)
        # One user per core: the kernel stages the user's cos/sin tile once per head tile of its shard.
        xsh = x.memory_config().shard_spec.shape
        per_core = xsh[0] // x.padded_shape[-2]
        if per_core > 1:  # the kernel stages a cos tile per user and head-dim tile; the cos shard holds one user
            wt = x.padded_shape[-1] // TILE_SIZE
            cos_tiles = cos.memory_config().shard_spec.shape[0] // TILE_SIZE * wt
            raise DECODE_ONE_USER_PER_CORE.error(2048, per_core * wt, 2048 * per_core * wt, 2048 * cos_tiles)
        return
    PREFILL_INTERLEAVED.require(_layout(x) == _IL)
    PREFILL_COS_DIMS.require(cos.shape[0] == 1 and cos.shape[-1] == hd, list(cos.shape), hd)
    PREFILL_COS_HEADS.require(cos.shape[1] in (1, x.shape[1]), x.shape[1], cos.shape[1])
    PREFILL_COS_LAYOUT.require(_layout(cos) in (_IL, _HS))
    PREFILL_COS_SIN_KIND.require(_layout(cos) == _layout(sin))
    if _layout(cos) == _HS:
        PREFILL_HS_BROADCAST.require(cos.shape[1] == 1, cos.shape[1])
        for k, t in (("cos", cos), ("sin", sin)):
            sh = t.memory_config().shard_spec.shape
            PREFILL_HS_HEIGHT[k].require(sh[0] == TILE_SIZE)
            PREFILL_HS_WIDTH[k].require(sh[1] == x.padded_shape[-1], x.padded_shape[-1], sh[1])
    TRANS_DIMS01.require(tm.shape[0] == 1 and tm.shape[1] == 1)
    PREFILL_TRANS_LAYOUT.require(_layout(tm) in (_IL, _HS))
    if _layout(tm) != _HS:  # a sharded matrix is held to its shard, which may repeat the tile down the cores
        TRANS_DIM2.require(tm.shape[-2] == TILE_SIZE)
    TRANS_DIM3.require(tm.shape[-1] == TILE_SIZE)
    if _layout(tm) == _HS:
        sh = tm.memory_config().shard_spec.shape
        PREFILL_TRANS_SHARD["height"].require(sh[0] == TILE_SIZE)
        PREFILL_TRANS_SHARD["width"].require(sh[1] == TILE_SIZE)


@device_op(kernel_replay=True)
def rotary_embedding_llama(
    input_tensor: Tensor,
    cos_cache: Tensor,
    sin_cache: Tensor,
    trans_mat: Tensor,
    is_decode_mode: bool = False,
    *,
    memory_config: MemoryConfig | None = None,
    compute_kernel_config: Any = None,
) -> Tensor:
    x_in = input_tensor
    out_mc = memory_config or (x_in.memory_config() if isinstance(x_in, Tensor) else None)
    _validate(x_in, cos_cache, sin_cache, trans_mat, is_decode_mode, out_mc, compute_kernel_config)
    hd = x_in.shape[-1]
    seq = x_in.shape[-2]

    def compute(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        x = f32(x)
        # cos/sin are shared by q and k of every layer: converted once per buffer version, not per product.
        cos, sin = f32_cached(cos), f32_cached(sin)
        if is_decode_mode:  # the kernel broadcasts row 0 of each user's cos/sin tile over the user's heads
            cos, sin = cos[:, :, :1], sin[:, :, :1]
        elif cos.shape[-2] != seq:
            # The device rotates whatever cos/sin rows its tiles reach: rows past the table are not defined.
            n = min(seq, cos.shape[-2])
            pad = (0, 0, 0, seq - n)
            cos = torch.nn.functional.pad(cos[..., :n, :], pad, value=float("nan"))
            sin = torch.nn.functional.pad(sin[..., :n, :], pad, value=float("nan"))
        tiles = x.reshape(*x.shape[:-1], -(-hd // TILE_SIZE), TILE_SIZE) if hd % TILE_SIZE == 0 else None
        perm = signed_permutation(t)
        if tiles is None:  # a head_dim that is not whole tiles (prefill only): the padded tile's columns are 0
            xp = torch.nn.functional.pad(x, (0, -hd % TILE_SIZE))
            tiles = xp.reshape(*x.shape[:-1], -1, TILE_SIZE)
        if perm is None:
            rotated = tiles @ f32_cached(t).reshape(-1, TILE_SIZE, TILE_SIZE)[0]
        else:  # the same product, exactly: each output column is one input column times +-1
            rotated = tiles.index_select(-1, perm[0]).mul_(perm[1])
        rotated = rotated.reshape(*x.shape[:-1], -1)[..., :hd]
        return torch.addcmul(x * cos, rotated, sin)

    return output(x_in, per_device(compute, x_in, cos_cache, sin_cache, trans_mat), memory_config=out_mc)
