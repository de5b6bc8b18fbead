"""A draft model of the target's family drafting on the device (vLLM's method='draft_model',
`--speculative-config '{"model": DRAFT, "num_speculative_tokens": k}'`).

The draft is a second TT model on the same mesh with its own KV cache, addressed by the target's block ids: vLLM
gives each request blocks for its tokens plus k lookahead slots (vllm_config.num_lookahead_tokens), so the draft's
writes past the target's tokens land in blocks the request owns. The draft mirrors every prefill the target runs
(same tokens, page tables and chunking), so a block the prefix cache hands to a later request holds the draft's K/V
of the same tokens too.

After each step the draft catches up on the request's tokens it has not fed (the sampled token; after a verify step
where every draft was accepted, also the last draft, which drafting never feeds), then feeds its own guesses; each
pass is one traced decode of every user at once, greedy on the device (only its token ids come back). Drafts are
greedy: vLLM's rejection sampler, given no draft probabilities, treats them as one-hot proposals, which keeps every
request's output distribution the target's.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from tt_models.sampling import TTSamplingParams

logger = logging.getLogger(__name__)


class DraftModelDrafter:
    def __init__(self, k: int) -> None:
        self.k = k
        self.model: Any = None  # the draft's generation class (worker.load_model)
        self.kv_cache: Any = None  # its cache, as many blocks as the target's (worker.initialize_from_config)
        # Which of the target's page tables the draft's cache follows: None with one KV-cache group, else a
        # full-attention group's (worker._full_attention_group).
        self.table_group: int | None = None
        # Per request: how many leading tokens the draft's cache holds correctly, and the guesses fed after them.
        self._fed: dict[str, int] = {}
        self._guesses: dict[str, list[int]] = {}
        self.passes = 0  # draft decode passes (observability: benchmarks)

    def _table(self, page_table: torch.Tensor) -> torch.Tensor:
        """The target's page table(s) -> the one the draft's cache follows."""
        return page_table if self.table_group is None else page_table[self.table_group]

    def prefill(self, runner: Any, inputs: dict[str, torch.Tensor]) -> None:
        """The target's prefill inputs, run through the draft into its own cache."""
        self.model.prefill_forward(kv_cache=self.kv_cache, sampling_params=None,
                                   **dict(inputs, page_table=self._table(inputs["page_table"])))
        for req_id, n in zip(runner.input_batch.req_ids, inputs["prompt_lens"].tolist(), strict=True):
            self._fed[req_id], self._guesses[req_id] = int(n), []

    def propose(self, runner: Any, sampled: list[list[int]]) -> list[list[int]]:
        """Up to k drafts per request of the runner's batch (none for a prompt still being prefilled)."""
        batch = runner.input_batch
        for req_id in list(self._fed):
            if req_id not in runner.requests:
                del self._fed[req_id], self._guesses[req_id]
        feeds: list[list[int]] = []  # per batch row: tokens to feed, the catch-up first
        starts, wanted = [], []
        for i, req_id in enumerate(batch.req_ids):
            length = int(batch.num_tokens_no_spec[i])
            seq = batch.token_ids_cpu[i]
            # The last token is never in the cache yet (the target sampled it): at least it is fed.
            fed, guesses = min(self._fed.get(req_id, length), length - 1), self._guesses.get(req_id, [])
            # Guesses the sequence kept are in the cache already; the first one it did not keep, and all after it,
            # are overwritten by the catch-up.
            kept = 0
            while kept < len(guesses) and fed + kept < length and int(seq[fed + kept]) == guesses[kept]:
                kept += 1
            fed += kept
            n = min(self.k, runner.max_model_len - length) if sampled[i] else 0
            feeds.append([int(t) for t in seq[fed:length]] if n > 0 else [])
            starts.append(fed)
            wanted.append(max(n, 0))
        drafts: list[list[int]] = [[] for _ in feeds]
        passes = max((len(f) + w - 1 for f, w in zip(feeds, wanted, strict=True) if w), default=0)
        if passes:
            slots = runner._slots()
            inputs = runner.decode_inputs()
            table = self._table(inputs["page_table"])
            rows = inputs["tokens"].shape[0]
            greedy = TTSamplingParams(temperature=[0.0] * rows)
            for p in range(passes):
                tokens = torch.zeros(rows, 1, dtype=torch.int32)
                pos = torch.full((rows,), -1, dtype=torch.int32)
                active = []
                for i, (feed, n) in enumerate(zip(feeds, wanted, strict=True)):
                    # Request i feeds its catch-up tokens, then its own drafts but the last (never fed).
                    if n and p < len(feed) + n - 1:
                        stream = feed + drafts[i]
                        tokens[slots[i], 0], pos[slots[i]] = stream[p], starts[i] + p
                        active.append(i)
                out = self.model.decode_forward(tokens=tokens, start_pos=pos, page_table=table,
                                                kv_cache=self.kv_cache, enable_trace=runner.tt.trace_decode,
                                                read_from_device=True, sampling_params=greedy)
                self.passes += 1
                ids = out.reshape(-1).tolist()
                for i in active:
                    if p >= len(feeds[i]) - 1:  # past the catch-up: this pass's pick is the next draft
                        drafts[i].append(int(ids[slots[i]]))
        for i, req_id in enumerate(batch.req_ids):
            if not wanted[i]:
                continue
            self._fed[req_id] = starts[i] + len(feeds[i])
            self._guesses[req_id] = drafts[i][:-1]  # fed at the positions after the sequence
        return drafts


def check_draft_model(spec: Any) -> None:
    """Engine-start refusals of a draft model this runner cannot pair with the target."""
    draft = spec.draft_model_config
    if draft is None:
        return
    # vLLM itself refuses a draft of another vocabulary size.
    from vllm_patches.registry import tt_generation_class

    try:
        tt_generation_class(draft.hf_config.architectures)
    except ValueError as e:
        raise ValueError(f"draft model {draft.model!r}: {e}") from None
    if getattr(spec, "draft_tensor_parallel_size", 1) not in (None, 1):
        raise ValueError("draft_tensor_parallel_size is not supported on TT: the draft runs on the target's mesh, "
                         "split as the target is")
