"""TTScheduler on vLLM's own Scheduler: prefill-only and decode-only steps, and the fallback to decode when no
waiting request fits the KV cache, which must not lose what the empty prefill attempt drained."""

import torch
from vllm.engine.arg_utils import EngineArgs
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request, RequestStatus
from vllm.v1.structured_output import StructuredOutputManager

from vllm_patches.scheduler import TTScheduler

BLOCK = 64


def scheduler(smollm2_dir, num_blocks):
    cfg = EngineArgs(model=smollm2_dir, max_model_len=1024, max_num_seqs=4,
                     enable_prefix_caching=False).create_engine_config()
    cfg.cache_config.num_gpu_blocks = num_blocks  # what the engine core sets from the worker's KV capacity
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=64, dtype=torch.bfloat16)
    kv = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(layer_names=["layer.0"], kv_cache_spec=spec)])
    return TTScheduler(vllm_config=cfg, kv_cache_config=kv, structured_output_manager=StructuredOutputManager(cfg),
                       block_size=BLOCK)


def request(rid, n):
    return Request(rid, list(range(1, n + 1)), SamplingParams(max_tokens=64), None)


def advance(sched, out: SchedulerOutput):
    """Pretend the model ran the step: every scheduled request computed its tokens and emitted one more."""
    for rid in out.num_scheduled_tokens:
        req = sched.requests[rid]
        if req.num_computed_tokens >= req.num_prompt_tokens:
            req.append_output_token_ids(7)


def test_steps_are_prefill_or_decode_and_fallback_keeps_drained_state(smollm2_dir):
    sched = scheduler(smollm2_dir, num_blocks=8)  # 7 usable blocks of 64 tokens
    sched.add_request(request("a", 100))
    sched.add_request(request("b", 100))
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"a", "b"} and not out.scheduled_cached_reqs.req_ids
    advance(sched, out)
    out = sched.schedule()  # nothing waiting: a decode step of both
    assert out.num_scheduled_tokens == {"a": 1, "b": 1}
    advance(sched, out)

    # "c" cannot fit (7 blocks; 5 left once "b" is gone), so the step must decode instead; meanwhile "b" finished
    # between steps and one preemption is pending: the empty prefill attempt drains both, the decode step carries them.
    sched.add_request(request("c", 400))
    sched.finish_requests("b", RequestStatus.FINISHED_ABORTED)
    sched.reset_preempted_req_ids.add("z")
    out = sched.schedule()
    assert out.num_scheduled_tokens == {"a": 1}, "the running batch must decode when nothing waiting fits"
    assert "b" in out.finished_req_ids
    assert out.preempted_req_ids and "z" in out.preempted_req_ids
    assert sched.waiting.peek_request().request_id == "c"


def test_full_cache_decodes_in_one_schedule_call(smollm2_dir, monkeypatch):
    """With every KV block held by the running requests no waiting request can be admitted: the step decodes in a
    single call of vLLM's schedule() (no empty prefill attempt first), and what vLLM drains per step still arrives:
    a waiting request aborted between steps is in finished_req_ids, a pending preemption in preempted_req_ids."""
    from vllm.v1.core.sched.scheduler import Scheduler

    sched = scheduler(smollm2_dir, num_blocks=5)  # 4 usable blocks of 64 tokens
    sched.add_request(request("a", 100))
    sched.add_request(request("b", 100))
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"a", "b"}
    advance(sched, out)
    assert sched.kv_cache_manager.block_pool.get_num_free_blocks() == 0  # 2 blocks each; decode fits to 128 tokens

    calls = []
    original = Scheduler.schedule
    monkeypatch.setattr(Scheduler, "schedule", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    sched.add_request(request("c", 50))
    sched.add_request(request("d", 50))
    sched.finish_requests("d", RequestStatus.FINISHED_ABORTED)
    sched.reset_preempted_req_ids.add("z")
    out = sched.schedule()
    assert len(calls) == 1
    assert out.num_scheduled_tokens == {"a": 1, "b": 1}
    assert "d" in out.finished_req_ids and "z" in (out.preempted_req_ids or ())
    assert sched.waiting.peek_request().request_id == "c"

    # A block frees up (b finishes): the next step tries to admit c again, in a prefill-only step.
    advance(sched, out)
    sched.finish_requests("b", RequestStatus.FINISHED_ABORTED)
    calls.clear()
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"c"} and "b" in out.finished_req_ids and len(calls) == 1
