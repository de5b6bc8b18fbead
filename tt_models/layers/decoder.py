"""One pre-norm decoder layer: h = x + attention(norm(x)); out = h + mlp(norm(h)).

In decode the residual stream stays width-sharded in L1 (layouts.decode.residual): the norms run sharded on its
grid, and the attention and MLP outputs are brought back onto it before each add."""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.attention import Attention, Rot
from tt_models.layers.mlp import MLP
from tt_models.layouts import ModelLayouts
from tt_models.model_args import ModelArgs
from tt_models.parallel import TPPlan
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore


class DecoderLayer:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision,
                 layouts: ModelLayouts, plan: TPPlan | None = None) -> None:
        p = f"layers.{layer}."
        self.eps = args.norm_eps
        self.residual, self.layouts = prec.residual, layouts
        self.norm_kernel = prec.kernels["NORM"]
        self.attention_norm = weights.norm(p + "attention_norm.weight")
        self.ffn_norm = weights.norm(p + "ffn_norm.weight")
        # Norms and the residual stream are whole on every chip; tensor parallelism lives inside attention and MLP.
        self.attention = Attention(args, weights, layer, prec, layouts, plan)
        self.mlp = MLP(weights, layer, prec, layouts, plan)

    # ---------------- prefill (interleaved DRAM) ----------------
    def _norm(self, x: Any, weight: Any) -> Any:
        return ttnn.rms_norm(x, epsilon=self.eps, weight=weight, compute_kernel_config=self.norm_kernel)

    def prefill(self, x: Any, rot: Rot, kv_cache: list, page_table: Any, user_id: int, **chunk: Any) -> Any:
        attn = self.attention.prefill(self._norm(x, self.attention_norm), rot, kv_cache, page_table, user_id, **chunk)
        h = ttnn.add(x, attn, dtype=self.residual, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        ttnn.deallocate(attn)
        out = self.mlp.prefill(self._norm(h, self.ffn_norm))
        return ttnn.add(h, out, dtype=self.residual, memory_config=ttnn.DRAM_MEMORY_CONFIG)

    # ---------------- decode (width-sharded residual) ----------------
    def _sharded_norm(self, x: Any, weight: Any) -> Any:
        d = self.layouts.decode
        return ttnn.rms_norm(x, epsilon=self.eps, weight=weight, program_config=d.norm, memory_config=d.residual,
                             compute_kernel_config=self.norm_kernel)

    def _add_back(self, x: Any, y: Any) -> Any:
        d = self.layouts.decode
        # (to_memory_config hands back the very tensor when it already lives there: free it once, after the add)
        y_res = ttnn.to_memory_config(y, d.residual)
        out = ttnn.add(x, y_res, dtype=self.residual, memory_config=d.residual)
        ttnn.deallocate(y_res)
        return out

    def decode(self, x: Any, rot: Rot, kv_cache: list, current_pos: Any, page_table: Any) -> Any:
        attn = self.attention.decode(self._sharded_norm(x, self.attention_norm), rot, kv_cache, current_pos,
                                     page_table)
        h = self._add_back(x, attn)
        return self._add_back(h, self.mlp.decode(self._sharded_norm(h, self.ffn_norm)))
