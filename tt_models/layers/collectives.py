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

On one chip (plan.devices == 1) reduce_partials and gather_vocab hand back their input and no op runs: the
single-chip graph is unchanged (the norms call gather_columns only on a mesh).
"""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.parallel import TPPlan

# The TP group is a line of chips (a 1xN row): Linear, as tt_transformers uses on N300 / T3K rows.
TOPOLOGY = "Linear"


def reduce_partials(x: Any, plan: TPPlan, memory_config: Any) -> Any:
    """[1, 1, rows, dim] partial sums on every chip -> chip d's columns [d * dim / N, (d + 1) * dim / N) of their sum
    over the TP group, in memory_config. A sharded input (decode's width-sharded matmul outputs) goes to interleaved
    L1 first, as tt_transformers' tt_all_reduce hands it to the reduce-scatter."""
    if plan.devices == 1:
        return x
    if x.is_sharded():
        flat = ttnn.sharded_to_interleaved(x, ttnn.L1_MEMORY_CONFIG)
        ttnn.deallocate(x)
        x = flat
    out = ttnn.reduce_scatter(x, 3, cluster_axis=plan.cluster_axis, memory_config=memory_config,
                              topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(x)
    return out


def gather_columns(x: Any, plan: TPPlan, memory_config: Any) -> Any:
    """[.., cols] on each chip -> [.., N * cols] on every chip (the chips' columns in order), in memory_config."""
    return ttnn.all_gather(x, 3, cluster_axis=plan.cluster_axis, memory_config=memory_config,
                           topology=getattr(ttnn.Topology, TOPOLOGY))


def gather_vocab(logits: Any, plan: TPPlan) -> Any:
    """[1, 1, rows, vocab / N] per chip -> [1, 1, rows, vocab] on every chip, in the input's memory config."""
    if plan.devices == 1:
        return logits
    out = ttnn.all_gather(logits, 3, cluster_axis=plan.cluster_axis, topology=getattr(ttnn.Topology, TOPOLOGY))
    ttnn.deallocate(logits)
    return out


def to_host(t: Any, plan: TPPlan, mesh_device: Any, vocab_sliced: bool) -> Any:
    """A model output read back as one torch tensor: vocabulary-sliced logits concatenated on the last dim;
    anything replicated (gathered logits, token ids) read as one copy."""
    if plan.devices == 1:
        return ttnn.to_torch(t)
    if vocab_sliced:
        return ttnn.to_torch(t, mesh_composer=ttnn.ConcatMeshToTensor(mesh_device, dim=-1))
    return ttnn.to_torch(t, mesh_composer=ttnn.ConcatMeshToTensor(mesh_device, dim=0))[:1]


def replicate(mesh_device: Any) -> Any:
    """The mesh mapper host inputs take: a copy on every chip of a multi-chip mesh; None (ttnn's default) on one."""
    return ttnn.ReplicateTensorToMesh(mesh_device) if mesh_device.get_num_devices() > 1 else None
