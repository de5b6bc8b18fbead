"""The collectives tensor parallelism adds to the model (tt_models/parallel.py says what is split), as
tt_transformers runs them on N300 / T3K with a fractured residual stream:

- `reduce_partials`: the row-parallel WO and w2 products are partial sums over each chip's heads / hidden units,
  [.., dim] on every chip; ttnn.reduce_scatter over the TP group sums them and leaves each chip its dim / N columns of
  the sum, which it adds to its columns of the residual.
- `gather_columns`: each chip's columns concatenated on every chip (ttnn.all_gather on the last dim): the residual
  before a norm, or the distributed norm's per-chip stats.
- `gather_vocab`: the LM head's vocabulary slices all-gathered so that on-device argmax and sampling, which need the
  whole vocabulary, see it. Logits read back to the host skip it: the host concatenates the slices
  (ConcatMeshToTensor), which moves each logit once instead of N times.

On a 2-D mesh (tt_transformers' TG split, tt_models/parallel.py) the residual is fractured over each row's chips
and the heads / hidden units / vocabulary over the rows:

- `reduce_inputs`: QKV, w1, w3 and the LM head multiply this chip's columns of the normed residual, so their
  products are partial sums over a row's chips: ttnn.all_reduce along axis 1 gives every chip of the row the sum
  (its row's heads / hidden units / vocabulary slice). A no-op off 2-D meshes (there those matmuls read the gathered
  residual).
- `reduce_partials`: WO and w2 products are partial sums over the rows (each row its heads / hidden units), already
  split by columns: ttnn.all_reduce along axis 0 leaves each chip its columns of the sum, the fractured residual.
- `gather_vocab`: the rows' vocabulary slices all-gathered along axis 0.
- `gather_users`: decode attention runs a share of the users on each chip of a row (`users_mapper` lays its inputs);
  the outputs are all-gathered along axis 1 on the users dim.

On one chip (plan.devices == 1) the reductions and gather_vocab hand back their input and no op runs: the
single-chip graph is unchanged (the norms call gather_columns only on a mesh).
"""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.parallel import TPPlan

# The TP group is a line of chips (a 1xN row): Linear, as tt_transformers uses on N300 / T3K rows.
TOPOLOGY = "Linear"
TILE = 32


def _interleaved(x: Any) -> Any:
    """A sharded input (decode's width-sharded matmul outputs) goes to interleaved L1 first, as tt_transformers'
    tt_all_reduce hands it to the collective."""
    if not x.is_sharded():
        return x
    flat = ttnn.sharded_to_interleaved(x, ttnn.L1_MEMORY_CONFIG)
    ttnn.deallocate(x)
    return flat


def _all_reduce(x: Any, axis: int, memory_config: Any) -> Any:
    """The sum over the chips along `axis`, on each of them, in memory_config (a sharded one: reduced in L1, then
    sharded)."""
    x = _interleaved(x)
    sharded = memory_config.is_sharded()
    out = ttnn.all_reduce(x, cluster_axis=axis, memory_config=ttnn.L1_MEMORY_CONFIG if sharded else memory_config,
                          topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(x)
    if sharded:
        placed = ttnn.interleaved_to_sharded(out, memory_config)
        ttnn.deallocate(out)
        out = placed
    return out


def reduce_partials(x: Any, plan: TPPlan, memory_config: Any) -> Any:
    """[1, 1, rows, dim] partial sums on every chip -> chip d's columns [d * dim / N, (d + 1) * dim / N) of their sum
    over the TP group, in memory_config (2-D: [1, 1, rows, dim / C] partial sums over the rows -> their sum)."""
    if plan.devices == 1:
        return x
    if plan.two_d:
        return _all_reduce(x, 0, memory_config)
    x = _interleaved(x)
    out = ttnn.reduce_scatter(x, 3, cluster_axis=plan.cluster_axis, memory_config=memory_config,
                              topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(x)
    return out


def reduce_experts(x: Any, plan: TPPlan, memory_config: Any) -> Any:
    """Expert parallel: [1, 1, rows, dim] partial sums on every chip (each its experts' share) -> this chip's columns
    of their sum over all chips, the fractured residual: reduce-scattered along the residual's axis, and on a 2-D mesh
    then all-reduced down the rows (each row's chips hold other experts)."""
    if plan.devices == 1:
        return x
    if not plan.two_d:
        return reduce_partials(x, plan, memory_config)
    x = _interleaved(x)
    part = ttnn.reduce_scatter(x, 3, cluster_axis=1, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                               topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(x)
    return _all_reduce(part, 0, memory_config)


def reduce_inputs(x: Any, plan: TPPlan, memory_config: Any) -> Any:
    """2-D: a product of this chip's residual columns, a partial sum over its row -> the row's sum on each of its
    chips, in memory_config. Elsewhere the input itself (those products are whole)."""
    return _all_reduce(x, 1, memory_config) if plan.two_d else x


def gather_columns(x: Any, plan: TPPlan, memory_config: Any) -> Any:
    """[.., cols] on each chip -> [.., N * cols] on every chip (the chips' columns in order), in memory_config."""
    return ttnn.all_gather(x, 3, cluster_axis=plan.cluster_axis, memory_config=memory_config,
                           topology=getattr(ttnn.Topology, TOPOLOGY))


def gather_vocab(logits: Any, plan: TPPlan) -> Any:
    """[1, 1, rows, vocab / N] per chip -> [1, 1, rows, vocab] on every chip, in the input's memory config; in DRAM
    where each chip's slice is not whole tiles (Gemma 3's 262,208 over 8 chips: 32,776 columns). ttnn 0.81.1
    gathers such a slice with its composite path (every chip's slice broadcast, untilized, concatenated as rows and
    tilized again) in the input's buffer type, whatever memory_config says, and the row-major concat holds a whole
    gathered row in its circular buffers (524,416 B for 262,208 bf16 logits): in L1, beside the staged copies, the
    device refuses it ("clash with L1 buffers"); from DRAM the buffers fit."""
    if plan.devices == 1:
        return logits
    axis = 0 if plan.two_d else plan.cluster_axis  # 2-D: the vocabulary is split over the rows
    if logits.shape[-1] % TILE and logits.memory_config().buffer_type == ttnn.BufferType.L1:
        moved = ttnn.to_memory_config(logits, ttnn.DRAM_MEMORY_CONFIG)
        ttnn.deallocate(logits)
        logits = moved
    out = ttnn.all_gather(logits, 3, cluster_axis=axis, topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(logits)
    return out


def to_host(t: Any, plan: TPPlan, mesh_device: Any, vocab_sliced: bool) -> Any:
    """A model output read back as one torch tensor: vocabulary-sliced logits concatenated on the last dim;
    anything replicated (gathered logits, token ids) read as one copy."""
    if plan.devices == 1:
        return ttnn.to_torch(t)
    if vocab_sliced and plan.two_d:
        # Rows' slices side by side on the last dim, a row's (equal) copies stacked on dim 0: keep one.
        composer = ttnn.ConcatMesh2dToTensor(mesh_device, mesh_shape=tuple(mesh_device.shape), dims=(3, 0))
        return ttnn.to_torch(t, mesh_composer=composer)[:1]
    if vocab_sliced:
        return ttnn.to_torch(t, mesh_composer=ttnn.ConcatMeshToTensor(mesh_device, dim=-1))
    return ttnn.to_torch(t, mesh_composer=ttnn.ConcatMeshToTensor(mesh_device, dim=0))[:1]


def users_mapper(mesh_device: Any, plan: TPPlan, dim: int) -> Any:
    """The mesh mapper of a per-user decode input (positions, page-table rows, rotary indices) whose users lie along
    tensor dim `dim`: on a 2-D mesh split over each row's chips (chip (r, c) gets users [c * U, (c + 1) * U), U =
    users / C, as tt_transformers splits the decode users on a Galaxy); a copy on every chip elsewhere."""
    if plan.two_d:
        return ttnn.ShardTensor2dMesh(mesh_device, dims=(None, dim), mesh_shape=plan.grid)
    return replicate(mesh_device)


def gather_users(x: Any, plan: TPPlan) -> Any:
    """2-D: each chip's decode attention output [1, U, heads, head_dim] for its users -> [1, C * U, heads, head_dim]
    for every user of the row, in user order, on each of its chips (all_gather along axis 1 on the users dim, which
    no tile pads; rows of empty users stay theirs)."""
    out = ttnn.all_gather(x, 1, cluster_axis=1, memory_config=x.memory_config(),
                          topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(x)
    return out


def replicate(mesh_device: Any) -> Any:
    """The mesh mapper host inputs take: a copy on every chip of a multi-chip mesh; None (ttnn's default) on one."""
    return ttnn.ReplicateTensorToMesh(mesh_device) if mesh_device.get_num_devices() > 1 else None
