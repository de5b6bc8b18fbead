"""Step policy for TT: every step is prefill-only or decode-only.

TT prefills one user at a time at bucketed lengths and decodes a fixed-shape (traced) batch, so mixing the two in a
step buys nothing. Waiting requests are admitted in a prefill-only step while there is room in the decode batch;
otherwise the step decodes the running batch, which never exceeds max_num_seqs. With chunked prefill (a token budget
below the longest prompt), a long prompt is prefilled one chunk per prefill step, and a decode step runs between
its chunks so the running requests keep streaming.

Priority scheduling (--scheduling-policy priority) keeps vLLM's semantics: prefill steps admit from vLLM's
priority-ordered waiting queue, and a decode step that runs out of KV blocks preempts the lowest-priority running
request (tests/vllm/test_priority.py). One difference: the next chunk of a prompt prefilled across steps that finds
no free KV blocks can only preempt prompts being chunked (the decoding requests are hidden from a prefill step),
where vLLM's mixed step could preempt a lower-priority decoding request instead.
"""

from __future__ import annotations

from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.request_queue import create_request_queue
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.request import RequestStatus


class TTScheduler(Scheduler):
    # Set after a prefill step that left a prompt partly prefilled (chunked prefill): the next step decodes, so
    # running requests keep streaming between the chunks of a long prompt.
    _decode_next = False

    def _has_waiting(self) -> bool:
        return bool(len(self.waiting) or len(self.kv_holding_waiting))

    def _chunking(self) -> list:
        """Running requests whose prompt is only partly prefilled (chunked prefill across steps)."""
        return [r for r in self.running if r.is_prefill_chunk]

    def _cannot_admit(self, chunking: list) -> bool:
        """True when a prefill attempt is sure to schedule nothing: no KV block is free, and every waiting request
        needs one (prefix-cache hits stop short of a prompt's last token, whose block is new; requests that already
        hold blocks wait in kv_holding_waiting). Prompts being chunked are left to the attempt (it may preempt)."""
        return not chunking and not len(self.kv_holding_waiting) and \
            self.kv_cache_manager.block_pool.get_num_free_blocks() == 0

    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
        chunking = self._chunking()
        decoding = len(self.running) > len(chunking)
        admit = self._has_waiting() and len(self.running) < self.max_num_running_reqs
        if admit and decoding and self._cannot_admit(chunking):
            admit = False  # decode now, in one schedule() call, rather than after an attempt doomed to be empty
        if (chunking or admit) and not (self._decode_next and decoding):
            out = self._prefill_only(throttle_prefills, chunking)
            self._decode_next = bool(self._chunking())
            if out.total_num_scheduled_tokens or not decoding:
                return out
            # No waiting request fit in the KV cache: decode instead, or the running batch would starve. What the
            # empty step drained from the scheduler (finished and preempted ids, freed encoder entries, blocks to
            # zero or copy) must still reach the worker. (A full cache is caught before the attempt, in one call.)
            return _carry_over(out, self._decode_only(throttle_prefills))
        self._decode_next = False
        return self._decode_only(throttle_prefills)

    def _prefill_only(self, throttle_prefills: bool, chunking: list | None = None) -> SchedulerOutput:
        # Hide the decoding requests so only prompts are scheduled (waiting ones, and the next chunk of those being
        # prefilled), and lower the admission cap so the decode batch (hidden + admitted) stays within max_num_seqs.
        chunking = chunking or []
        hidden, cap = [r for r in self.running if r not in chunking], self.max_num_active_reqs
        self.running = list(chunking)
        self.max_num_active_reqs = cap - len(hidden)
        try:
            out = super().schedule(throttle_prefills)
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
            out = super().schedule(throttle_prefills)
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


def _carry_over(empty: SchedulerOutput, out: SchedulerOutput) -> SchedulerOutput:
    """Folds into `out` the per-step state that an empty SchedulerOutput took from the scheduler."""
    out.finished_req_ids = empty.finished_req_ids | out.finished_req_ids
    if empty.preempted_req_ids:
        out.preempted_req_ids = empty.preempted_req_ids | (out.preempted_req_ids or set())
    out.free_encoder_mm_hashes = [*empty.free_encoder_mm_hashes, *out.free_encoder_mm_hashes]
    for name in ("new_block_ids_to_zero", "kv_cache_block_copies"):
        drained = getattr(empty, name)
        if drained:
            setattr(out, name, [*drained, *(getattr(out, name) or [])])
    return out
