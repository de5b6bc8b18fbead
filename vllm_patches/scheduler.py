"""Step policy for TT: every step is prefill-only or decode-only.

TT prefills one user at a time at bucketed lengths and decodes a fixed-shape (traced) batch, so mixing the two in a
step buys nothing. Waiting requests are admitted in a prefill-only step while there is room in the decode batch;
otherwise the step decodes the running batch, which never exceeds max_num_seqs.
"""

from __future__ import annotations

from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.request_queue import create_request_queue
from vllm.v1.core.sched.scheduler import Scheduler


class TTScheduler(Scheduler):
    def _has_waiting(self) -> bool:
        return bool(len(self.waiting) or len(self.kv_holding_waiting))

    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
        if self._has_waiting() and len(self.running) < self.max_num_running_reqs:
            out = self._prefill_only(throttle_prefills)
            if out.total_num_scheduled_tokens or not self.running:
                return out
            # No waiting request fit in the KV cache: decode instead, or the running batch would starve. What the
            # empty step drained from the scheduler (finished and preempted ids, freed encoder entries, blocks to
            # zero or copy) must still reach the worker.
            return _carry_over(out, self._decode_only(throttle_prefills))
        return self._decode_only(throttle_prefills)

    def _prefill_only(self, throttle_prefills: bool) -> SchedulerOutput:
        # Hide the running batch so only waiting requests are scheduled, and lower the admission cap so the
        # decode batch (hidden + admitted) stays within max_num_seqs.
        hidden, cap = self.running, self.max_num_active_reqs
        self.running = []
        self.max_num_active_reqs = cap - len(hidden)
        try:
            out = super().schedule(throttle_prefills)
        finally:
            admitted, self.running, self.max_num_active_reqs = self.running, hidden, cap
            self.running.extend(admitted)
        return out

    def _decode_only(self, throttle_prefills: bool) -> SchedulerOutput:
        # Swap in empty waiting queues; requests preempted during this step land in the temporary queue and are
        # put back at the front of the real one.
        waiting, holding = self.waiting, self.kv_holding_waiting
        self.waiting, self.kv_holding_waiting = create_request_queue(self.policy), create_request_queue(self.policy)
        try:
            out = super().schedule(throttle_prefills)
        finally:
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
