"""TTScheduler's step policy on vLLM's AsyncScheduler, for async scheduling: the next step is scheduled before this
step's tokens are known (each scheduled request holds an output placeholder until its token arrives), so the
worker can launch it while the previous one's output is still being read back."""

from __future__ import annotations

from vllm.v1.core.sched.async_scheduler import AsyncScheduler

from vllm_patches.scheduler import TTScheduler


class TTAsyncScheduler(TTScheduler, AsyncScheduler):
    """TTScheduler.schedule (prefill-only or decode-only steps) runs vLLM's Scheduler.schedule, whose bookkeeping
    after scheduling and on each output is AsyncScheduler's (placeholders)."""
