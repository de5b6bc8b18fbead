"""Step policy for TT: every step is prefill-only or decode-only, made by exactly one call of vLLM's schedule().

TT prefills one user at a time at bucketed lengths and decodes a fixed-shape (traced) batch, so mixing the two in a
step buys nothing. Waiting requests are admitted in a prefill-only step while there is room in the decode batch;
otherwise the step decodes the running batch, which never exceeds max_num_seqs. With chunked prefill (a token budget
below the longest prompt), a long prompt is prefilled one chunk per prefill step, and a decode step runs between
its chunks so the running requests keep streaming.

One schedule() call per step: vLLM drains per-step state in each call (finished and preempted ids, freed encoder
entries, blocks to zero or copy, KV events), so a second call would have to fold the first one's into its output.
When waiting requests cannot fit the KV cache the step decodes directly; the prediction is exact for the TT worker's
KV layout (tests/vllm/test_scheduler.py checks it against vLLM's own attempt). A prefill attempt that still admits
nothing (a request waiting on its grammar, say) is an empty step, and the next one decodes.

Priority scheduling (--scheduling-policy priority) keeps vLLM's semantics: prefill steps admit from vLLM's
priority-ordered waiting queue, and a decode step that runs out of KV blocks preempts the lowest-priority running
request (tests/vllm/test_priority.py). One difference: the next chunk of a prompt prefilled across steps that finds
no free KV blocks can only preempt prompts being chunked (the decoding requests are hidden from a prefill step),
where vLLM's mixed step could preempt a lower-priority decoding request instead.
"""

from __future__ import annotations

from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.request_queue import SchedulingPolicy, create_request_queue
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec
from vllm.v1.request import Request, RequestStatus

from vllm_patches.replica_blocks import ReplicaBlocks
from vllm_patches.tt_config import TTConfig


class TTScheduler(Scheduler):
    # Set when the next step must decode: after a chunk of a long prompt (running requests keep streaming between
    # its chunks), and after a prefill attempt that admitted nothing while requests were decoding.
    _decode_next = False
    # tt.data_parallel > 1: the block pool split among the replicas (vllm_patches/replica_blocks.py).
    replica_blocks: ReplicaBlocks | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        replicas = TTConfig.from_additional_config(self.vllm_config.additional_config).data_parallel
        if replicas > 1:
            if self.policy == SchedulingPolicy.PRIORITY:
                # vLLM's priority victim is chosen over every running request; a replica's blocks can only be
                # freed by preempting a request on that replica.
                raise ValueError("--scheduling-policy priority is not supported with additional_config"
                                 f'["tt"]["data_parallel"]={replicas}: use the default fcfs policy')
            self.replica_blocks = ReplicaBlocks(self, replicas, self.max_num_running_reqs)

    def _vllm_schedule(self, throttle_prefills: bool) -> SchedulerOutput:
        """vLLM's schedule(); with data parallel, a preemption takes the newest request on the replica that ran out
        of blocks."""
        if self.replica_blocks is None:
            return super().schedule(throttle_prefills)
        self.replica_blocks.new_step()
        self.running = self.replica_blocks.victims_last(self.running)
        try:
            return super().schedule(throttle_prefills)
        finally:
            self.running = list(self.running)

    def _has_waiting(self) -> bool:
        return bool(len(self.waiting) or len(self.kv_holding_waiting))

    def _chunking(self) -> list:
        """Running requests whose prompt is only partly prefilled (chunked prefill across steps)."""
        return [r for r in self.running if r.is_prefill_chunk]

    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
        chunking = self._chunking()
        decoding = len(self.running) > len(chunking)
        admit = self._has_waiting() and len(self.running) < self.max_num_running_reqs
        if admit and decoding and self._admission_sure_to_fail(chunking):
            admit = False  # decode now rather than after an attempt doomed to be empty
        if (chunking or admit) and not (self._decode_next and decoding):
            out = self._prefill_only(throttle_prefills, chunking)
            self._decode_next = bool(self._chunking()) or (decoding and not out.total_num_scheduled_tokens)
            return out
        self._decode_next = False
        return self._decode_only(throttle_prefills)

    def _admission_sure_to_fail(self, chunking: list) -> bool:
        """True when a prefill attempt is sure to admit nothing.

        vLLM's waiting loop stops at the first request whose KV blocks cannot be allocated, so the attempt is empty
        when the head of the waiting queue goes straight to allocation and needs more blocks than are free. What
        this does not model (requests holding blocks, prompts being chunked, connectors, LoRA, speculative decoding,
        encoder inputs, a request waiting for its grammar) is left to the attempt."""
        if chunking or len(self.kv_holding_waiting) or not len(self.waiting) or not self._predictable():
            return False
        free = self.kv_cache_manager.block_pool.get_num_free_blocks()
        if free == 0:
            return True  # every waiting request needs a new block: a prefix hit stops short of the last token
        head = self.waiting.peek_request()
        if (head.status not in (RequestStatus.WAITING, RequestStatus.PREEMPTED) or head.num_computed_tokens
                or head.has_encoder_inputs or getattr(head, "num_stale_output_tokens", 0)):
            return False
        needed = self._blocks_to_admit(head)
        return needed is None or needed > free

    def _predictable(self) -> bool:
        groups = self.kv_cache_config.kv_cache_groups
        return (len(groups) == 1 and type(groups[0].kv_cache_spec) is FullAttentionSpec and self.replica_blocks is None
                and self.connector is None and self.lora_config is None and not self.num_lookahead_tokens
                and not getattr(self, "prefix_replay_tokens", 0) and not getattr(self, "num_prefill_lookahead", 0)
                and not getattr(self, "need_mamba_block_aligned_split", False)
                # prefix hits then end on block boundaries (no copy-on-write block for a hit inside one)
                and getattr(self, "hash_block_size", self.block_size) == self.block_size)

    def _blocks_to_admit(self, request: Request) -> int | None:
        """Free KV blocks vLLM's allocate_slots asks for to admit a fresh waiting request, for one full-attention
        KV group: the blocks its tokens span beyond its prefix-cache hit (the whole sequence under vLLM's default
        scheduler_reserve_full_isl, else the first chunk), and the hit blocks that sit evictable in the free queue
        (taking them off it uses free capacity). None when the attempt stops before allocating (a prompt over the
        token budget with chunked prefill off)."""
        manager, cfg = self.kv_cache_manager, self.scheduler_config
        hit_blocks, hit = [], 0
        if manager.prefix_cache_lookup_enabled(request):
            groups, hit, _ = manager.coordinator.find_longest_cache_hit(request.block_hashes, request.num_tokens - 1)
            hit_blocks = groups[0]
        if getattr(self, "scheduler_reserve_full_isl", cfg.scheduler_reserve_full_isl):
            end = request.num_tokens
        else:
            new = request.num_tokens - hit
            # The long-prefill cap as configured: vLLM may lift it (a lone request, the adaptive floor), and a
            # smaller chunk only lowers the count, so an inexact prediction errs towards making the attempt.
            if 0 < cfg.long_prefill_token_threshold < new:
                new = cfg.long_prefill_token_threshold
            budget = min(self.max_num_scheduled_tokens, cfg.max_num_batched_tokens)
            if not cfg.enable_chunked_prefill and new > budget:
                return None
            end = hit + min(new, budget)
        spanned = -(-min(end, self.max_model_len) // self.block_size)
        evictable = sum(b.ref_cnt == 0 and not b.is_null for b in hit_blocks)
        return max(spanned - len(hit_blocks), 0) + evictable

    def _prefill_only(self, throttle_prefills: bool, chunking: list | None = None) -> SchedulerOutput:
        # Hide the decoding requests so only prompts are scheduled (waiting ones, and the next chunk of those being
        # prefilled), and lower the admission cap so the decode batch (hidden + admitted) stays within max_num_seqs.
        chunking = chunking or []
        hidden, cap = [r for r in self.running if r not in chunking], self.max_num_active_reqs
        self.running = list(chunking)
        self.max_num_active_reqs = cap - len(hidden)
        try:
            out = self._vllm_schedule(throttle_prefills)
        finally:
            admitted, self.running, self.max_num_active_reqs = self.running, hidden, cap
            self.running.extend(admitted)
        return out

    def _decode_only(self, throttle_prefills: bool) -> SchedulerOutput:
        # Swap in empty waiting queues, and hide prompts still being prefilled in chunks; requests preempted during
        # this step land in the temporary queue and are put back at the front of the real one.
        waiting, holding = self.waiting, self.kv_holding_waiting
        self.waiting, self.kv_holding_waiting = create_request_queue(self.policy), create_request_queue(self.policy)
        chunking = self._chunking()
        if chunking:
            self.running = [r for r in self.running if not r.is_prefill_chunk]
        try:
            out = self._vllm_schedule(throttle_prefills)
        finally:
            if chunking:
                # Preempted chunking requests left running for the waiting queue inside schedule(); the others
                # go back to running.
                self.running.extend(r for r in chunking if r.status == RequestStatus.RUNNING)
            preempted, preempted_holding = self.waiting, self.kv_holding_waiting
            self.waiting, self.kv_holding_waiting = waiting, holding
            if len(preempted):
                self.waiting.prepend_requests(preempted)
            if len(preempted_holding):
                self.kv_holding_waiting.prepend_requests(preempted_holding)
        return out


