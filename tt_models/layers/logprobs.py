"""vLLM's sampled-token logprobs on the device (logprobs_mode "raw_logprobs", vllm/v1/sample/sampler.py): the
log-softmax of the RAW logits (before penalties and temperature) at the sampled token, the token's rank among them
((logprobs >= its logprob).sum()), and the 32 best tokens' logprobs with their ids, sorted (vLLM keeps the first
num_logprobs of them).

In fp32: lse = max + log(sum(exp(logits - max))) with the max the best top-k value; the sampled token's logit is
sum(one_hot * logits) with the one-hot row the penalties' update builds too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tt_models.backend import ttnn

F32 = ttnn.float32
DRAM = ttnn.DRAM_MEMORY_CONFIG  # [rows, vocab] intermediates: the logits may sit in L1, their copies need not


@dataclass
class RawLogprobs:
    logits: Any  # [1, 1, rows, vocab] fp32 (the step's logits themselves when they are fp32)
    lse: Any  # [1, 1, rows, 1] fp32
    top_logprobs: Any  # [1, 1, rows, 32] fp32, best first
    top_ids: Any  # [1, 1, rows, 32] token ids (uint16 or uint32)


def raw_logprobs(logits: Any, top_values: Any, top_ids: Any) -> RawLogprobs:
    """logits [1, 1, rows, vocab]; top_values / top_ids: its 32 best per row, sorted (DeviceSampler.top)."""
    x = logits if logits.dtype == F32 else ttnn.typecast(logits, F32, memory_config=DRAM)
    top = top_values if top_values.dtype == F32 else ttnn.typecast(top_values, F32)
    rows = top.shape[-2]
    mx = ttnn.slice(top, [0, 0, 0, 0], [1, 1, rows, 1])
    shifted = ttnn.sub(x, mx, memory_config=DRAM)
    e = ttnn.exp(shifted)
    ttnn.deallocate(shifted)
    s = ttnn.sum(e, dim=-1, keepdim=True)
    ttnn.deallocate(e)
    log_s = ttnn.log(s)
    lse = ttnn.add(mx, log_s)
    for t in (s, log_s, mx):
        ttnn.deallocate(t)
    return RawLogprobs(x, lse, ttnn.sub(top, lse), top_ids)


def sampled_logprob(raw: RawLogprobs, one_hot: Any) -> tuple[Any, Any]:
    """The sampled token's raw logprob and rank, each [1, 1, rows, 1] fp32; one_hot [1, 1, rows, vocab] fp32 marks
    each row's token."""
    picked = ttnn.mul(one_hot, raw.logits)
    logit = ttnn.sum(picked, dim=-1, keepdim=True)
    ttnn.deallocate(picked)
    at_least = ttnn.ge(raw.logits, logit, memory_config=DRAM)
    rank = ttnn.sum(at_least, dim=-1, keepdim=True)
    ttnn.deallocate(at_least)
    logprob = ttnn.sub(logit, raw.lse)
    ttnn.deallocate(logit)
    return logprob, rank
