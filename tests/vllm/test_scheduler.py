"""TTScheduler on vLLM's own Scheduler: prefill-only and decode-only steps, each made by one call of vLLM's
schedule(); the step decodes when no waiting request fits the KV cache, and nothing vLLM drains per step is lost."""

import random

import pytest
import torch
from vllm.engine.arg_utils import EngineArgs
from vllm.sampling_params import SamplingParams, StructuredOutputsParams
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request, RequestStatus
from vllm.v1.structured_output import StructuredOutputManager

from vllm_patches.scheduler import TTScheduler

BLOCK = 64


def scheduler(smollm2_dir, num_blocks, **engine_args):
    args = dict(max_model_len=1024, max_num_seqs=4, enable_prefix_caching=False) | engine_args
    cfg = EngineArgs(model=smollm2_dir, **args).create_engine_config()
    cfg.cache_config.num_gpu_blocks = num_blocks  # what the engine core sets from the worker's KV capacity
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=64, dtype=torch.bfloat16)
    kv = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(layer_names=["layer.0"], kv_cache_spec=spec)])
    return TTScheduler(vllm_config=cfg, kv_cache_config=kv, structured_output_manager=StructuredOutputManager(cfg),
                       block_size=BLOCK)


def request(rid, n, first=1, hasher=None, **params):
    """A prompt of n consecutive token ids from `first`; `hasher` hashes its blocks, as vLLM's engine core does when a
    request arrives with prefix caching on."""
    return Request(rid, list(range(first, first + n)), SamplingParams(max_tokens=64, **params), None,
                   block_hasher=hasher)


def advance(sched, out: SchedulerOutput):
    """Hands vLLM's scheduler the step's output as a model runner would: token 7 for each scheduled request whose
    prompt is now fully computed, nothing for one partway through a chunked prefill."""
    ids = list(out.num_scheduled_tokens)
    done = [sched.requests[r].num_computed_tokens >= sched.requests[r].num_tokens for r in ids]
    sched.update_from_output(out, ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                                                    sampled_token_ids=[[7] if d else [] for d in done]))


@pytest.fixture
def schedule_calls(monkeypatch):
    """Records each call of vLLM's own Scheduler.schedule() (TTScheduler.schedule builds a step from them)."""
    from vllm.v1.core.sched.scheduler import Scheduler

    calls = []
    original = Scheduler.schedule
    monkeypatch.setattr(Scheduler, "schedule", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    return calls


def test_steps_are_prefill_or_decode_in_one_call(smollm2_dir, schedule_calls):
    sched = scheduler(smollm2_dir, num_blocks=8)  # 7 usable blocks of 64 tokens
    sched.add_request(request("a", 100))
    sched.add_request(request("b", 100))
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"a", "b"} and not out.scheduled_cached_reqs.req_ids
    advance(sched, out)
    out = sched.schedule()  # nothing waiting: a decode step of both
    assert out.num_scheduled_tokens == {"a": 1, "b": 1}
    advance(sched, out)

    # "c" needs 7 blocks and 5 are free once "b" is gone: some blocks free, not enough. The step decodes in one
    # call, and what vLLM drains per step comes with it: "b", finished between steps, and a pending preemption.
    sched.add_request(request("c", 400))
    sched.finish_requests("b", RequestStatus.FINISHED_ABORTED)
    sched.reset_preempted_req_ids.add("z")
    schedule_calls.clear()
    out = sched.schedule()
    assert len(schedule_calls) == 1
    assert out.num_scheduled_tokens == {"a": 1}, "the running batch must decode when nothing waiting fits"
    assert "b" in out.finished_req_ids
    assert out.preempted_req_ids and "z" in out.preempted_req_ids
    assert sched.waiting.peek_request().request_id == "c"


def test_an_attempt_the_prediction_cannot_rule_out_is_an_empty_step(smollm2_dir, schedule_calls):
    """A waiting request whose grammar is still compiling is skipped by vLLM's attempt, so nothing is admitted. The
    step is that attempt alone (empty, carrying what vLLM drained: a request aborted between steps), and the next
    step decodes the running batch."""
    sched = scheduler(smollm2_dir, num_blocks=8)
    sched.add_request(request("a", 100))
    advance(sched, sched.schedule())
    sched.add_request(request("g", 10, structured_outputs=StructuredOutputsParams(json_object=True)))
    assert sched.requests["g"].status == RequestStatus.WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR
    sched.add_request(request("d", 50))
    sched.finish_requests("d", RequestStatus.FINISHED_ABORTED)
    schedule_calls.clear()
    out = sched.schedule()
    assert len(schedule_calls) == 1 and out.total_num_scheduled_tokens == 0
    assert "d" in out.finished_req_ids
    schedule_calls.clear()
    out = sched.schedule()
    assert len(schedule_calls) == 1 and out.num_scheduled_tokens == {"a": 1}


@pytest.mark.parametrize("reserve_full_isl", [True, False])
def test_admission_prediction_matches_vllms_attempt(smollm2_dir, reserve_full_isl):
    """Deciding to decode without a prefill attempt is only safe if it never skips a step that would have admitted a
    request, and it saves the empty step only if it sees each one that would not. Over random KV states (prefix
    hits on live and on evictable blocks, preempted requests, chunked prefill, vLLM's full-sequence admission gate
    on and off), the prediction is compared with what vLLM's own prefill attempt then does."""
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

    hash_fn = get_hash_fn_by_name("sha256")
    init_none_hash(hash_fn)
    hasher = get_request_block_hasher(BLOCK, hash_fn)
    rng = random.Random(0)
    outcomes = {True: 0, False: 0}
    for trial in range(80):
        sched = scheduler(smollm2_dir, num_blocks=rng.randint(4, 16), enable_prefix_caching=True,
                          max_num_batched_tokens=rng.choice([256, 1024]), enable_chunked_prefill=True,
                          scheduler_reserve_full_isl=reserve_full_isl)
        for i in range(rng.randint(1, 4)):  # prompts from two token families, so later ones hit earlier ones
            sched.add_request(request(f"{trial}.{i}", rng.randint(20, 600), rng.choice([1, 5000]), hasher))
        for _ in range(rng.randint(1, 12)):
            advance(sched, sched.schedule())
            if rng.random() < 0.3 and sched.running:  # a request ends: its cached blocks become evictable
                sched.finish_requests(rng.choice(sched.running).request_id, RequestStatus.FINISHED_STOPPED)
        sched.add_request(request(f"{trial}.new", rng.randint(20, 700), rng.choice([1, 5000]), hasher))
        if sched._chunking() or len(sched.running) >= sched.max_num_running_reqs:
            continue
        predicted = sched._admission_sure_to_fail([])
        attempt = sched._prefill_only(False, [])
        assert predicted == (attempt.total_num_scheduled_tokens == 0), (
            trial, predicted, attempt.num_scheduled_tokens, sched.kv_cache_manager.block_pool.get_num_free_blocks())
        outcomes[predicted] += 1
    assert min(outcomes.values()) >= 10, outcomes  # both outcomes exercised


def test_full_cache_decodes_in_one_schedule_call(smollm2_dir, schedule_calls):
    """With every KV block held by the running requests no waiting request can be admitted: the step decodes in a
    single call of vLLM's schedule(), and what vLLM drains per step still arrives: a waiting request aborted between
    steps is in finished_req_ids, a pending preemption in preempted_req_ids."""
    sched = scheduler(smollm2_dir, num_blocks=5)  # 4 usable blocks of 64 tokens
    sched.add_request(request("a", 100))
    sched.add_request(request("b", 100))
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"a", "b"}
    advance(sched, out)
    assert sched.kv_cache_manager.block_pool.get_num_free_blocks() == 0  # 2 blocks each; decode fits to 128 tokens

    sched.add_request(request("c", 50))
    sched.add_request(request("d", 50))
    sched.finish_requests("d", RequestStatus.FINISHED_ABORTED)
    sched.reset_preempted_req_ids.add("z")
    schedule_calls.clear()
    out = sched.schedule()
    assert len(schedule_calls) == 1
    assert out.num_scheduled_tokens == {"a": 1, "b": 1}
    assert "d" in out.finished_req_ids and "z" in (out.preempted_req_ids or ())
    assert sched.waiting.peek_request().request_id == "c"

    # A block frees up (b finishes): the next step tries to admit c again, in a prefill-only step.
    advance(sched, out)
    sched.finish_requests("b", RequestStatus.FINISHED_ABORTED)
    schedule_calls.clear()
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"c"} and "b" in out.finished_req_ids and len(schedule_calls) == 1
