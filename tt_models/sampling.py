"""Sampling parameters handed to the model when vLLM samples on device (TT's TTSamplingParams)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TTSamplingParams:
    """Per-request lists (or one value for the whole batch). Only greedy decoding runs on device here; anything
    else is sampled on the host by vLLM's own sampler from the returned logits."""

    temperature: Any = 0.0
    top_k: Any = 1
    top_p: Any = 1.0
    presence_penalty: Any = 0.0
    frequency_penalty: Any = 0.0
    repetition_penalty: Any = 1.0
    seed: Any = None
    num_logprobs: Any = 0
    enable_log_probs: Any = False


def _values(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def is_greedy(params: TTSamplingParams | None) -> bool:
    """True when every request decodes greedily with no penalties or logprobs (argmax on device suffices)."""
    if params is None:
        return False
    greedy = all(t == 0 for t in _values(params.temperature)) or all(k == 1 for k in _values(params.top_k))
    neutral = (all(p == 0 for p in _values(params.presence_penalty))
               and all(p == 0 for p in _values(params.frequency_penalty))
               and all(p == 1 for p in _values(params.repetition_penalty)))
    return greedy and neutral and not any(_values(params.enable_log_probs))


def require_device_sampling_support(params: TTSamplingParams | None) -> bool:
    """Whether to sample on device; refuses options the device path cannot do instead of silently ignoring them."""
    if params is None:
        return False
    if not is_greedy(params):
        raise ValueError(
            "on-device sampling supports greedy decoding only (temperature 0 or top_k 1, no penalties, no logprobs); "
            "sample on the host (the default) for temperature/top-k/top-p/penalties/logprobs")
    return True
