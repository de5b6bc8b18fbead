"""vLLM's prompt logprobs from TT prefill logits, with the GPU runner's semantics
(GPUModelRunner._get_prompt_logprobs_dict in vLLM 0.32): one row per prompt position after the first (the logprob of
the actual prompt token given the positions before it, its rank, and the top N), filled chunk by chunk as a long
prompt is prefilled across steps and handed to the scheduler once, in the step that finishes the prompt. vLLM turns
the missing first row into the leading None of `prompt_logprobs`.

vLLM's own SamplingParams skip reading the prefix cache for these requests, so every prompt position is computed
(and its logits exist) in some step.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.outputs import LogprobsTensors
from vllm.v1.sample.sampler import Sampler
from vllm.v1.worker.gpu_input_batch import CachedRequestState


class PromptLogprobs:
    def __init__(self, vocab_size: int, logprobs_mode: str) -> None:
        self.vocab_size = vocab_size
        self.logprobs_mode = logprobs_mode
        self.num: dict[str, int] = {}  # requests whose prompt logprobs are still being produced -> top N

    def add(self, req_id: str, sampling_params: Any) -> None:
        n = getattr(sampling_params, "prompt_logprobs", None)
        if n is not None:
            self.num[req_id] = self.vocab_size if n == -1 else n

    def remove(self, req_id: str) -> None:
        self.num.pop(req_id, None)

    def wanted(self, req_ids: list[str]) -> list[bool] | None:
        """Per batch row, whether its prefill must return every position's logits; None when no row does."""
        flags = [r in self.num for r in req_ids]
        return flags if any(flags) else None

    def collect(self, req_ids: list[str], requests: dict[str, CachedRequestState], num_scheduled: dict[str, int],
                logits: list[torch.Tensor | None], starts: list[int]) -> dict[str, LogprobsTensors]:
        """Fills each asking request's rows from this step's logits (row i: logits [prefilled, vocab] of positions
        starts[i] ...), and returns the requests whose prompt is now complete."""
        done: dict[str, LogprobsTensors] = {}
        for i, req_id in enumerate(req_ids):
            num = self.num.get(req_id)
            if num is None or req_id not in num_scheduled:
                continue
            state = requests[req_id]
            prompt = state.prompt_token_ids
            if prompt is None:  # prompt embeddings: no token ids to score (vLLM skips them too)
                continue
            tensors = state.in_progress_prompt_logprobs_cpu
            if tensors is None:
                tensors = LogprobsTensors.empty_cpu(len(prompt) - 1, num + 1)
                state.in_progress_prompt_logprobs_cpu = tensors
            first = state.num_computed_tokens  # the first position computed this step
            remaining = len(prompt) - (first + 1)
            count = num_scheduled[req_id]
            if count > remaining:  # the prompt's last chunk: its final position predicts no prompt token
                count = remaining
                done[req_id] = tensors
            if count <= 0:
                continue
            # This step's logits start at the block boundary the prefill restarted from.
            rows = logits[i][first - starts[i]: first - starts[i] + count, : self.vocab_size]
            if self.logprobs_mode in ("raw_logits", "processed_logits"):
                scores = rows.to(torch.float32)
            else:
                scores = Sampler.compute_logprobs(rows)
            targets = torch.tensor(prompt[first + 1: first + 1 + count], dtype=torch.int64)
            token_ids, logprobs, ranks, *_ = Sampler.gather_logprobs(scores, num, targets)
            span = slice(first, first + count)
            tensors.logprob_token_ids[span].copy_(token_ids)
            tensors.logprobs[span].copy_(logprobs)
            tensors.selected_token_ranks[span].copy_(ranks)
        for req_id in done:
            del self.num[req_id]
            requests[req_id].in_progress_prompt_logprobs_cpu = None
        return done
