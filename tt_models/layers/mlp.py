"""SwiGLU feed-forward: w2(silu(w1 x) * w3 x), with SiLU fused into the multiply as TT does."""

from __future__ import annotations

from typing import Any

from tt_models.backend import ttnn
from tt_models.precision import LayerPrecision
from tt_models.weights import WeightStore


class MLP:
    def __init__(self, weights: WeightStore, layer: int, prec: LayerPrecision) -> None:
        p = f"layers.{layer}.feed_forward."
        self.prec = prec
        self.w1 = weights.linear([p + "w1.weight"], prec.ff1_ff3, p + "w1")
        self.w3 = weights.linear([p + "w3.weight"], prec.ff1_ff3, p + "w3")
        self.w2 = weights.linear([p + "w2.weight"], prec.ff2, p + "w2")

    def __call__(self, x: Any) -> Any:
        k = self.prec.kernels
        gate = ttnn.linear(x, self.w1, dtype=self.prec.residual, compute_kernel_config=k["LI_FF1_FF3"])
        up = ttnn.linear(x, self.w3, dtype=self.prec.residual, compute_kernel_config=k["LI_FF1_FF3"])
        h = ttnn.mul(gate, up, input_tensor_a_activations=[ttnn.UnaryOpType.SILU], dtype=self.prec.activation)
        ttnn.deallocate(gate)
        ttnn.deallocate(up)
        out = ttnn.linear(h, self.w2, dtype=self.prec.residual, compute_kernel_config=k["LI_FF2"])
        ttnn.deallocate(h)
        return out
