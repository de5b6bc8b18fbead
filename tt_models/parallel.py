"""Tensor parallelism over the chips of a mesh, as data: which heads, MLP columns, vocabulary slice and residual
columns each chip holds, and how each weight is laid over the chips.

The split is tt_transformers' for 1xN meshes (N300, T3K): the residual stream is fractured, each chip holding dim / N
of its columns (the embedding table split by hidden dim). Before attention and the MLP the norm gathers it (an
all_gather then the ordinary rms_norm, or, where tt_transformers runs it (`is_distributed_norm`: prefill with dim above
4096), the distributed rms_norm: per-chip stats, all_gather of the stats, the norm with the weight split by hidden
dim, all_gather of the normed columns), so every chip multiplies the whole normed activation: QKV and w1/w3 column-
parallel (each chip its own heads and its slice of the MLP's hidden units), WO and w2 row-parallel (each chip's product
is a partial sum over its heads / hidden units, reduce-scattered back onto the fractured residual: each chip gets the
sum of its columns), the LM head vocabulary-sliced after the final norm (gathered where the full vocabulary is needed).
Chip d holds Q heads [d * n_heads / N, (d + 1) * n_heads / N). KV heads split the same way when there are at least
as many as chips; with fewer (N > n_kv_heads, which must then divide N) every chip keeps the one KV head its Q heads
read, so that head is replicated on N / n_kv_heads chips, as tt_transformers does.

On a 2-D mesh (R x C chips, e.g. Galaxy's 8 x 4) the split is tt_transformers' TG one: the residual stream is
fractured over the C chips of each row (dim / C columns, the same on every row) and the heads, MLP hidden units and
vocabulary over the R rows. So every weight is split two ways (ttnn.ShardTensor2dMesh): QKV and w1/w3 by output
(heads / hidden units) over the rows and by input (the residual's columns) over the columns, WO and w2 the other way
round. Products of the fractured input (QKV, w1, w3, LM head) are partial sums over a row's chips, all-reduced along
axis 1; WO and w2 products are partial sums over a column's chips (each row its heads / hidden units), all-reduced
along axis 0 onto the fractured residual. The norms are always distributed (per-chip stats gathered along axis 1),
and their output stays fractured. Decode attention runs the row's heads for a share of the users on each chip of
the row (chip (r, c): users [c * U, (c + 1) * U), U = batch / C; its positions, page-table rows and rotary indices
split the same way), the outputs gathered back along the row before WO, as tt_transformers splits the batch on a
Galaxy; prefill fills a user's KV on every chip of its row.

A residual whose columns do not split into whole tiles per chip (gpt-oss's 2880 = 90 tiles over 8 chips, or over
a 2-D mesh's 4 columns) is padded with zero columns at its end, up to whole tiles per chip (3072: 12 tiles each on
a 1x8 T3K; 2944: 23 on each of a 2-D row's 4), as tt-metal's gpt_oss pads its o_proj output for the CCLs. The embedding
table and every product written into the residual (WO, w2, the experts' down projection, their biases) get zero
columns there, and every weight that reads a chip's columns of it (2-D: QKV, w1/w3, the LM head) zero rows, so
those columns stay zero in every layer and add nothing. The norms keep the model's mean of squares: the gathered
norm slices the model's columns off the gathered row; the distributed norm (whose device op divides the summed
squares by the padded width) takes epsilon and gamma scaled by dim / padded width and its square root (gamma in
fp32), which is the same function: x * rsqrt(S / P + eps * D / P) * g * sqrt(D / P) = x * rsqrt(S / D + eps) * g.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch

from tt_models.model_args import ModelArgs, UnsupportedModelError

TILE = 32
# tt_transformers' ModelArgs.is_distributed_norm on a 1xN mesh: the distributed rms_norm (stats gathered, not the
# activation) for prefill when dim > 4096 ("somewhere between 4k and 8k WH runs out of L1 if not distributed"); decode
# and smaller models gather the fractured residual and run the ordinary rms_norm.
DISTRIBUTED_NORM_ABOVE_DIM = 4096


@dataclass(frozen=True)
class TPPlan:
    """What each of the `devices` chips of a TP group holds. devices == 1 is the single-chip model: nothing split."""

    devices: int
    q_heads: tuple[tuple[int, ...], ...]  # per chip: the (global) Q heads it computes
    kv_heads: tuple[tuple[int, ...], ...]  # per chip: the (global) KV heads it computes and caches
    hidden_dim: int  # MLP hidden units per chip
    vocab: int  # vocabulary columns per chip
    dim: int  # residual-stream columns per chip (the fractured residual; the whole dim on one chip)
    cluster_axis: int = 1  # the mesh axis the residual's columns are split along (1: a row)
    grid: tuple[int, int] | None = None  # 2-D TP: (R, C) chips, heads over the R rows, the residual over the C columns
    # Zero columns appended to the residual stream so that each chip's share is whole tiles (see the module's
    # docstring): dim times the chips it is split over == the model's width + dim_pad.
    dim_pad: int = 0

    @property
    def two_d(self) -> bool:
        return self.grid is not None

    @property
    def n_heads(self) -> int:
        return len(self.q_heads[0])

    @property
    def n_kv_heads(self) -> int:
        """KV heads each chip caches: the KV cache's per-chip head count."""
        return len(self.kv_heads[0])

    def distributed_norm(self, mode: str) -> bool:
        """Whether the norm in this mode ("prefill" / "decode") gathers the stats (distributed rms_norm) instead of
        the activation, as tt_transformers decides on a 1xN mesh."""
        if self.two_d:
            return True  # tt_transformers' is_distributed_norm on any 2-D mesh: the activation is never gathered
        return self.devices > 1 and mode == "prefill" and self.dim * self.devices > DISTRIBUTED_NORM_ABOVE_DIM

    @property
    def padded_width(self) -> int:
        """The residual stream's whole width with its zero columns (the model's own width when none)."""
        return self.dim * (self.grid[1] if self.two_d else self.devices)

    @property
    def norm_scale(self) -> float:
        """What a distributed norm over the padded residual scales epsilon by (and gamma by its square root) to
        average the squares over the model's own columns: model width / padded width (1.0 without padding)."""
        return (self.padded_width - self.dim_pad) / self.padded_width

    @property
    def written_dim(self) -> int:
        """The width of a product written into the residual before it is split over the chips (WO, w2, the experts'
        down projection: partial sums reduce-scattered onto it): the padded width on a 1xN mesh, a chip's columns on
        a 2-D one, the model's width on one chip."""
        return self.dim if self.two_d else self.dim * self.devices

    @property
    def tag(self) -> str:
        """Part of a converted weight's cache name: a different split is a different tensor."""
        return f"tp{self.grid[0]}x{self.grid[1]}" if self.two_d else f"tp{self.devices}"

    def local_args(self, args: ModelArgs) -> ModelArgs:
        """The model as one chip sees it: its heads, hidden units and vocabulary slice (same object on one chip)."""
        if self.devices == 1:
            return args
        # 2-D: the QKV / w1,w3 / LM-head inputs and the WO / w2 outputs are this chip's dim / C columns.
        return replace(args, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, hidden_dim=self.hidden_dim,
                       vocab_size=self.vocab, dim=self.dim if self.two_d else args.dim)

    def qkv_rows(self, args: ModelArgs) -> torch.Tensor | None:
        """Rows of the Meta [wq; wk; wv] ([out, in], out = heads x head_dim) in chip order: chip d's block is
        [its Q heads | its KV heads' K | their V], so sharding the columns of the transposed weight gives each chip
        exactly the fused QKV its heads ops expect. None on one chip (the weight as it is)."""
        if self.devices == 1:
            return None
        hd, k0 = args.head_dim, args.n_heads * args.head_dim
        v0 = k0 + args.n_kv_heads * hd

        def rows(base: int, heads: tuple[int, ...]) -> list[int]:
            return [base + h * hd + i for h in heads for i in range(hd)]

        order: list[int] = []
        for q, kv in zip(self.q_heads, self.kv_heads, strict=True):
            order += rows(0, q) + rows(k0, kv) + rows(v0, kv)
        return torch.tensor(order, dtype=torch.long)


def single_device_plan(args: ModelArgs) -> TPPlan:
    return TPPlan(1, (tuple(range(args.n_heads)),), (tuple(range(args.n_kv_heads)),), args.hidden_dim,
                  args.vocab_size, args.dim)


def tp_axis(mesh_shape: tuple[int, int]) -> tuple[int, int]:
    """(devices, cluster_axis) of a mesh used as one 1-D TP group: a 1xN row (axis 1) or an Nx1 column (axis 0)."""
    rows, cols = mesh_shape
    if rows > 1 and cols > 1:
        raise ValueError(f"a {rows}x{cols} mesh is not one line of chips")
    return (cols, 1) if rows == 1 else (rows, 0)


Heads = tuple[tuple[int, ...], ...]  # per group of chips: the (global) heads it holds


def _split_heads(args: ModelArgs, n: int, where: str) -> tuple[Heads, Heads]:
    """Q heads and KV heads of each of n groups of chips: KV heads split like the Q heads when there are at least n,
    else each group keeps the one its Q heads read (replicated over n / n_kv_heads groups)."""
    if args.n_heads % n:
        raise UnsupportedModelError(f"tensor parallel {where}: {args.n_heads} attention heads do not split evenly")
    q_per = args.n_heads // n
    if args.n_kv_heads >= n:
        if args.n_kv_heads % n:
            raise UnsupportedModelError(f"tensor parallel {where}: {args.n_kv_heads} KV heads do not split evenly")
        kv_per = args.n_kv_heads // n
        kv = tuple(tuple(range(d * kv_per, (d + 1) * kv_per)) for d in range(n))
    else:
        if n % args.n_kv_heads:
            raise UnsupportedModelError(f"tensor parallel {where}: {args.n_kv_heads} KV heads cannot be replicated "
                                        f"evenly (the chip count must be a multiple of the KV head count)")
        group = args.n_heads // args.n_kv_heads  # Q heads per KV head
        kv = tuple(((d * q_per) // group,) for d in range(n))
    return tuple(tuple(range(d * q_per, (d + 1) * q_per)) for d in range(n)), kv


def head_groups(mesh_shape: tuple[int, int]) -> int:
    """Into how many groups of chips the heads, MLP units and vocabulary split: the rows of a 2-D mesh, else every
    chip of the line."""
    rows, cols = tuple(mesh_shape)
    return rows if rows > 1 and cols > 1 else rows * cols


def pad_mlp(args: ModelArgs, mesh_shape: tuple[int, int]) -> ModelArgs:
    """The model with its MLP hidden size padded up to whole tiles per chip (Qwen2.5-72B's 29,568 units are 115.5
    tiles on each of 8 chips): the extra units have zero w1/w3 rows and zero w2 columns (tt_models.checkpoint
    pad_mlp_weights), so silu(0) * 0 adds nothing and the output is the checkpoint's exactly. A MoE model's experts
    likewise, up to a multiple of the chips they spread over (Qwen1.5-MoE-A2.7B's 60 over 8: 64): the extra experts
    have zero weights and a router logit of -1e30 (a router bias), so no token selects one and the softmax gives
    them nothing."""
    unit = TILE * head_groups(mesh_shape)
    padded = -(-args.hidden_dim // unit) * unit
    if padded != args.hidden_dim:
        args = replace(args, hidden_dim=padded, mlp_padded_from=args.mlp_padded_from or args.hidden_dim)
    chips = math.prod(tuple(mesh_shape))
    if args.n_experts % chips and not args.expert_groups:  # (groups of experts are not padded: _check_experts)
        args = replace(args, n_experts=-(-args.n_experts // chips) * chips,
                       experts_padded_from=args.experts_padded_from or args.n_experts)
    return args


def _check_splits(args: ModelArgs, heads: int, columns: int, where: str, pad_residual: bool = False) -> int:
    """Whole tiles per chip: the MLP's hidden units (pad_mlp pads them) and the vocabulary over `heads` groups, the
    residual's columns over `columns` chips. Returns the zero columns the residual takes to split into whole tiles
    (pad_residual: where the plan allows it; else such a width is refused)."""
    if args.hidden_dim % (heads * TILE):
        raise UnsupportedModelError(f"tensor parallel {where}: MLP size {args.hidden_dim} does not split into whole "
                                    f"tiles ({TILE} columns) per chip (pad it with tt_models.parallel.pad_mlp)")
    if args.vocab_size % heads:
        raise UnsupportedModelError(f"tensor parallel {where}: vocabulary {args.vocab_size} does not split evenly")
    unit = columns * TILE
    if args.dim % unit == 0:
        return 0
    if pad_residual and args.dim % TILE == 0:
        return -(-args.dim // unit) * unit - args.dim
    raise UnsupportedModelError(f"tensor parallel {where}: hidden size {args.dim} does not split into whole tiles "
                                f"({TILE} columns) per chip (the residual stream is split by columns)")


def _check_experts(args: ModelArgs, chips: int, where: str) -> None:
    """Expert parallel: every chip holds the same number of a MoE layer's experts (tt_models/layers/moe.py)."""
    if args.n_experts % chips:
        raise UnsupportedModelError(f"expert parallel {where}: {args.n_experts} experts do not split evenly")
    if args.expert_groups:
        # Each chip's router copy has its own experts first (a rotation by whole chips' blocks): the groups stay
        # consecutive columns only where a chip's block is whole groups.
        size = args.n_experts // args.expert_groups[0]
        if (args.n_experts // chips) % size:
            raise UnsupportedModelError(f"expert parallel {where}: {args.n_experts // chips} experts per chip do not "
                                        f"hold whole groups of {size} (n_group {args.expert_groups[0]})")


def plan_tensor_parallel(args: ModelArgs, mesh_shape: tuple[int, int]) -> TPPlan:
    """The split of this model over a 1xN (or Nx1) mesh, or two ways over an R x C mesh; refuses what does not
    divide, naming the numbers."""
    rows, cols = tuple(mesh_shape)
    if args.mla is not None and rows * cols > 1:
        raise UnsupportedModelError(f"multi-latent attention (DeepSeek-V3) runs on one chip so far: its heads split "
                                    f"over {rows * cols} chips ({rows}x{cols} mesh) are not implemented")
    if rows > 1 and cols > 1:
        where = (f"over {rows * cols} chips ({rows}x{cols} mesh: heads over {rows} rows, hidden size over {cols} "
                 f"columns)")
        q, kv = _split_heads(args, rows, where)
        pad = _check_splits(args, rows, cols, where, pad_residual=True)
        _check_experts(args, rows * cols, where)
        return TPPlan(rows * cols, q, kv, args.hidden_dim // rows, args.vocab_size // rows, (args.dim + pad) // cols,
                      1, (rows, cols), dim_pad=pad)
    n, axis = tp_axis((rows, cols))
    if n == 1:
        return single_device_plan(args)
    where = f"over {n} chips ({(rows, cols)} mesh)"
    q, kv = _split_heads(args, n, where)
    pad = _check_splits(args, n, n, where, pad_residual=True)
    _check_experts(args, n, where)
    return TPPlan(n, q, kv, args.hidden_dim // n, args.vocab_size // n, (args.dim + pad) // n, axis, dim_pad=pad)


# --- does the model fit: weight bytes per chip, before any is placed ---
# Per-bank rounding of a DRAM buffer (the allocator's alignment: 32 B on Wormhole, 64 B on Blackhole; the larger).
DRAM_BANK_ALIGN = 64


def weight_bytes_per_device(args: ModelArgs, plan: TPPlan, precisions: list[Any], head_dtype: Any,
                            banks: int | None = None, grid: tuple[int, int] | None = None,
                            l1_bank_bytes: int | None = None) -> int:
    """DRAM one chip's weights take with this split. With the chip's DRAM `banks`, its worker `grid` and L1 bank
    size: as the allocator places them, per bank x banks (weight_bank_bytes). Without: whole tiles of each weight's
    dtype and the embedding's rows, before any per-bank padding (a lower bound)."""
    if banks is not None and grid is not None and l1_bank_bytes is not None:
        return weight_bank_bytes(args, plan, precisions, head_dtype, banks, grid, l1_bank_bytes) * banks
    from tt_models.layouts import tile_bytes

    local = plan.local_args(args)
    hd, dim = args.head_dim, local.dim  # 2-D: the matmuls' side along the residual is this chip's dim / C
    out = plan.written_dim  # WO's, w2's and the experts' down projection's output (a padded residual's width)

    def tiles(k: int, n: int) -> int:
        return -(-k // TILE) * -(-n // TILE)

    total = 0
    for i, p in enumerate(precisions):
        if args.mla is not None:
            total += sum(tiles(k, n) * tile_bytes(p.wo if w == "wo" else p.wqkv) for w, k, n in mla_weights(args))
        else:
            qkv = hd * (local.n_heads + 2 * local.n_kv_heads)
            total += tiles(dim, qkv) * tile_bytes(p.wqkv) + tiles(local.n_heads * hd, out) * tile_bytes(p.wo)
        if args.is_moe(i):  # this chip's experts and the whole router (tt_models/layers/moe.py)
            hid, experts = args.moe_hidden_dim, args.n_experts // plan.devices
            down = plan.padded_width  # the whole (padded) row: reduce-scattered onto the residual after the sum
            total += experts * (2 * tiles(args.dim, hid) * tile_bytes(p.ff1_ff3) + tiles(hid, down) * tile_bytes(p.ff2))
            total += tiles(args.dim, args.n_experts) * 2048  # bf16 tiles
            if args.shared_expert_dim:  # Qwen2-MoE: this chip's share of the shared expert, its gate [dim, 1]
                units = shared_expert_units(args, plan)
                total += 2 * tiles(args.dim, units) * tile_bytes(p.ff1_ff3) + tiles(units, down) * tile_bytes(p.ff2)
                total += tiles(args.dim, 1) * 2048 if args.shared_expert_gated else 0
            continue
        total += 2 * tiles(dim, local.hidden_dim) * tile_bytes(p.ff1_ff3)
        total += tiles(local.hidden_dim, out) * tile_bytes(p.ff2)
    total += tiles(dim, local.vocab_size) * tile_bytes(head_dtype)
    total += args.vocab_size * plan.dim * 2
    return total


def weight_bank_bytes(args: ModelArgs, plan: TPPlan, precisions: list[Any], head_dtype: Any, banks: int,
                      grid: tuple[int, int], l1_bank_bytes: int) -> int:
    """DRAM per bank one chip's weights take, as the model places them and the allocator lays them out (every bank
    holds the same, so this against a bank's free bytes decides whether the weights load):
    - decode matmul weights (QKV, WO, w1, w3, w2, each LM-head split) width-sharded over the banks: each bank a
      [k, n / banks] strip, n padded to whole tiles per bank (tt_models.layouts.dram_sharded_weight);
    - the embedding table's rows (this chip's columns, bf16) interleaved: ceil(vocab / banks) rows per bank;
    - norm weights as row-major sticks of 32 (fp32 for Gemma's 1 + w), their prefill TILE rows where the whole-row
      norm does not fit L1, and this chip's columns where a norm is distributed; QKV biases as a TILE row;
    - GPT-OSS's o_proj bias (this chip's residual columns), router and expert biases and attention sinks, bf16 tiles.
    The per-bank padding is what the whole-tile count misses: Gemma-3-12B in bf16 on an N300 needs 1,068,743,168 B
    of each bank (4.4 MB more than its tiles), against the 1,068,523,456 B a bank has (the real ttnn 0.81.1 runs
    out of DRAM 219,712 B short placing it). Equal, to the byte, to what the simulator's allocator places (tested)."""
    from tt_models.layouts import CB_SHARE_OF_L1, lm_head_splits, residual_cores, tile_bytes, whole_row_norm_cb_bytes

    local = plan.local_args(args)
    hd, dim = args.head_dim, local.dim

    def align(n: int) -> int:
        return -(-n // DRAM_BANK_ALIGN) * DRAM_BANK_ALIGN

    def strip(k: int, n: int, dtype: Any) -> int:  # a DRAM-sharded [k, n] weight
        return align(-(-k // TILE) * -(-n // (TILE * banks)) * tile_bytes(dtype))

    def rows(count: int, row_bytes: int) -> int:  # an interleaved row-major tensor of `count` rows
        return align(-(-count // banks) * align(row_bytes))

    def _tiles(n: int) -> int:
        return -(-n // TILE)

    def tile_row(width: int, tile: int) -> int:  # an interleaved TILE tensor [1, width]
        return align(-(-_tiles(width) // banks) * tile)

    norm_bytes = 4 if args.norm_unit_offset else 2
    residual_tile = max(tile_bytes(p.residual) for p in precisions) if precisions else 2048
    fp32_acc = any(bool(p.kernels["NORM"].fp32_dest_acc_en) for p in precisions) if precisions else True
    tile_gamma = whole_row_norm_cb_bytes(args.dim, residual_tile, fp32_acc) > int(CB_SHARE_OF_L1 * l1_bank_bytes)

    def residual_norm(keep_columns: bool = False) -> int:
        """ResidualNorm's weights (tt_models/layers/norm.py)."""
        out = 0
        distributed = plan.distributed_norm("prefill") or (keep_columns and plan.devices > 1)
        if not plan.two_d:
            out += rows(args.dim // TILE, TILE * norm_bytes)
            if tile_gamma and not plan.distributed_norm("prefill"):
                out += tile_row(args.dim, TILE * TILE * norm_bytes)
        if distributed:  # over a padded residual its gamma is scaled, in fp32
            out += rows(plan.dim // TILE, TILE * (4 if plan.dim_pad else norm_bytes))
        return out

    def interleaved(count: int, tile: int) -> int:  # an interleaved TILE tensor of `count` tiles
        return align(-(-count // banks) * tile)

    total = 0
    qkv = hd * (local.n_heads + 2 * local.n_kv_heads)
    out = plan.written_dim  # WO's, w2's and the experts' down projection's output (a padded residual's width)
    for i, p in enumerate(precisions):
        if args.mla is not None:  # multi-latent attention: interleaved weights and its two norms (layers/mla.py)
            total += sum(interleaved(_tiles(k) * _tiles(n), tile_bytes(p.wo if w == "wo" else p.wqkv))
                         for w, k, n in mla_weights(args))
            norms = (args.mla.kv_lora_rank,) + ((args.mla.q_lora_rank,) if args.mla.q_lora_rank else ())
            total += sum(rows(n // TILE, TILE * norm_bytes) for n in norms)
        else:
            total += strip(dim, qkv, p.wqkv) + strip(local.n_heads * hd, out, p.wo)
        if args.is_moe(i):  # this chip's experts [1, E / N, k, n] and the router [dim, E] (bf16), interleaved
            hid, experts = args.moe_hidden_dim, args.n_experts // plan.devices
            per_expert = _tiles(args.dim) * _tiles(hid)
            total += 2 * interleaved(experts * per_expert, tile_bytes(p.ff1_ff3))
            total += interleaved(experts * _tiles(hid) * _tiles(plan.padded_width), tile_bytes(p.ff2))
            total += interleaved(_tiles(args.dim) * _tiles(args.n_experts), 2048)
            if args.router_scoring == "sigmoid":  # the score bias [1, 1, 1, E], fp32
                total += tile_row(args.n_experts, 4096)
            elif args.moe_bias or args.experts_padded_from:  # the router's bias [1, 1, 1, E], bf16
                total += tile_row(args.n_experts, 2048)
            if args.moe_bias:  # GPT-OSS: the experts' biases [1, E / N, 1, out], bf16
                total += 2 * interleaved(experts * _tiles(hid), 2048)
                total += interleaved(experts * _tiles(plan.padded_width), 2048)
            if args.shared_expert_dim:  # Qwen2-MoE: this chip's share of the shared expert and its gate [dim, 1]
                units = _tiles(shared_expert_units(args, plan))
                total += 2 * interleaved(_tiles(args.dim) * units, tile_bytes(p.ff1_ff3))
                total += interleaved(units * _tiles(plan.padded_width), tile_bytes(p.ff2))
                total += interleaved(_tiles(args.dim), 2048) if args.shared_expert_gated else 0
        else:
            total += 2 * strip(dim, local.hidden_dim, p.ff1_ff3) + strip(local.hidden_dim, out, p.ff2)
        total += 2 * residual_norm()
        if args.sandwich_norms:
            total += 2 * residual_norm(keep_columns=True)
        if args.qk_norm:
            total += 2 * rows(hd // TILE, TILE * norm_bytes)
        if args.qkv_bias:
            total += tile_row(qkv, 2048)
        if args.o_bias:  # this chip's columns of the residual
            total += tile_row(plan.dim, 2048)
        if args.attention_sinks:  # prefill's [1, heads, 1, 1] (a tile per head) and decode's [heads, 32]
            total += interleaved(local.n_heads, 2048) + interleaved(_tiles(local.n_heads), 2048)
    rx, ry = residual_cores(-(-dim // TILE), grid)
    total += sum(strip(dim, n, head_dtype) for n in lm_head_splits(local.vocab_size, rx * ry))
    total += rows(args.vocab_size, plan.dim * 2)
    total += residual_norm()  # the final norm
    return total


def mla_weights(args: ModelArgs) -> list[tuple[str, int, int]]:
    """Multi-latent attention's matmul weights (tt_models/layers/mla.py) as (name, k, n) of [k, n] tiles: the query
    (one projection or the low-rank pair), the latent projection, each head's W_k and W_v, WO."""
    m, nh, dim = args.mla, args.n_heads, args.dim
    q = nh * (m.nope_dim + m.rope_dim)
    out = [("wq", dim, q)] if m.q_lora_rank is None else [("wq_a", dim, m.q_lora_rank), ("wq_b", m.q_lora_rank, q)]
    out.append(("wkv_a", dim, m.row))
    out += [("uk", m.nope_dim, m.kv_lora_rank)] * nh + [("uv", m.kv_lora_rank, m.v_dim)] * nh
    return out + [("wo", nh * m.v_dim, dim)]


def check_weights_fit(args: ModelArgs, plan: TPPlan, profile: Any, mesh_device: Any) -> None:
    """Refuse, before placing anything, a model whose per-chip weights exceed a chip's free DRAM, with the numbers:
    what one chip needs with this split (per bank, as the allocator places it), what it has, and how many chips the
    split would need."""
    from tt_models.backend import ttnn
    from tt_models.precision import dtype_of, layer_precision

    precisions = [layer_precision(profile, i) for i in range(args.n_layers)]
    view = ttnn.get_memory_view(mesh_device, ttnn.BufferType.DRAM)
    g = mesh_device.compute_with_storage_grid_size()
    l1 = ttnn.get_memory_view(mesh_device, ttnn.BufferType.L1).total_bytes_per_bank
    need = weight_bytes_per_device(args, plan, precisions, dtype_of(profile.precision("LM_HEAD")), view.num_banks,
                                   (g.x, g.y), l1)
    have = view.largest_contiguous_bytes_free_per_bank * view.num_banks
    if need <= have:
        return
    gib = 1 << 30
    more = -(-need * plan.devices // have)  # every weight but the (small) norms splits over the chips
    split = f"with tensor parallel over {plan.devices} chips" if plan.devices > 1 else "on one chip"
    digits = 2  # enough to tell the two apart (Gemma-3-12B in bf16 on an N300: 11.944 against 11.942)
    while round(need / gib, digits) <= round(have / gib, digits) and digits < 6:
        digits += 1
    raise UnsupportedModelError(
        f"the model does not fit a {tuple(mesh_device.shape)} mesh: its weights take {need / gib:.{digits}f} GiB "
        f"per chip {split}, a chip has {have / gib:.{digits}f} GiB of DRAM free "
        f"({view.num_banks} banks x {view.largest_contiguous_bytes_free_per_bank / gib:.3f} GiB); it needs about "
        f"{more} chips, or a profile with smaller weight dtypes")


@dataclass(frozen=True)
class Shard:
    """How one weight is laid over the TP chips: the Meta [out, in] rows first reordered by `rows` (so that each
    group's share is one contiguous block), then split along dims of the TT layout [1, 1, in, out] (3: output
    columns, column-parallel; 2: input rows, row-parallel). 1-D: `dim` into `devices` blocks (ttnn.ShardTensorToMesh).
    2-D: `mesh_dims` = the tensor dims split over mesh axis 0 (rows) and axis 1 (columns), None replicating along
    that axis (ttnn.ShardTensor2dMesh over `mesh_shape`). `pad`: zeros appended along TT dim `pad_dim` (the padded
    residual's columns, TPPlan.dim_pad) before any split: output columns (3) of what writes or holds the residual,
    input rows (2) of what reads a chip's columns of it."""

    dim: int | None
    devices: int
    rows: torch.Tensor | None = None
    mesh_dims: tuple[int | None, int | None] | None = None
    mesh_shape: tuple[int, int] | None = None
    pad: int = 0
    pad_dim: int = 3

    def parts(self, tensor_dim: int) -> int:
        """Into how many blocks tensor dim `tensor_dim` of the TT layout is split."""
        if self.mesh_dims is None:
            return self.devices if tensor_dim == self.dim else 1
        return math.prod(n for d, n in zip(self.mesh_dims, self.mesh_shape, strict=True) if d == tensor_dim)


def _two_way(plan: TPPlan, over_rows: int | None, over_cols: int | None, rows: torch.Tensor | None = None) -> Shard:
    """Split over the rows and the columns; the dim split over the columns is the residual's (padded there)."""
    pad = plan.dim_pad if over_cols is not None else 0
    return Shard(None, plan.devices, rows, (over_rows, over_cols), plan.grid, pad, over_cols or 3)


def column_parallel(plan: TPPlan, rows: torch.Tensor | None = None) -> Shard | None:
    """Output columns split over the chips (2-D: over the rows, the input over the columns)."""
    if plan.two_d:
        return _two_way(plan, 3, 2, rows)
    return Shard(3, plan.devices, rows) if plan.devices > 1 else None


def row_parallel(plan: TPPlan) -> Shard | None:
    """Input rows split over the chips (2-D: over the rows, the output over the columns)."""
    if plan.two_d:
        return _two_way(plan, 2, 3)
    return Shard(2, plan.devices, pad=plan.dim_pad) if plan.devices > 1 else None


def output_columns(plan: TPPlan, rows: torch.Tensor | None = None) -> Shard | None:
    """A bias of a column-parallel product, [1, 1, 1, out]: split as the product's output columns (2-D: over the
    rows only; each chip of a row adds it once, after the row's partial sums are reduced)."""
    if plan.two_d:
        return _two_way(plan, 3, None, rows)
    return column_parallel(plan, rows)


def head_split(plan: TPPlan, dim: int) -> Shard | None:
    """A per-Q-head tensor (attention sinks) split along tensor dim `dim` as the Q heads are: each chip (2-D: each
    row, replicated along it) its contiguous block. None on one chip."""
    if plan.two_d:
        return _two_way(plan, dim, None)
    return Shard(dim, plan.devices) if plan.devices > 1 else None


def residual_columns(plan: TPPlan, dim: int) -> Shard | None:
    """Each chip's columns of the residual stream, as a weight holds them: dim 3 of the embedding table
    [1, 1, vocab, hidden], dim 2 of a norm weight's [1, 1, hidden / 32, 32] sticks (2-D: over the columns,
    replicated down the rows). None on one chip."""
    if plan.two_d:
        return _two_way(plan, None, dim)
    return Shard(dim, plan.devices, pad=plan.dim_pad, pad_dim=dim) if plan.devices > 1 else None


def shared_expert_units(args: ModelArgs, plan: TPPlan) -> int:
    """Qwen2-MoE's shared expert per chip: its hidden units split over all the chips (as the experts are), each
    chip's share rounded up to whole tiles with zero units (they add SiLU(0) * 0 = 0)."""
    return -(-args.shared_expert_dim // (plan.devices * TILE)) * TILE


def experts_split(plan: TPPlan, written: bool = False) -> Shard | None:
    """Expert parallel: each chip its block of the experts' stacked weights [1, E, in, out] (2-D: chip (r, c) the
    (r * C + c)-th block); `written`: a down projection (or its bias), whose output columns are the padded residual's.
    None on one chip."""
    if plan.devices == 1:
        return None
    pad = plan.dim_pad if written else 0
    if plan.two_d:
        return Shard(None, plan.devices, None, (0, 1), plan.grid, pad)
    return Shard(1, plan.devices, pad=pad)
