"""Sampling parameters handed to the model when vLLM samples on device (TT's TTSamplingParams)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TTSamplingParams:
    """Per-request lists (or one value for the whole batch), as Tenstorrent's plugin passes them. On device:
    greedy (argmax), and temperature / top-k (1..32) / top-p draws with ttnn.sampling; `seed` entries that are not
    None reseed that user's core PRNG before this step (the runner sends a request's seed once, when it starts
    sampling on device). Penalties and logprobs are done on the host by vLLM's sampler from the logits."""

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


def _per_user(x: Any, n: int) -> list:
    v = _values(x)
    return v * n if len(v) == 1 else v


def sampling_mode(params: TTSamplingParams | None) -> str:
    """What the decode step hands back: "logits" (the host samples), "argmax" (every user greedy: the token on
    device), or "sample" (ttnn.sampling with per-user temperature / top-k / top-p). Refuses what the device path
    cannot do instead of silently ignoring it."""
    if params is None:
        return "logits"
    if is_greedy(params):
        return "argmax"
    no_penalties = (all(p == 0 for p in _values(params.presence_penalty))
                    and all(p == 0 for p in _values(params.frequency_penalty))
                    and all(p == 1 for p in _values(params.repetition_penalty)))
    if not no_penalties or any(_values(params.enable_log_probs)) or any(_values(params.num_logprobs)):
        raise ValueError("on-device sampling does temperature, top-k (<= 32), top-p and seeds; penalties and "
                         "logprobs are sampled on the host (pass sampling_params=None for logits)")
    return "sample"


def per_user_lists(params: TTSamplingParams, users: int) -> tuple[list, list, list, list]:
    """temperature, top_k, top_p and seed as one entry per user (a single value applies to all)."""
    return (_per_user(params.temperature, users), _per_user(params.top_k, users), _per_user(params.top_p, users),
            _per_user(params.seed, users))
