"""RMSNorm on the residual stream, as tt_transformers' DistributedNorm runs it: the input is this chip's columns of
the residual (tensor parallel) or the whole row (one chip); the output is the whole normed row on every chip, what
the column-parallel QKV / w1,w3 and the LM head multiply.

- one chip: the ordinary rms_norm (decode: sharded on the residual grid);
- tensor parallel, gathered (decode, and prefill up to dim 4096): all_gather the residual's columns, then the
  ordinary rms_norm with the whole weight;
- tensor parallel, distributed (prefill above dim 4096, tt_transformers' `is_distributed_norm`):
  rms_norm_pre_all_gather (per-chip sum of squares) -> all_gather of the stats -> rms_norm_post_all_gather with this
  chip's columns of the weight -> all_gather of the normed columns. Only [rows, 32 * N] of stats cross the chips
  before the norm, not the activation.
- 2-D mesh (tt_transformers' TG): always the distributed rms_norm with the stats gathered along each row, and no
  final gather: the output stays this chip's dim / C columns, which the two-way split QKV / w1,w3 / LM head read.
  Decode runs it on interleaved L1 (the simulator has no sharded LayerNorm program for these ops) and puts the
  result back on the residual's width sharding.

A padded residual (TPPlan.dim_pad: zero columns at its end, so that each chip holds whole tiles) is gathered whole
and the model's own columns sliced off before the norm (decode: through interleaved L1, then placed on the normed
width sharding), so the norm averages over the model's width and its output is the unpadded row. The distributed
norm's device op divides the summed squares by the padded width: it takes epsilon and gamma (fp32) scaled to give
the model's norm (tt_models/parallel.py), and a 1-D gather of its output slices the padding off as well.

Gemma's norms of the attention / MLP outputs (`columns`) keep the residual's split: under tensor parallel their input
is a chip's columns of the reduce-scattered sum, normed by the distributed rms_norm (the stats gathered, never the
activation) and left as those columns for the residual add.
"""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.collectives import gather_columns
from tt_models.layouts import DecodeLayouts, ModelLayouts
from tt_models.parallel import TPPlan, residual_columns
from tt_models.weights import WeightStore


class ResidualNorm:
    def __init__(self, weights: WeightStore, name: str, eps: float, kernel: Any, plan: TPPlan,
                 layouts: ModelLayouts, keep_columns: bool = False) -> None:
        self.eps, self.kernel, self.plan = eps, kernel, plan
        # The output stays this chip's columns of the residual (Gemma's output norms), whatever the mesh.
        self.keep_columns = keep_columns
        distributed = plan.distributed_norm("prefill") or (keep_columns and plan.devices > 1)
        # Whole (replicated on a mesh), where a mode runs the ordinary rms_norm (every mode but the 2-D ones).
        self.weight = None if plan.two_d else weights.norm(name)
        # Prefill's ordinary rms_norm of a row too wide for the whole-row program: gamma as a TILE row.
        self.prefill_weight = self.weight
        if self.weight is not None and layouts.prefill_norm_tile_gamma and not plan.distributed_norm("prefill"):
            self.prefill_weight = weights.norm_row(name)
        # This chip's columns of the weight, for the distributed rms_norm (only where a mode uses it).
        # Over a padded residual: epsilon and gamma scaled so that the mean of squares is over the model's columns.
        self.distributed_eps = eps * plan.norm_scale
        self.weight_columns = (weights.norm(name, shard=residual_columns(plan, 2), scale=plan.norm_scale**0.5)
                               if distributed else None)

    def prefill(self, x: Any) -> Any:
        """x [1, 1, S, dim / N] in DRAM -> the normed [1, 1, S, dim] in DRAM."""
        if self.plan.devices == 1:
            return ttnn.rms_norm(x, epsilon=self.eps, weight=self.prefill_weight, compute_kernel_config=self.kernel)
        if self.plan.distributed_norm("prefill"):
            return self._distributed(x, ttnn.DRAM_MEMORY_CONFIG)
        whole = self._real_columns(gather_columns(x, self.plan, ttnn.DRAM_MEMORY_CONFIG), ttnn.DRAM_MEMORY_CONFIG)
        out = ttnn.rms_norm(whole, epsilon=self.eps, weight=self.prefill_weight, compute_kernel_config=self.kernel)
        ttnn.deallocate(whole)
        return out

    def decode(self, x: Any, d: DecodeLayouts, kernel: Any = None) -> Any:
        """x width-sharded on the residual grid -> the normed [1, 1, B, dim] width-sharded on the normed grid."""
        kernel = kernel or self.kernel
        if self.plan.devices == 1:
            return ttnn.rms_norm(x, epsilon=self.eps, weight=self.weight, program_config=d.norm,
                                 memory_config=d.residual, compute_kernel_config=kernel)
        if self.plan.two_d:
            flat = ttnn.sharded_to_interleaved(x, ttnn.L1_MEMORY_CONFIG)
            normed = self._distributed(flat, ttnn.L1_MEMORY_CONFIG, kernel)
            ttnn.deallocate(flat)
            out = ttnn.interleaved_to_sharded(normed, d.normed)
            ttnn.deallocate(normed)
            return out
        if self.plan.dim_pad:
            flat = ttnn.sharded_to_interleaved(x, ttnn.L1_MEMORY_CONFIG)
            real = self._real_columns(gather_columns(flat, self.plan, ttnn.L1_MEMORY_CONFIG), ttnn.L1_MEMORY_CONFIG)
            ttnn.deallocate(flat)
            whole = ttnn.interleaved_to_sharded(real, d.normed)
            ttnn.deallocate(real)
        else:
            whole = gather_columns(x, self.plan, d.normed)
        out = ttnn.rms_norm(whole, epsilon=self.eps, weight=self.weight, program_config=d.norm,
                            memory_config=d.normed, compute_kernel_config=kernel)
        ttnn.deallocate(whole)
        return out

    def _real_columns(self, whole: Any, memory_config: Any) -> Any:
        """The gathered residual [1, 1, rows, dim + pad] -> its first dim columns (the model's; the padding's zero
        columns are last), in memory_config. Without padding the input itself."""
        if not self.plan.dim_pad:
            return whole
        rows, width = whole.shape[-2], whole.shape[-1] - self.plan.dim_pad
        real = ttnn.slice(whole, [0, 0, 0, 0], [1, 1, rows, width], memory_config=memory_config)
        ttnn.deallocate(whole)
        return real

    def columns(self, x: Any, memory_config: Any) -> Any:
        """x interleaved [1, 1, S, dim / N] (a chip's columns; one chip: the whole row) -> the normed columns,
        interleaved in memory_config."""
        if self.plan.devices == 1:
            return ttnn.rms_norm(x, epsilon=self.eps, weight=self.prefill_weight, compute_kernel_config=self.kernel,
                                 memory_config=memory_config)
        return self._distributed(x, memory_config)

    def _distributed(self, x: Any, memory_config: Any, kernel: Any = None) -> Any:
        """x interleaved in memory_config -> the normed row: gathered (1-D), or this chip's columns of it (2-D)."""
        kernel = kernel or self.kernel
        # Stats in the residual's precision class: fp32 where the residual is fp32 (the simulator's reference
        # profile), else bf16 as tt_transformers gathers them.
        stats_dtype = ttnn.float32 if x.dtype == ttnn.float32 else ttnn.bfloat16
        stats = ttnn.rms_norm_pre_all_gather(x, compute_kernel_config=kernel, dtype=stats_dtype,
                                             memory_config=memory_config)
        gathered = gather_columns(stats, self.plan, memory_config)
        ttnn.deallocate(stats)
        out = ttnn.rms_norm_post_all_gather(x, gathered, epsilon=self.distributed_eps, weight=self.weight_columns,
                                            compute_kernel_config=kernel, memory_config=memory_config)
        ttnn.deallocate(gathered)
        if self.plan.two_d or self.keep_columns:
            return out
        whole = gather_columns(out, self.plan, memory_config)
        ttnn.deallocate(out)
        return self._real_columns(whole, memory_config)
