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
            # No waiting request fit in the KV cache: decode instead, or the running batch would starve. The
            # finished ids the empty step collected must still reach the worker.
            finished = out.finished_req_ids
            out = self._decode_only(throttle_prefills)
            out.finished_req_ids |= finished
            return out
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
