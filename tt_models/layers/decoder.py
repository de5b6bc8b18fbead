"""One pre-norm decoder layer: h = x + attention(norm(x)); out = h + mlp(norm(h)). Gemma's "sandwich" layer also
norms each block's output before its add: h = x + norm(attention(norm(x))); out = h + norm(mlp(norm(h))).

In decode the residual stream stays width-sharded in L1 (layouts.decode.residual): the norms run sharded, and the
attention and MLP outputs are brought back onto it before each add. Tensor parallel: x, h and out are each chip's
columns of the residual (tt_transformers' fractured residual); the norms gather them (tt_models/layers/norm.py) and
attention / MLP hand back this chip's columns of their reduce-scattered sums."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.attention import Attention, Rot
from tt_models.layers.mla import MLAttention
from tt_models.layers.mlp import MLP
from tt_models.layers.moe import MoE
from tt_models.layers.norm import ResidualNorm
from tt_models.layouts import ModelLayouts
from tt_models.model_args import ModelArgs
from tt_models.parallel import TPPlan, single_device_plan
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore


class DecoderLayer:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision,
                 layouts: ModelLayouts, plan: TPPlan | None = None, expert_dispatch: str = "reduce") -> None:
        p = f"layers.{layer}."
        plan = plan or single_device_plan(args)
        self.residual, self.layouts = prec.residual, layouts
        kernel = prec.kernels["NORM"]
        self.attention_norm = ResidualNorm(weights, p + "attention_norm.weight", args.norm_eps, kernel, plan, layouts)
        self.ffn_norm = ResidualNorm(weights, p + "ffn_norm.weight", args.norm_eps, kernel, plan, layouts)
        self.attention = (MLAttention if args.mla is not None else Attention)(args, weights, layer, prec, layouts,
                                                                             plan)
        self.mlp = (MoE(args, weights, layer, prec, weights.device, plan, expert_dispatch) if args.is_moe(layer) else
                    MLP(weights, layer, prec, layouts, plan, args.activation))
        self.post_attention_norm = self.post_ffn_norm = None
        if args.sandwich_norms:
            self.post_attention_norm, self.post_ffn_norm = (
                ResidualNorm(weights, p + name, args.norm_eps, kernel, plan, layouts, keep_columns=True)
                for name in ("post_attention_norm.weight", "post_ffn_norm.weight"))
        self.devices = plan.devices

    # ---------------- prefill (interleaved DRAM) ----------------
    def _add_prefill(self, x: Any, y: Any, norm: ResidualNorm | None) -> Any:
        if norm is not None:
            normed = norm.columns(y, ttnn.DRAM_MEMORY_CONFIG)
            ttnn.deallocate(y)
            y = normed
        out = ttnn.add(x, y, dtype=self.residual, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        ttnn.deallocate(y)
        return out

    def prefill(self, x: Any, rot: Rot, kv_cache: list, page_table: Any, user_id: int, **chunk: Any) -> Any:
        attn = self.attention.prefill(self.attention_norm.prefill(x), rot, kv_cache, page_table, user_id, **chunk)
        h = self._add_prefill(x, attn, self.post_attention_norm)
        return self._add_prefill(h, self.mlp.prefill(self.ffn_norm.prefill(h)), self.post_ffn_norm)

    # ---------------- decode (width-sharded residual) ----------------
    def _add_back(self, x: Any, y: Any, norm: ResidualNorm | None) -> Any:
        d = self.layouts.decode
        if norm is not None and self.devices > 1:  # a chip's columns, interleaved in L1: normed as they are
            normed = norm.columns(y, ttnn.L1_MEMORY_CONFIG)
            ttnn.deallocate(y)
            y, norm = normed, None
        # (to_memory_config hands back the very tensor when it already lives there: free it once, after the add)
        y_res = ttnn.to_memory_config(y, d.residual)
        if norm is not None:  # one chip: the sharded rms_norm on the residual's grid
            normed = norm.decode(y_res, d)
            ttnn.deallocate(y_res)
            y_res = normed
        out = ttnn.add(x, y_res, dtype=self.residual, memory_config=d.residual)
        ttnn.deallocate(y_res)
        return out

    def decode(self, x: Any, rot: Rot, kv_cache: list, current_pos: Any, page_table: Any,
               writes: Sequence[Any] | None = None) -> Any:
        d = self.layouts.decode
        attn = self.attention.decode(self.attention_norm.decode(x, d), rot, kv_cache, current_pos, page_table, writes)
        h = self._add_back(x, attn, self.post_attention_norm)
        return self._add_back(h, self.mlp.decode(self.ffn_norm.decode(h, d)), self.post_ffn_norm)
