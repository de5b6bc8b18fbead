"""One pre-norm decoder layer: h = x + attention(norm(x)); out = h + mlp(norm(h))."""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.layers.attention import Attention, Rot
from tt_models.layers.mlp import MLP
from tt_models.model_args import ModelArgs
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore


class DecoderLayer:
    def __init__(self, args: ModelArgs, weights: WeightStore, layer: int, prec: LayerPrecision) -> None:
        p = f"layers.{layer}."
        self.eps = args.norm_eps
        self.residual = prec.residual
        self.attention_norm = weights.norm(p + "attention_norm.weight")
        self.ffn_norm = weights.norm(p + "ffn_norm.weight")
        self.attention = Attention(args, weights, layer, prec)
        self.mlp = MLP(weights, layer, prec)

    def _ffn(self, h: Any) -> Any:
        return ttnn.add(h, self.mlp(ttnn.rms_norm(h, epsilon=self.eps, weight=self.ffn_norm)), dtype=self.residual)

    def prefill(self, x: Any, rot: Rot, kv_cache: list, page_table: Any, user_id: int, **chunk: Any) -> Any:
        attn = self.attention.prefill(ttnn.rms_norm(x, epsilon=self.eps, weight=self.attention_norm), rot, kv_cache,
                                      page_table, user_id, **chunk)
        return self._ffn(ttnn.add(x, attn, dtype=self.residual))

    def decode(self, x: Any, rot: Rot, kv_cache: list, current_pos: Any, page_table: Any) -> Any:
        attn = self.attention.decode(ttnn.rms_norm(x, epsilon=self.eps, weight=self.attention_norm), rot, kv_cache,
                                     current_pos, page_table)
        return self._ffn(ttnn.add(x, attn, dtype=self.residual))
