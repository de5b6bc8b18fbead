"""Speculative decoding in the TTModelRunner: vLLM's drafter proposes, the device scores, vLLM's rejection sampler
decides.

After every step the drafter (vLLM's n-gram proposer over each request's tokens) proposes up to k tokens per
request; vLLM's scheduler schedules them with the request's last token, and the engine reads them through
`take_draft_token_ids`. A step whose requests carry drafts is a verify step: each request's last token and drafts
go on consecutive rows of one traced decode (Generator.decode_forward_text with `writes` = k + 1), every row the
device's decode computes, so each row computes what a decode step at its position would, bit for bit. Requests
are packed whole into the device's decode rows (32 per tile of users); more rows than one step holds take further
replays of the same trace.

Verification: when the whole batch is greedy and may sample on the device, each row's argmax comes back and the
drafts are accepted up to the first mismatch (vLLM's greedy rule, lowest id on exact ties as elsewhere); otherwise
the rows' logits go to vLLM's RejectionSampler on the host (its kernels run on the CPU: rejection_kernels.py),
which keeps the target distribution for sampled requests and applies penalties, logits processors and logprobs as
vLLM does. The K/V of rejected drafts stay in the cache past the request's length: attention never reads beyond a
row's position, and the next step overwrites those positions before reading them.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from vllm.v1.outputs import DraftTokenIds
from vllm.v1.sample.rejection_sampler import RejectionSampler
from vllm.v1.spec_decode.metadata import SpecDecodeMetadata
from vllm.v1.structured_output.utils import apply_grammar_bitmask

from tt_models.sampling import TTSamplingParams
from vllm_patches import rejection_kernels

logger = logging.getLogger(__name__)

TILE_USERS = 32  # a request's rows stay inside one tile of users (one device core each)
SUPPORTED_METHODS = ("ngram", "draft_model")


def check_speculative_config(spec: Any, tt: Any) -> None:
    """Engine-start refusals, with the reason, of what this runner cannot do."""
    method = spec.method
    if method not in SUPPORTED_METHODS:
        kind = {"eagle": "EAGLE", "eagle3": "EAGLE-3", "medusa": "Medusa", "mtp": "MTP heads",
                "suffix": "suffix decoding"}.get(method, method)
        raise ValueError(f"speculative decoding with {kind} (method={method!r}) is not supported on TT: the TT "
                         f"runner drafts with vLLM's n-gram proposer (method='ngram') or a draft model of the "
                         f"target's tokenizer (method='draft_model')")
    if spec.num_speculative_tokens + 1 > TILE_USERS:
        raise ValueError(f"num_speculative_tokens={spec.num_speculative_tokens}: a request's drafts and last token "
                         f"must fit one tile of {TILE_USERS} users on the device")
    if method == "draft_model":
        from vllm_patches.draft_model import check_draft_model

        check_draft_model(spec)


class SpecDecoder:
    """The runner's speculative-decoding state: the drafter, the last drafts, and the verify step."""

    def __init__(self, vllm_config: Any) -> None:
        from vllm.v1.spec_decode.ngram_proposer import NgramProposer

        from vllm_patches.draft_model import DraftModelDrafter

        spec = vllm_config.speculative_config
        self.k = spec.num_speculative_tokens
        rejection_kernels.install()  # vLLM's rejection sampler, with its kernels run on the host
        # A draft model (the worker loads it and its cache), or vLLM's n-gram proposer over each request's tokens.
        self.draft = DraftModelDrafter(self.k) if spec.method == "draft_model" else None
        self.drafter = None if self.draft is not None else NgramProposer(vllm_config)
        self.rejection_sampler = RejectionSampler(self._sampler_for(vllm_config))
        self._drafts: DraftTokenIds | None = None
        self.verify_steps = 0  # observability (benchmarks): verify steps and their device replays
        self.verify_replays = 0

    @staticmethod
    def _sampler_for(vllm_config: Any) -> Any:
        from vllm.v1.sample.sampler import Sampler

        from vllm_patches import tie_order

        sampler = Sampler(logprobs_mode=vllm_config.model_config.logprobs_mode)
        tie_order.install(sampler)
        return sampler

    # ------------------------------------------------------------------ drafts
    def prefill(self, runner: Any, inputs: dict[str, torch.Tensor]) -> None:
        """The target's prefill step, mirrored into the draft model's cache (a draft model only)."""
        if self.draft is not None:
            self.draft.prefill(runner, inputs)

    def propose(self, runner: Any, sampled: list[list[int]]) -> None:
        """Drafts for the batch's requests after their tokens this step (`sampled`, empty for a prompt chunk)."""
        batch = runner.input_batch
        if self.draft is not None:
            drafts = self.draft.propose(runner, sampled)
        else:
            drafts = self.drafter.propose(self.k, sampled, batch.num_tokens_no_spec, batch.token_ids_cpu)
        self._drafts = DraftTokenIds(list(batch.req_ids), [list(d) for d in drafts])

    def take(self) -> DraftTokenIds | None:
        drafts, self._drafts = self._drafts, None
        return drafts

    # ------------------------------------------------------------------ verify
    def verify(self, runner: Any, so: Any, greedy_on_device: bool,
               grammar_output: Any = None) -> tuple[list[list[int]], Any]:
        """Scores every request's last token and drafts, and returns each request's tokens (accepted drafts, then
        the target's next token) and vLLM's logprobs lists (or None). Structured outputs: vLLM's grammar bitmask,
        one row per scored position in this order, masks the logits first (such a step never samples on the
        device)."""
        batch, model = runner.input_batch, runner.model
        n, rows = batch.num_reqs, model.verify_rows
        drafts = [list(so.scheduled_spec_decode_tokens.get(r, ())) for r in batch.req_ids]
        per_req = [1 + len(d) for d in drafts]
        # A request's rows stay on the chips that hold its KV: data parallel, its slot's replica (replica r
        # verifies on rows r * R .. (r + 1) * R - 1); a 2-D mesh that shares users out by column, its slot's column.
        groups = model.verify_groups
        home = [model.verify_group(runner.slot_of[r]) for r in batch.req_ids]
        passes = self._pack_groups(per_req, home, rows // groups, groups)
        self.verify_steps += 1
        self.verify_replays += len(passes)
        scored: list[torch.Tensor | None] = [None] * n
        for members in passes:
            tokens = torch.zeros(rows, 1, dtype=torch.int32)
            pos = torch.full((rows,), -1, dtype=torch.int32)
            group = torch.full((rows,), -1, dtype=torch.int32)
            tables = torch.zeros(runner.kv_groups, rows, runner.width, dtype=torch.int32)
            placed = []
            for i, r0 in members:
                length = int(batch.num_tokens_no_spec[i])
                m = per_req[i]
                tokens[r0, 0] = int(batch.token_ids_cpu[i, length - 1])
                # A placeholder or grammar-invalid draft (-1) is scored at some valid token and never accepted.
                tokens[r0 + 1 : r0 + m, 0] = torch.tensor(drafts[i], dtype=torch.int32).clamp(min=0)
                pos[r0 : r0 + m] = torch.arange(length - 1, length - 1 + m, dtype=torch.int32)
                group[r0 : r0 + m] = torch.arange(m, dtype=torch.int32)
                for g in range(runner.kv_groups):
                    table = batch.block_table[g]
                    used = int(table.num_blocks_per_row[i])
                    tables[g, r0 : r0 + m, :used] = torch.from_numpy(
                        table.block_table.np[i, :used].astype(np.int32))
                placed.append((i, r0, m))
            params = TTSamplingParams(temperature=[0.0] * rows) if greedy_on_device else None
            out = model.decode_forward(tokens=tokens, start_pos=pos, page_table=runner._tables(tables),
                                       kv_cache=runner.kv_cache, enable_trace=runner.tt.trace_decode,
                                       read_from_device=True, sampling_params=params, write_group=group,
                                       writes=self.k + 1)
            for i, r0, m in placed:
                scored[i] = out[r0 : r0 + m]
        if greedy_on_device:
            return [self._accept_greedy(d, s.reshape(-1).tolist()) for d, s in zip(drafts, scored, strict=True)], None
        logits = torch.cat([s.reshape(s.shape[0], -1)[:, : runner.vocab_size].float() for s in scored])
        if grammar_output is not None:
            apply_grammar_bitmask(so, grammar_output, batch, logits)
        return self._rejection_sample(drafts, logits, batch.sampling_metadata, runner.vocab_size)

    @classmethod
    def _pack_groups(cls, per_req: list[int], home: list[int], rows: int,
                     groups: int) -> list[list[tuple[int, int]]]:
        """_pack on each group's rows (`rows` each), its passes merged pass by pass."""
        passes: list[list[tuple[int, int]]] = []
        for r in range(groups):
            mine = [i for i in range(len(per_req)) if home[i] == r]
            for p, members in enumerate(cls._pack([per_req[i] for i in mine], rows)):
                if p == len(passes):
                    passes.append([])
                passes[p] += [(mine[j], r * rows + row) for j, row in members]
        return [p for p in passes if p]

    @staticmethod
    def _pack(per_req: list[int], rows: int) -> list[list[tuple[int, int]]]:
        """Requests in batch order onto passes of `rows` rows, each request's rows inside one tile of users."""
        passes: list[list[tuple[int, int]]] = [[]]
        row = 0
        for i, m in enumerate(per_req):
            if row // TILE_USERS != (row + m - 1) // TILE_USERS:
                row = -(-row // TILE_USERS) * TILE_USERS  # next tile of users
            if row + m > rows:
                passes.append([])
                row = 0
            passes[-1].append((i, row))
            row += m
        return passes

    @staticmethod
    def _accept_greedy(drafts: list[int], argmax: list[int]) -> list[int]:
        accepted = 0
        while accepted < len(drafts) and drafts[accepted] == argmax[accepted]:
            accepted += 1
        return drafts[:accepted] + [argmax[accepted]]

    def _rejection_sample(self, drafts: list[list[int]], logits: torch.Tensor, md: Any,
                          vocab: int) -> tuple[list[list[int]], Any]:
        num_draft = np.array([len(d) for d in drafts], dtype=np.int32)
        num_sampled = num_draft + 1
        cu_sampled = np.cumsum(num_sampled, dtype=np.int32)
        cu_draft = np.cumsum(num_draft, dtype=np.int32)
        starts = cu_sampled - num_sampled
        target = np.concatenate([s + np.arange(k, dtype=np.int32) for s, k in zip(starts, num_draft, strict=True)]
                                + [np.zeros(0, dtype=np.int32)])
        meta = SpecDecodeMetadata(
            draft_token_ids=torch.tensor([t for d in drafts for t in d], dtype=torch.int32),
            num_draft_tokens=num_draft.tolist(), cu_num_draft_tokens=torch.from_numpy(cu_draft),
            cu_num_sampled_tokens=torch.from_numpy(cu_sampled), target_logits_indices=torch.from_numpy(target),
            bonus_logits_indices=torch.from_numpy(cu_sampled - 1),
            logits_indices=torch.arange(int(cu_sampled[-1]), dtype=torch.int32))
        out = self.rejection_sampler(meta, None, logits, md)
        return RejectionSampler.parse_output(out.sampled_token_ids, vocab, logprobs_tensors=out.logprobs_tensors)
