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

A TP group is one row (or one column) of chips: a 2-D mesh is served as data parallel over its rows with TP along
each row (tt_data_parallel = rows), never with TP over all chips of a 2-D mesh (the 1-D fabric tt_transformers uses on
T3K needs a cluster axis, so the collectives would run in two stages and the heads split two ways).
"""

from __future__ import annotations

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
    cluster_axis: int = 1  # the mesh axis the group's chips lie along (1: a row)

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
        return self.devices > 1 and mode == "prefill" and self.dim * self.devices > DISTRIBUTED_NORM_ABOVE_DIM

    @property
    def tag(self) -> str:
        """Part of a converted weight's cache name: a different split is a different tensor."""
        return f"tp{self.devices}"

    def local_args(self, args: ModelArgs) -> ModelArgs:
        """The model as one chip sees it: its heads, hidden units and vocabulary slice (same object on one chip)."""
        if self.devices == 1:
            return args
        return replace(args, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, hidden_dim=self.hidden_dim,
                       vocab_size=self.vocab)

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
    """(devices, cluster_axis) of a mesh used as one TP group: a 1xN row (axis 1) or an Nx1 column (axis 0)."""
    rows, cols = mesh_shape
    if rows > 1 and cols > 1:
        raise UnsupportedModelError(
            f"tensor parallel runs along one row or column of chips; a {rows}x{cols} mesh is served as data parallel "
            f"over its rows with tensor parallel along each (tt_data_parallel={rows}, or vLLM additional_config "
            f'"tt": {{"data_parallel": {rows}}})')
    return (cols, 1) if rows == 1 else (rows, 0)


def plan_tensor_parallel(args: ModelArgs, mesh_shape: tuple[int, int]) -> TPPlan:
    """The split of this model over a 1xN (or Nx1) mesh; refuses what does not divide, naming the numbers."""
    n, axis = tp_axis(tuple(mesh_shape))
    if n == 1:
        return single_device_plan(args)
    where = f"over {n} chips ({tuple(mesh_shape)} mesh)"
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
    if args.hidden_dim % (n * TILE):
        raise UnsupportedModelError(f"tensor parallel {where}: MLP size {args.hidden_dim} does not split into whole "
                                    f"tiles ({TILE} columns) per chip")
    if args.dim % (n * TILE):
        raise UnsupportedModelError(f"tensor parallel {where}: hidden size {args.dim} does not split into whole tiles "
                                    f"({TILE} columns) per chip (the residual stream is split by columns)")
    if args.vocab_size % n:
        raise UnsupportedModelError(f"tensor parallel {where}: vocabulary {args.vocab_size} does not split evenly")
    q = tuple(tuple(range(d * q_per, (d + 1) * q_per)) for d in range(n))
    return TPPlan(n, q, kv, args.hidden_dim // n, args.vocab_size // n, args.dim // n, axis)


# --- does the model fit: weight bytes per chip, before any is placed ---
def weight_bytes_per_device(args: ModelArgs, plan: TPPlan, precisions: list[Any], head_dtype: Any) -> int:
    """DRAM one chip's weights take with this split (whole tiles of each weight's dtype; the embedding's columns
    of this chip as bf16 rows), before any per-bank padding: a lower bound the load-time refusal names."""
    from tt_models.layouts import tile_bytes

    local = plan.local_args(args)
    hd, dim = args.head_dim, args.dim

    def tiles(k: int, n: int) -> int:
        return -(-k // TILE) * -(-n // TILE)

    total = 0
    for p in precisions:
        qkv = hd * (local.n_heads + 2 * local.n_kv_heads)
        total += tiles(dim, qkv) * tile_bytes(p.wqkv) + tiles(local.n_heads * hd, dim) * tile_bytes(p.wo)
        total += 2 * tiles(dim, local.hidden_dim) * tile_bytes(p.ff1_ff3)
        total += tiles(local.hidden_dim, dim) * tile_bytes(p.ff2)
    total += tiles(dim, local.vocab_size) * tile_bytes(head_dtype)
    total += args.vocab_size * plan.dim * 2
    return total


def check_weights_fit(args: ModelArgs, plan: TPPlan, profile: Any, mesh_device: Any) -> None:
    """Refuse, before placing anything, a model whose per-chip weights exceed a chip's free DRAM, with the numbers:
    what one chip needs with this split, what it has, and how many chips the split would need."""
    from tt_models.backend import ttnn
    from tt_models.precision import dtype_of, layer_precision

    precisions = [layer_precision(profile, i) for i in range(args.n_layers)]
    need = weight_bytes_per_device(args, plan, precisions, dtype_of(profile.precision("LM_HEAD")))
    view = ttnn.get_memory_view(mesh_device, ttnn.BufferType.DRAM)
    have = view.largest_contiguous_bytes_free_per_bank * view.num_banks
    if need <= have:
        return
    gib = 1 << 30
    more = -(-need * plan.devices // have)  # every weight but the (small) norms splits over the chips
    raise UnsupportedModelError(
        f"the model does not fit a {tuple(mesh_device.shape)} mesh: its weights take {need / gib:.2f} GiB per chip "
        f"with tensor parallel over {plan.devices} chips, a chip has {have / gib:.2f} GiB of DRAM free "
        f"({view.num_banks} banks x {view.largest_contiguous_bytes_free_per_bank / gib:.3f} GiB); it needs about "
        f"{more} chips, or a profile with smaller weight dtypes")


@dataclass(frozen=True)
class Shard:
    """How one weight is laid over a TP group's chips: the Meta [out, in] rows first reordered by `rows` (so that chip
    d's share is the d-th contiguous block), then split into `devices` blocks along `dim` of the TT layout
    [1, 1, in, out] (3: output columns, column-parallel; 2: input rows, row-parallel) with ttnn.ShardTensorToMesh."""

    dim: int
    devices: int
    rows: torch.Tensor | None = None


def column_parallel(plan: TPPlan, rows: torch.Tensor | None = None) -> Shard | None:
    return Shard(3, plan.devices, rows) if plan.devices > 1 else None


def row_parallel(plan: TPPlan) -> Shard | None:
    return Shard(2, plan.devices) if plan.devices > 1 else None


def residual_columns(plan: TPPlan, dim: int) -> Shard | None:
    """Each chip's columns of the residual stream, as a weight holds them: dim 3 of the embedding table
    [1, 1, vocab, hidden], dim 2 of a norm weight's [1, 1, hidden / 32, 32] sticks. None on one chip."""
    return Shard(dim, plan.devices) if plan.devices > 1 else None
