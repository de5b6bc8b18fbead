"""TTModelRunner: turns each SchedulerOutput into generation-class calls and a ModelRunnerOutput.

Request state lives in vLLM's own persistent InputBatch (token ids, block tables, sampling parameters, penalties,
seeded generators, logits processors), which always holds exactly the requests scheduled this step, in row order.
Prefill steps hand the generation class zero-padded prompts and page tables; decode steps pad every input to
max_num_seqs rows (position -1 and a zero page-table row in empty slots) with a constant page-table width, so the
decode trace is captured once and replayed. Sampling runs on the host through vLLM's Sampler, or on the device
(greedy, temperature / top-k / top-p with seeds) when configured and every request in the batch allows it.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from vllm.sampling_params import _SAMPLING_EPS
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, LogprobsTensors, ModelRunnerOutput
from vllm.v1.sample.logits_processor import build_logitsprocs
from vllm.v1.sample.sampler import Sampler
from vllm.v1.structured_output.utils import apply_grammar_bitmask
from vllm.v1.worker.gpu_input_batch import CachedRequestState, InputBatch

from tt_models.layers.sampling import MAX_TOP_K
from tt_models.sampling import MAX_LOGPROBS, TTSamplingParams, sampling_mode
from vllm_patches import tie_order
from vllm_patches.async_decode import AsyncDecoder, AsyncTTModelRunnerOutput
from vllm_patches.prompt_logprobs import PromptLogprobs
from vllm_patches.tt_config import TTConfig

logger = logging.getLogger(__name__)


class TTModelRunner:
    def __init__(self, vllm_config: Any, tt_config: TTConfig) -> None:
        self.vllm_config = vllm_config
        self.tt = tt_config
        mc, sc = vllm_config.model_config, vllm_config.scheduler_config
        self.block_size = vllm_config.cache_config.block_size
        self.max_num_seqs = sc.max_num_seqs
        self.max_model_len = mc.max_model_len
        # Constant decode page-table width: the trace is captured for this shape once.
        self.width = math.ceil(self.max_model_len / self.block_size)
        self.vocab_size = mc.get_vocab_size()
        self.device = torch.device("cpu")
        # LLM(logits_processors=...) / --logits-processors: built into the batch like vLLM's GPU runner does. They
        # may rewrite any logit, so a batch with them always samples on the host.
        custom = tuple(mc.logits_processors or ())
        self.has_custom_logitsprocs = bool(custom)
        self.kv_groups = 1  # KV-cache groups, each with its own block table (vLLM's hybrid KV cache: several)
        self.input_batch = self._input_batch(custom)
        self.sampler = Sampler(logprobs_mode=mc.logprobs_mode)
        tie_order.install(self.sampler)  # host draws break exact ties as the device does: lowest id
        self.prompt_logprobs = PromptLogprobs(self.vocab_size, mc.logprobs_mode)
        self.requests: dict[str, CachedRequestState] = {}
        self.model: Any = None
        self.kv_cache: Any = None
        self._pending: tuple[SchedulerOutput, bool] | None = None
        self._partial: set[int] = set()  # prefill rows of this step whose prompt continues in a later step
        # Decode slot of each running request, kept for its whole life: with data parallel (tt.data_parallel) a
        # slot belongs to one replica, whose cache holds that request's KV: the replica whose share of the block
        # ids the scheduler gave the request (vllm_patches/replica_blocks.py).
        self.replicas = tt_config.data_parallel
        self.blocks_per_replica = 0  # set with the KV cache
        self.slot_of: dict[str, int] = {}
        # The request whose seed each slot's device PRNG was last seeded with (on-device sampling).
        self._seeded_slots: dict[int, str] = {}
        self.device_sampled_steps = 0  # steps whose tokens the device sampled (observability, benchmarks)
        self.decode_steps = 0  # synchronous decode steps (observability: benchmarks/bench_spec_decode.py)
        # vLLM's async scheduling (the platform turns it on for models with supports_async_decode): decode steps
        # sampled on the device return before their tokens are read back (vllm_patches/async_decode.py).
        self.async_decode = bool(sc.async_scheduling)
        self.decoder = AsyncDecoder(self)
        self._step = 0
        # Speculative decoding (--speculative-config, n-gram drafts): vllm_patches/spec_decode.py.
        self.spec = None
        if vllm_config.speculative_config is not None:
            from vllm_patches.spec_decode import SpecDecoder

            self.spec = SpecDecoder(vllm_config)

    def _input_batch(self, custom: tuple = ()) -> InputBatch:
        sc = self.vllm_config.scheduler_config
        return InputBatch(
            max_num_reqs=self.max_num_seqs, max_model_len=self.max_model_len,
            max_num_batched_tokens=sc.max_num_batched_tokens, device=self.device, vocab_size=self.vocab_size,
            # One block table per KV-cache group, all as wide as the whole context: a sliding-window group's rows
            # keep absolute block indices (blocks left behind the window are vLLM's null block or stale ids that
            # attention never reads).
            block_sizes=[self.block_size] * self.kv_groups, max_num_blocks_per_req=[self.width] * self.kv_groups,
            logitsprocs=build_logitsprocs(self.vllm_config, self.device, False, False, custom),
            logitsprocs_need_output_token_ids=bool(custom),
        )

    def set_kv_cache_groups(self, groups: int) -> None:
        """The KV-cache groups vLLM made (initialize_from_config, before any request): one block table each."""
        if groups != self.kv_groups:
            self.kv_groups = groups
            self.input_batch = self._input_batch(tuple(self.vllm_config.model_config.logits_processors or ()))

    # ------------------------------------------------------------------ state
    def _update_states(self, so: SchedulerOutput) -> None:
        batch = self.input_batch
        for req_id in so.finished_req_ids:
            self.requests.pop(req_id, None)
            self.slot_of.pop(req_id, None)
            self.prompt_logprobs.remove(req_id)
            batch.remove_request(req_id)
        for req_id in so.preempted_req_ids or ():
            self.slot_of.pop(req_id, None)  # its KV is gone; it is prefilled again into a new slot
        # Requests not scheduled this step (decode requests during a prefill step, preempted ones) leave the
        # batch and come back when scheduled again.
        for req_id in list(batch.req_id_to_index):
            if req_id not in so.num_scheduled_tokens:
                batch.remove_request(req_id)

        for new in so.scheduled_new_reqs:
            sp = new.sampling_params
            generator = None
            if sp is not None and sp.seed is not None:
                generator = torch.Generator(device=self.device)
                generator.manual_seed(sp.seed)
            state = CachedRequestState(
                req_id=new.req_id, prompt_token_ids=new.prompt_token_ids, mm_features=[], sampling_params=sp,
                generator=generator, block_ids=new.block_ids, num_computed_tokens=new.num_computed_tokens,
                output_token_ids=[], lora_request=None,
            )
            self.requests[new.req_id] = state
            self.prompt_logprobs.add(new.req_id, sp)
            batch.add_request(state)

        cached = so.scheduled_cached_reqs
        for i, req_id in enumerate(cached.req_ids):
            state = self.requests[req_id]
            new_blocks = cached.new_block_ids[i]
            state.num_computed_tokens = cached.num_computed_tokens[i]
            if req_id in cached.resumed_req_ids:
                # Preempted and rescheduled: its block list is replaced and its tokens are recomputed.
                state.block_ids = tuple(list(b) for b in new_blocks)
            elif new_blocks is not None:
                for group, blocks in zip(state.block_ids, new_blocks, strict=True):
                    group.extend(blocks)
            if req_id in batch.req_id_to_index:
                idx = batch.req_id_to_index[req_id]
                batch.num_computed_tokens_cpu[idx] = state.num_computed_tokens
                if new_blocks is not None and req_id not in cached.resumed_req_ids:
                    batch.block_table.append_row(new_blocks, idx)
            else:
                batch.add_request(state)
        batch.condense()
        if self.spec is not None:
            # The drafts being verified this step, where vLLM's rejection sampler (penalties) looks for them.
            for req_id in batch.req_ids:
                batch.update_req_spec_token_ids(self.requests[req_id], so.scheduled_spec_decode_tokens)
        batch.refresh_metadata()
        for req_id in batch.req_ids:
            if req_id not in self.slot_of:
                self.slot_of[req_id] = self._free_slot(req_id)

    def _free_slot(self, req_id: str) -> int:
        """A free slot on the request's replica: the one holding its blocks."""
        taken = set(self.slot_of.values())
        per = self.max_num_seqs // self.replicas
        r = 0
        if self.replicas > 1:
            r = next(b for g in self.requests[req_id].block_ids for b in g if b) // self.blocks_per_replica
        free = [s for s in range(r * per, (r + 1) * per) if s not in taken]
        if not free:
            raise RuntimeError(f"request {req_id} was given replica {r}'s KV blocks, but its {per} decode slots "
                               "are all taken")
        return free[0]

    def _slots(self) -> np.ndarray:
        return np.array([self.slot_of[r] for r in self.input_batch.req_ids], dtype=np.int64)

    def _is_prefill(self, so: SchedulerOutput) -> bool:
        resumed = so.scheduled_cached_reqs.resumed_req_ids
        # New and resumed requests, and the next chunk of a prompt prefilled across steps (more than one token).
        drafts = so.scheduled_spec_decode_tokens
        return (bool(so.scheduled_new_reqs) or any(r in resumed for r in so.scheduled_cached_reqs.req_ids)
                or any(n > 1 + len(drafts.get(r, ())) for r, n in so.num_scheduled_tokens.items()))

    # ------------------------------------------------------------------ inputs
    def _blocks(self, req_id: str) -> list[list[int]]:
        """The request's block ids in each KV-cache group."""
        return [list(b) for b in self.requests[req_id].block_ids]

    def _tables(self, tables: torch.Tensor) -> torch.Tensor:
        """[G, B, W] page tables as the generation class takes them: [B, W] when there is one group."""
        return tables[0] if self.kv_groups == 1 else tables

    def prefill_inputs(self, so: SchedulerOutput) -> dict[str, torch.Tensor]:
        """Each request's tokens up to the end of what is scheduled this step: the whole prompt, or with chunked
        prefill the chunk ending there (its `prompt_lens` entry); prefill restarts at the block boundary at or
        before the first token not yet computed (a chunk that ended mid-block recomputes that block's head)."""
        batch = self.input_batch
        n = batch.num_reqs
        # vLLM pads a new request's last prompt token with placeholder drafts (-1) to the verify width; prefill
        # computes the prompt and samples one token, which rejects them all.
        drafts = so.scheduled_spec_decode_tokens
        lens = [self.requests[r].num_computed_tokens + so.num_scheduled_tokens[r] - len(drafts.get(r, ()))
                for r in batch.req_ids]
        # Rows whose prompt continues in a later step: their last logits are not a prediction to sample from.
        self._partial = {i for i in range(n) if lens[i] < int(batch.num_tokens_no_spec[i])}
        tokens = torch.zeros(n, max(lens), dtype=torch.int32)
        blocks = [self._blocks(r) for r in batch.req_ids]
        page_table = torch.zeros(self.kv_groups, n, max(len(g) for b in blocks for g in b), dtype=torch.int32)
        start = torch.zeros(n, dtype=torch.int32)
        for i, req_id in enumerate(batch.req_ids):
            tokens[i, : lens[i]] = torch.from_numpy(batch.token_ids_cpu[i, : lens[i]].astype(np.int32))
            for g, ids in enumerate(blocks[i]):
                page_table[g, i, : len(ids)] = torch.tensor(ids, dtype=torch.int32)
            # Prefix-cache hits cover whole blocks; a fully cached prompt still recomputes its last block.
            computed = min(self.requests[req_id].num_computed_tokens, lens[i] - 1)
            start[i] = computed // self.block_size * self.block_size
        return {"tokens": tokens, "page_table": self._tables(page_table), "prompt_lens": torch.tensor(lens),
                "start_pos": start,
                "empty_slots": torch.from_numpy(self._slots())}

    def decode_inputs(self) -> dict[str, torch.Tensor]:
        """Read straight from the persistent batch's arrays: this runs every decode step."""
        batch = self.input_batch
        n, rows = batch.num_reqs, self.max_num_seqs
        tokens = torch.zeros(rows, 1, dtype=torch.int32)
        start_pos = torch.full((rows,), -1, dtype=torch.int32)
        page_table = torch.zeros(self.kv_groups, rows, self.width, dtype=torch.int32)
        if n:
            # Batch row i decodes in its request's slot.
            slots = torch.from_numpy(self._slots())
            lens = batch.num_tokens_no_spec[:n].astype(np.int64)
            tokens[slots, 0] = torch.from_numpy(batch.token_ids_cpu[np.arange(n), lens - 1].astype(np.int32))
            start_pos[slots] = torch.from_numpy((lens - 1).astype(np.int32))
            for g in range(self.kv_groups):
                table = batch.block_table[g]
                # Entries past a row's own blocks may be stale from an earlier occupant of the row: zero them.
                used = np.arange(self.width)[None, :] < table.num_blocks_per_row[:n, None]
                page_table[g, slots] = torch.from_numpy(np.where(used, table.block_table.np[:n, : self.width], 0)
                                                        .astype(np.int32))
        return {"tokens": tokens, "start_pos": start_pos, "page_table": self._tables(page_table)}

    # ------------------------------------------------------------------ steps
    def execute_model(self, so: SchedulerOutput) -> ModelRunnerOutput | None:
        self._step += 1
        self.decoder.events.append(("execute", self._step))
        reason = self.decoder.drain_reason(so)
        if reason is not None:
            self.decoder.drain(reason)  # the batch must hold the in-flight step's tokens before it changes
        self._update_states(so)
        if so.total_num_scheduled_tokens == 0 or self.input_batch.num_reqs == 0:
            return EMPTY_MODEL_RUNNER_OUTPUT
        self._pending = (so, self._is_prefill(so))
        return None

    def _device_sampling(self, prefill: bool) -> TTSamplingParams | None:
        """Per-slot parameters when the device can sample this step, else None (the whole batch's logits go to
        vLLM's sampler on the host). The device does greedy, temperature, top-k up to 32 and top-p, with per-request
        seeds, and in decode steps presence / frequency / repetition penalties and logprobs (up to 32, logprobs_mode
        raw_logprobs); min_p, logit_bias, bad_words, allowed_token_ids, min_tokens, custom logits processors, top-k
        beyond 32 (or none, when sampling, unless tt.unset_top_k_on_device), more than 32 logprobs, other logprobs
        modes and logprob_token_ids are host-only, and so is a prefill step's first token (prefill returns logits:
        tt.sample_on_device(prefill=True) is False)."""
        batch = self.input_batch
        if not self.tt.sample_on_device(prefill) or self.has_custom_logitsprocs:
            return None
        md = batch.sampling_metadata
        full = not md.no_penalties or md.max_num_logprobs is not None  # Generator's "sample_full"
        if md.bad_words_token_ids or md.allowed_token_ids_mask is not None:
            return None
        if full and (md.logprob_token_ids or self.sampler.logprobs_mode != "raw_logprobs"
                     or not 0 <= (md.max_num_logprobs or 0) <= MAX_LOGPROBS):
            return None
        for req_id in batch.req_ids:
            sp = self.requests[req_id].sampling_params
            if sp is not None and (sp.min_tokens or sp.logit_bias or sp.min_p):
                return None
        rows = self.max_num_seqs
        if md.all_greedy and not full:
            return TTSamplingParams(temperature=[0.0] * rows)
        temperature, top_k, top_p, seeds = [0.0] * rows, [1] * rows, [1.0] * rows, [None] * rows
        started = []
        for req_id in batch.req_ids:
            sp = self.requests[req_id].sampling_params
            slot = self.slot_of[req_id]
            if sp.temperature < _SAMPLING_EPS:
                continue  # greedy: k=1 on device
            k = sp.top_k
            if self.tt.unset_top_k_on_device and (k <= 0 or k >= self.vocab_size):
                k = MAX_TOP_K  # the operator chose the 32 best over the whole vocabulary (tt.unset_top_k_on_device)
            if not 1 <= k <= MAX_TOP_K:
                return None
            temperature[slot], top_k[slot], top_p[slot] = sp.temperature, k, sp.top_p
            if self._seeded_slots.get(slot) != req_id:
                # A request's first step sampled on device seeds its slot's core PRNG: with its own seed (so its
                # draws do not depend on who shares the batch), else a fresh random one.
                seeds[slot] = sp.seed if sp.seed is not None else random.getrandbits(32)
                started.append((slot, req_id))
        self._seeded_slots.update(started)
        if not full:
            return TTSamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seeds)
        return self._penalty_params(TTSamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seeds))

    def _penalty_params(self, params: TTSamplingParams) -> TTSamplingParams:
        """Each slot's penalties and logprob count, with its request's token history for the device to keep
        (re-read only when the slots change hands: the key is who holds them)."""
        rows, md = self.max_num_seqs, self.input_batch.sampling_metadata
        pres, freq, rep = [0.0] * rows, [0.0] * rows, [1.0] * rows
        history: list = [None] * rows
        owners: list = [None] * rows
        for req_id in self.input_batch.req_ids:
            state, slot = self.requests[req_id], self.slot_of[req_id]
            sp = state.sampling_params
            pres[slot], freq[slot], rep[slot] = sp.presence_penalty, sp.frequency_penalty, sp.repetition_penalty
            history[slot] = (state.prompt_token_ids or [], state.output_token_ids)
            owners[slot] = req_id
        logprobs = md.max_num_logprobs is not None
        return replace(params, presence_penalty=pres, frequency_penalty=freq, repetition_penalty=rep,
                       num_logprobs=[md.max_num_logprobs or 0] * rows, enable_log_probs=[logprobs] * rows,
                       token_history=history, history_key=tuple(owners))

    def _device_logprobs(self, sampled: torch.Tensor, lp: dict[str, torch.Tensor]) -> LogprobsTensors:
        """The device's raw logprobs as vLLM's Sampler.gather_logprobs lays them out: the sampled token, then the
        batch's max_num_logprobs best, with the sampled token's rank."""
        k = self.input_batch.sampling_metadata.max_num_logprobs
        ids = torch.cat([sampled[:, None], lp["top_ids"][:, :k]], dim=1).to(torch.int32)
        values = torch.cat([lp["logprob"][:, None], lp["top_logprobs"][:, :k]], dim=1).float()
        return LogprobsTensors(ids, values, lp["rank"])

    def sample_tokens(self, grammar_output: Any = None) -> ModelRunnerOutput | AsyncTTModelRunnerOutput:
        if self._pending is None:
            return EMPTY_MODEL_RUNNER_OUTPUT
        so, prefill = self._pending
        self._pending = None
        batch = self.input_batch
        n = batch.num_reqs
        # Structured outputs: vLLM's grammar bitmask is applied to the logits on the host, so such a step samples
        # there (the device's greedy pick could be a token the grammar forbids).
        device_params = self._device_sampling(prefill) if grammar_output is None else None
        device_logprobs = None
        if not prefill and self.async_decode and sampling_mode(device_params) in ("argmax", "sample"):
            return self.decoder.launch(self._step, self.decode_inputs(), device_params)
        if not prefill and self.spec is not None and so.scheduled_spec_decode_tokens:
            return self._verify(so, sampling_mode(device_params) == "argmax", grammar_output)
        # Everything else reads the batch's newest tokens (host sampling, logprobs, penalties, a prefill).
        self.decoder.drain("prefill" if prefill else "host_sampling")
        prompt_logprobs = {}
        if prefill:
            inputs = self.prefill_inputs(so)
            # Requests asking for prompt logprobs get every prefilled position's logits back too.
            wanted = self.prompt_logprobs.wanted(batch.req_ids)
            out = self.model.prefill_forward(kv_cache=self.kv_cache, sampling_params=device_params,
                                             return_prompt_logits=wanted, **inputs)
            if self.spec is not None:
                self.spec.prefill(self, inputs)
            if wanted is not None:
                out, every = out
                prompt_logprobs = self.prompt_logprobs.collect(list(batch.req_ids), self.requests,
                                                               so.num_scheduled_tokens, every,
                                                               inputs["start_pos"].tolist())
        else:
            self.decoder.events.append(("launch", self._step))
            self.decode_steps += 1
            out = self.model.decode_forward(kv_cache=self.kv_cache, enable_trace=self.tt.trace_decode,
                                            read_from_device=True, sampling_params=device_params,
                                            **self.decode_inputs())
            self.decoder.events.append(("wait", self._step))
            slots = self._slots()
            # Slot order -> batch row order; a plain slice when the rows already sit in slots 0..n-1.
            in_order = np.array_equal(slots, np.arange(n))

            def rows(t: torch.Tensor) -> torch.Tensor:
                return t[:n] if in_order else t[torch.from_numpy(slots)]

            if isinstance(out, tuple):  # on-device penalties / logprobs: (ids, raw logprobs)
                out, device_logprobs = rows(out[0]), {k: rows(v) for k, v in out[1].items()}
            else:
                out = rows(out)
        logprobs = None
        if device_params is not None:
            self.device_sampled_steps += 1
            sampled = out.reshape(-1)[:n].tolist()
            if device_logprobs is not None and batch.sampling_metadata.max_num_logprobs is not None:
                logprobs = self._device_logprobs(out.reshape(-1)[:n], device_logprobs).tolists()
        else:
            logits = out.reshape(out.shape[0], -1)[:n, : self.vocab_size].float().contiguous()
            if grammar_output is not None:
                apply_grammar_bitmask(so, grammar_output, batch, logits)
            # A chunk's row is sampled with the others and its token dropped; its seeded generator must not advance,
            # or a chunked prompt would draw other tokens than the same prompt prefilled whole.
            rewind = [(g, g.get_state()) for i, r in enumerate(batch.req_ids)
                      if prefill and i in self._partial and (g := self.requests[r].generator) is not None]
            result = self.sampler(logits, batch.sampling_metadata)
            for g, st in rewind:
                g.set_state(st)
            sampled = result.sampled_token_ids.reshape(-1).tolist()
            if result.logprobs_tensors is not None:
                logprobs = result.logprobs_tensors.tolists()
        partial = self._partial if prefill else set()
        for i, req_id in enumerate(batch.req_ids):
            if i in partial:
                continue  # a chunk of a longer prompt: nothing sampled yet
            state = self.requests[req_id]
            pos = int(batch.num_tokens_no_spec[i])
            state.output_token_ids.append(sampled[i])  # also the list penalties read (shared with the batch)
            batch.token_ids_cpu[i, pos] = sampled[i]
            batch.num_tokens_no_spec[i] = pos + 1
        return self._output([[] if i in partial else [t] for i, t in enumerate(sampled)], logprobs, prompt_logprobs)

    def _verify(self, so: SchedulerOutput, greedy_on_device: bool, grammar_output: Any) -> ModelRunnerOutput:
        """A step whose requests carry draft tokens (vllm_patches/spec_decode.py)."""
        self.decoder.drain("host_sampling")
        if greedy_on_device:
            self.device_sampled_steps += 1
        tokens, logprobs = self.spec.verify(self, so, greedy_on_device, grammar_output)
        batch = self.input_batch
        for i, req_id in enumerate(batch.req_ids):
            state = self.requests[req_id]
            pos = int(batch.num_tokens_no_spec[i])
            state.output_token_ids.extend(tokens[i])
            batch.token_ids_cpu[i, pos : pos + len(tokens[i])] = tokens[i]
            batch.num_tokens_no_spec[i] = pos + len(tokens[i])
        return self._output(tokens, logprobs, {})

    def _output(self, sampled: list[list[int]], logprobs: Any, prompt_logprobs: dict) -> ModelRunnerOutput:
        if self.spec is not None:
            self.spec.propose(self, sampled)
        req_ids = list(self.input_batch.req_ids)
        return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={r: i for i, r in enumerate(req_ids)},
                                 sampled_token_ids=sampled, logprobs=logprobs, prompt_logprobs_dict=prompt_logprobs)

    def take_draft_token_ids(self) -> Any:
        return self.spec.take() if self.spec is not None else None
