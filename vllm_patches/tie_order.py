"""One tie rule for every sampling path: among exactly equal logits, the lowest token id wins.

Logits come off a TT device in bf16, where exact ties at the top are common, so a rule that differs between paths
makes the same request give different text depending on where it is sampled. The device keeps the first of equal
maxima (ttnn.argmax), and its sampling ranks candidates stably, best first and equal values by id (see
tt_models/layers/sampling.py): greedy, top_k = 1 and a top-p that keeps one token all give the lowest id.

vLLM's greedy path (argmax) already does. Its top-k / top-p masking does not: top-k keeps every value equal to the
k-th, so top_k = 1 draws at random among tied maxima, and top-p keeps whichever of them its unstable sort leaves
last. For TT, the host sampler masks with the device's rule instead, on a stable best-first order: the first k
tokens, then those whose probability mass ahead of them (after top-k) is below p, and always the first. The draw
itself, temperatures, penalties, seeded generators and logprobs stay vLLM's own; only the N best tokens a logprobs
request lists are ranked the device's way too (vLLM's torch.topk lists equal logprobs in no defined order).
"""

from __future__ import annotations

from typing import Any

import torch


def tie_ordered_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None, p: torch.Tensor | None) -> torch.Tensor:
    """Mask logits [rows, vocab] (in place, as vLLM's apply_top_k_top_p) to each row's top-k / top-p set, ties by
    lowest id. k: tokens kept per row (the vocabulary size for none); p: probability mass per row (1.0 for none)."""
    if k is None and p is None:
        return logits
    ordered, ids = logits.sort(dim=-1, descending=True, stable=True)
    rank = torch.arange(logits.shape[-1], device=logits.device)
    keep = torch.ones_like(ordered, dtype=torch.bool)
    if k is not None:
        keep &= rank[None, :] < k.to(torch.long)[:, None]
    if p is not None:
        probs = ordered.masked_fill(~keep, -float("inf")).softmax(dim=-1)
        ahead = probs.cumsum(dim=-1) - probs
        keep &= ahead < p.to(probs.dtype)[:, None]
    keep[:, 0] = True
    return logits.scatter_(-1, ids, ordered.masked_fill(~keep, -float("inf")))


def tie_ordered_topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest of each row of x [rows, n], best first, equal values lowest index first."""
    ordered, ids = x.sort(dim=-1, descending=True, stable=True)
    return ordered[:, :k], ids[:, :k]


def install(sampler: Any) -> None:
    """Make a vLLM Sampler's top-k / top-p masking, and the N best tokens its logprobs list, follow the device's
    tie rule. The masking happens here, then vLLM's own sampling function runs with nothing left for it to mask
    (k = p = None); logprobs are vLLM's (the sampled token's logprob and rank), with the N best re-ranked."""
    from vllm.v1.outputs import LogprobsTensors

    vllm_gather = type(sampler).gather_logprobs

    def gather_logprobs(logprobs: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor) -> LogprobsTensors:
        own = vllm_gather(logprobs, 0, token_ids)  # the sampled token's logprob and rank, vLLM's way
        if num_logprobs <= 0:
            return own
        values, ids = tie_ordered_topk(logprobs, num_logprobs)
        return LogprobsTensors(torch.cat((own.logprob_token_ids, ids.to(own.logprob_token_ids.dtype)), 1),
                               torch.cat((own.logprobs, values), 1), own.selected_token_ranks)

    sampler.gather_logprobs = gather_logprobs
    inner = sampler.topk_topp_sampler
    vllm_forward = inner.forward_native

    def forward(logits: torch.Tensor, generators: dict[int, torch.Generator], k: torch.Tensor | None,
                p: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        return vllm_forward(tie_ordered_top_k_top_p(logits, k, p), generators, None, None)

    inner.forward = forward
