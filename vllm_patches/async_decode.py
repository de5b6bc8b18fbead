"""Async decode for vLLM's async scheduling: a decode step's token ids come back without the host waiting for them.

With async scheduling vLLM keeps a queue of two steps: it schedules and launches step N+1 (execute_model, then
sample_tokens) before it collects step N's output (AsyncModelRunnerOutput.get_output()). A decode step sampled on the
device is launched with decode_forward(read_from_device=False), and its token ids are copied back with
read_decode_output(async_read=True): a non-blocking read followed by an event, which the host waits on only when
the tokens are needed (process_decode_output_host, ttnn.event_synchronize).

They are needed by the next decode step (its input tokens), by anything that changes the batch layout, and by a
step that samples on the host. So an in-flight step is resolved ("drained"):
- at the next execute_model, unless that step continues exactly the same decode batch (same requests, one token
  each, nothing finished, preempted, resumed or added): the runner's batch must hold every token before its layout
  changes (a prefill, a finished or new request) or before vLLM's sampler reads it (host sampling, structured
  outputs, logprobs, penalties);
- in a continuing step's sample_tokens, after that step's inputs (positions, page table, sampling parameters) were
  prepared on the host: the previous step's token ids are the one input still missing. The decode trace takes its
  tokens from the host (the sampled ids could feed it on the device only through an in-place copy op, which
  neither the simulator nor the paths validated on ttnn 0.81.1 offer for the trace's [1, 32] token input), so
  the wait happens here, after every other host step of the next step: vLLM's scheduling, the runner's state update
  and input preparation overlap the device's work on step N;
- when vLLM collects the step's output (get_output), if nothing resolved it before.

Resolution appends the tokens to the runner's persistent batch exactly as a synchronous step does, so the next
step sees the same state either way and outputs are token-for-token those of the synchronous path.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.outputs import AsyncModelRunnerOutput, ModelRunnerOutput

# The step-by-step record kept for observability (tests, benchmarks): ("execute", step) when execute_model starts,
# ("launch", step) when a decode step is handed to the device without waiting, ("wait", step) when the host waits
# for a decode step's token ids (on the synchronous path: right after its launch).
EVENT_LOG = 4096


@dataclass
class InflightDecode:
    """A launched decode step whose token ids are being read back."""

    step: int
    req_ids: list[str]
    slots: np.ndarray  # each batch row's decode slot, in row order
    read: tuple  # read_decode_output(async_read=True): (pending read with its event, is_tokens, users)
    output: ModelRunnerOutput | None = None
    tokens: list[int] = field(default_factory=list)


class AsyncTTModelRunnerOutput(AsyncModelRunnerOutput):
    """What sample_tokens hands vLLM for a decode step launched without waiting; vLLM calls get_output() once it
    has launched the next step."""

    def __init__(self, decoder: AsyncDecoder, step: InflightDecode) -> None:
        self._decoder, self._step = decoder, step

    def get_output(self) -> ModelRunnerOutput:
        return self._decoder.resolve(self._step, "collected")


class AsyncDecoder:
    """Holds the runner's in-flight decode step (at most one) and resolves it into the runner's batch."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        self.inflight: InflightDecode | None = None
        self.events: deque[tuple[str, int]] = deque(maxlen=EVENT_LOG)
        self.launched = 0  # decode steps launched without waiting
        self.drains: Counter[str] = Counter()  # why an in-flight step was resolved: "steady" means overlapped

    def drain_reason(self, so: SchedulerOutput) -> str | None:
        """Why the in-flight step must be resolved before `so` updates the batch, or None when `so` decodes exactly
        the in-flight step's batch again (it may then be prepared before the in-flight step's tokens are known)."""
        f = self.inflight
        if f is None:
            return None
        cached = so.scheduled_cached_reqs
        if so.scheduled_new_reqs or cached.resumed_req_ids or any(n > 1 for n in so.num_scheduled_tokens.values()):
            return "prefill"
        if so.finished_req_ids or so.preempted_req_ids or so.num_scheduled_tokens.keys() != set(f.req_ids):
            return "layout"
        return None

    def drain(self, reason: str) -> None:
        if self.inflight is not None:
            self.resolve(self.inflight, reason)

    def launch(self, so_step: int, inputs: dict[str, torch.Tensor], params: Any) -> AsyncTTModelRunnerOutput:
        """Runs a decode step sampled on the device and returns at once; its token ids are read back
        asynchronously. A step continuing the in-flight one takes that step's tokens as its own input tokens."""
        runner = self.runner
        batch = runner.input_batch
        slots = runner._slots()
        prev = self.inflight
        if prev is not None:
            if list(batch.req_ids) != prev.req_ids:
                raise RuntimeError("async decode: a continuing step's batch rows moved; it should have drained")
            # Everything but the tokens was prepared from the host's state, in which each row's newest token is
            # still step N-1's: this step's positions are one further, and its tokens are step N's.
            rows = torch.from_numpy(slots)
            inputs["start_pos"][rows] += 1
            self.resolve(prev, "steady")
            inputs["tokens"][rows, 0] = torch.tensor(prev.tokens, dtype=torch.int32)
        out = runner.model.decode_forward(kv_cache=runner.kv_cache, enable_trace=runner.tt.trace_decode,
                                          read_from_device=False, sampling_params=params, **inputs)
        read = runner.model.read_decode_output(out, async_read=True)
        self.events.append(("launch", so_step))
        self.launched += 1
        runner.device_sampled_steps += 1  # the runner's count of steps the device sampled, async or not
        self.inflight = InflightDecode(so_step, list(batch.req_ids), slots, read)
        return AsyncTTModelRunnerOutput(self, self.inflight)

    def resolve(self, f: InflightDecode, reason: str) -> ModelRunnerOutput:
        """Waits for the step's token ids (its event) and appends them to the runner's batch, once."""
        if f.output is not None:
            return f.output
        runner = self.runner
        self.events.append(("wait", f.step))
        ids = runner.model.process_decode_output_host(*f.read)  # ttnn.event_synchronize, then the host copy
        tokens = ids.reshape(-1)[torch.from_numpy(f.slots)].tolist()  # slot order -> the step's row order
        batch = runner.input_batch
        for req_id, token in zip(f.req_ids, tokens, strict=True):
            # Resolution always happens before the batch's layout changes, so each request is still at its row.
            i = batch.req_id_to_index[req_id]
            pos = int(batch.num_tokens_no_spec[i])
            runner.requests[req_id].output_token_ids.append(token)
            batch.token_ids_cpu[i, pos] = token
            batch.num_tokens_no_spec[i] = pos + 1
        f.tokens = tokens
        f.output = ModelRunnerOutput(req_ids=f.req_ids, req_id_to_index={r: i for i, r in enumerate(f.req_ids)},
                                     sampled_token_ids=[[t] for t in tokens])
        self.drains[reason] += 1
        if self.inflight is f:
            self.inflight = None
        return f.output
