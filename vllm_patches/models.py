"""What vLLM's ModelRegistry sees for the TT architectures.

vLLM inspects a registered class for its interface (an nn.Module built from vllm_config, forward, compute_logits,
embed_input_ids). TT models are not torch modules: the TT worker builds them through the generation class's
initialize_vllm_model and never calls these adapters' compute methods, which refuse clearly if something does.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class _TTAdapter(nn.Module):
    def __init__(self, *, vllm_config: Any = None, prefix: str = "") -> None:
        super().__init__()
        self.vllm_config = vllm_config

    def _not_here(self, *_: Any, **__: Any) -> torch.Tensor:
        raise RuntimeError(f"{type(self).__name__} runs on the TT worker (vllm_patches.worker), not as a torch module")

    forward = _not_here
    compute_logits = _not_here
    embed_input_ids = _not_here

    def load_weights(self, weights: Any) -> set[str]:
        return set()


class TTLlamaForCausalLM(_TTAdapter):
    pass


class TTMistralForCausalLM(_TTAdapter):
    pass


class TTQwen2ForCausalLM(_TTAdapter):
    pass


class TTQwen3ForCausalLM(_TTAdapter):
    pass


class TTGemma3ForCausalLM(_TTAdapter):
    pass


class TTQwen3MoeForCausalLM(_TTAdapter):
    pass


class TTQwen2MoeForCausalLM(_TTAdapter):
    pass


class TTMixtralForCausalLM(_TTAdapter):
    pass


class TTGptOssForCausalLM(_TTAdapter):
    pass


class TTGlm4MoeForCausalLM(_TTAdapter):
    pass


class TTDeepseekV3ForCausalLM(_TTAdapter):
    pass
