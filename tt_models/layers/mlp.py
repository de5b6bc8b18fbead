"""Gated feed-forward: w2(act(w1 x) * w3 x), the activation fused into the multiply as TT does: SiLU (SwiGLU), or
GELU's tanh form (Gemma's GeGLU, HF's gelu_pytorch_tanh).

Decode multiplies straight from the width-sharded residual and keeps every intermediate width-sharded in L1 (the
gate/up product feeds w2 in the sharding it comes in); prefill runs on interleaved DRAM with 2-D matmuls."""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.collectives import reduce_inputs, reduce_partials
from tt_models.layers.linear import prefill_linear
from tt_models.layouts import ModelLayouts
from tt_models.parallel import TPPlan, column_parallel, row_parallel
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore

# HF activation name -> the unary op fused into the gate multiply.
_ACTIVATIONS = {"silu": "SILU", "gelu_pytorch_tanh": "GELU_TANH"}


class MLP:
    def __init__(self, weights: WeightStore, layer: int, prec: LayerPrecision, layouts: ModelLayouts,
                 plan: TPPlan | None = None, activation: str = "silu") -> None:
        p = f"layers.{layer}.feed_forward."
        self.prec, self.layouts, self.plan = prec, layouts, plan
        self.activation = getattr(ttnn.UnaryOpType, _ACTIVATIONS[activation])
        # Tensor parallel: w1/w3 column-parallel (each chip its slice of hidden units), w2 row-parallel over it.
        cols = column_parallel(plan) if plan else None
        rows = row_parallel(plan) if plan else None
        self.w1 = weights.linear([p + "w1.weight"], prec.ff1_ff3, p + "w1", layouts.weights["w1_w3"], shard=cols)
        self.w3 = weights.linear([p + "w3.weight"], prec.ff1_ff3, p + "w3", layouts.weights["w1_w3"], shard=cols)
        self.w2 = weights.linear([p + "w2.weight"], prec.ff2, p + "w2", layouts.weights["w2"], shard=rows)

    def _run(self, x: Any, mem: Any, up_down: Any) -> Any:
        k = self.prec.kernels
        plan = self.plan
        gate = up_down(x, self.w1, dtype=self.prec.residual, memory_config=mem, compute_kernel_config=k["LI_FF1_FF3"])
        up = up_down(x, self.w3, dtype=self.prec.residual, memory_config=mem, compute_kernel_config=k["LI_FF1_FF3"])
        if plan is not None and plan.two_d:  # partial sums over the row's columns of x: summed where they lie
            gate = reduce_inputs(gate, plan, gate.memory_config())
            up = reduce_inputs(up, plan, up.memory_config())
        h = ttnn.mul(gate, up, input_tensor_a_activations=[self.activation], dtype=self.prec.activation,
                     memory_config=gate.memory_config())
        ttnn.deallocate(gate)
        ttnn.deallocate(up)
        out = up_down(h, self.w2, dtype=self.prec.residual, memory_config=mem, compute_kernel_config=k["LI_FF2"])
        ttnn.deallocate(h)
        if self.plan is None:
            return out
        return reduce_partials(out, self.plan, ttnn.L1_MEMORY_CONFIG if out.is_sharded() else mem)

    def decode(self, x: Any) -> Any:
        d = self.layouts.decode

        def linear(t: Any, w: Any, **kw: Any) -> Any:
            return ttnn.linear(t, w, program_config=d.w2.program if w is self.w2 else d.w1_w3.program, **kw)

        return self._run(x, ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG, linear)

    def prefill(self, x: Any) -> Any:
        seq = x.shape[-2]
        lay = self.layouts

        def linear(t: Any, w: Any, **kw: Any) -> Any:
            k_dim, n = w.shape[-2], w.shape[-1]
            mm = lay.prefill_matmul(seq, k_dim, n, t, w, kw["dtype"], kw["compute_kernel_config"])
            return prefill_linear(t, w, mm, **kw)

        return self._run(x, ttnn.DRAM_MEMORY_CONFIG, linear)
