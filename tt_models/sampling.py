"""Sampling parameters handed to the model when vLLM samples on device (TT's TTSamplingParams)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TTSamplingParams:
    """Per-request lists (or one value for the whole batch), as Tenstorrent's plugin passes them. On device:
    greedy (argmax), and temperature / top-k (1..32) / top-p draws with ttnn.sampling; `seed` entries that are not
    None reseed that user's core PRNG before this step (the runner sends a request's seed once, when it starts
    sampling on device). Presence / frequency / repetition penalties and logprobs (the sampled token's raw logprob
    and rank, and up to 32 top tokens) are done on the device too ("sample_full"): `token_history` is each user's
    (prompt token ids, output token ids so far) or None, and `history_key` any value naming who holds the slots
    (the device keeps the history while it stays the same, and rebuilds it from `token_history` when it changes)."""

    temperature: Any = 0.0
    top_k: Any = 1
    top_p: Any = 1.0
    presence_penalty: Any = 0.0
    frequency_penalty: Any = 0.0
    repetition_penalty: Any = 1.0
    seed: Any = None
    num_logprobs: Any = 0
    enable_log_probs: Any = False
    token_history: Any = None
    history_key: Any = None


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


MAX_LOGPROBS = 32  # the top tokens the device ranks per user (one topk pass)


def sampling_mode(params: TTSamplingParams | None) -> str:
    """What the decode step hands back: "logits" (the host samples), "argmax" (every user greedy: the token on
    device), "sample" (ttnn.sampling with per-user temperature / top-k / top-p) or "sample_full" (the same from
    penalised logits, with raw logprobs). Refuses what the device path cannot do instead of silently ignoring it."""
    if params is None:
        return "logits"
    if is_greedy(params):
        return "argmax"
    too_many = [n for n in _values(params.num_logprobs) if n and not 0 <= n <= MAX_LOGPROBS]
    if too_many:
        raise ValueError(f"on-device logprobs rank the {MAX_LOGPROBS} best tokens: {too_many[0]} logprobs need "
                         f"host sampling (pass sampling_params=None for logits)")
    no_penalties = (all(p == 0 for p in _values(params.presence_penalty))
                    and all(p == 0 for p in _values(params.frequency_penalty))
                    and all(p == 1 for p in _values(params.repetition_penalty)))
    if not no_penalties or any(_values(params.enable_log_probs)) or any(_values(params.num_logprobs)):
        return "sample_full"
    return "sample"


def per_user_lists(params: TTSamplingParams, users: int) -> tuple[list, list, list, list]:
    """temperature, top_k, top_p and seed as one entry per user (a single value applies to all)."""
    return (_per_user(params.temperature, users), _per_user(params.top_k, users), _per_user(params.top_p, users),
            _per_user(params.seed, users))


def penalty_lists(params: TTSamplingParams, users: int) -> tuple[list, list, list]:
    """presence, frequency and repetition penalties as one entry per user."""
    return (_per_user(params.presence_penalty, users), _per_user(params.frequency_penalty, users),
            _per_user(params.repetition_penalty, users))
