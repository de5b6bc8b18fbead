"""Priority scheduling (--scheduling-policy priority) with the TT scheduler: waiting requests are admitted in
priority order as slots free up, and when the KV cache runs out the lowest-priority running request is preempted,
as vLLM's own scheduler does. The same runs under FCFS pick differently, so each check would notice a scheduler that
ignored priorities."""

import pytest
import torch
from vllm import LLM, SamplingParams
from vllm.engine.arg_utils import EngineArgs
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

from tests.models.tiny import make_tiny_model
from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown
from tests.vllm.test_scheduler import advance
from vllm_patches.scheduler import TTScheduler

BLOCK = 64


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model("llama_gqa", tmp_path_factory.mktemp("priority_models"))


def _first_token_order(path, policy: str) -> list[str]:
    """Two slots; "long" (24 tokens) and "short" (3) arrive first and take them, then "low" (priority 5) and "high"
    (priority 0) wait, "high" arriving last. Returns the request ids in the order their first tokens came out.
    All four are sent back to back, in this order, and arrive so: whichever steps the engine core (stepping in its
    own process) takes meanwhile, "low" can only find a free slot after "short" is done, by when "high" has arrived.
    (Sending the last two after a step raced "short" finishing and admitted "low" before "high" arrived.)"""
    engine = LLM(model=str(path), skip_tokenizer_init=True, max_num_seqs=2, max_model_len=256, block_size=32, seed=0,
                 scheduling_policy=policy, num_gpu_blocks_override=TEST_KV_BLOCKS)
    try:
        core = engine.llm_engine

        def add(rid, n, priority=0):
            core.add_request(rid, {"prompt_token_ids": [(5 * i + n) % 400 + 1 for i in range(20)]},
                             SamplingParams(temperature=0, max_tokens=n, ignore_eos=True, detokenize=False),
                             priority=priority)

        add("long", 24)
        add("short", 3)
        add("low", 4, priority=5)
        add("high", 4, priority=0)
        order: list[str] = []
        while core.has_unfinished_requests():
            for out in core.step():
                if out.outputs[0].token_ids and out.request_id not in order:
                    order.append(out.request_id)
        return order
    finally:
        shutdown(engine)


def test_higher_priority_waiting_request_is_admitted_first(tiny):
    order = _first_token_order(tiny, "priority")
    assert order.index("high") < order.index("low"), order
    # In arrival order without priorities: the check above is not satisfied by accident.
    fcfs = _first_token_order(tiny, "fcfs")
    assert fcfs.index("low") < fcfs.index("high"), fcfs


def _scheduler(smollm2_dir, policy: str, num_blocks: int) -> TTScheduler:
    cfg = EngineArgs(model=smollm2_dir, max_model_len=1024, max_num_seqs=4, enable_prefix_caching=False,
                     scheduling_policy=policy).create_engine_config()
    cfg.cache_config.num_gpu_blocks = num_blocks
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=64, dtype=torch.bfloat16)
    kv = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(layer_names=["layer.0"], kv_cache_spec=spec)])
    return TTScheduler(vllm_config=cfg, kv_cache_config=kv, structured_output_manager=StructuredOutputManager(cfg),
                       block_size=BLOCK)


def _preempted_when_kv_runs_out(smollm2_dir, policy: str) -> tuple[set, dict]:
    """"a" (priority 5) runs alone, then "b" (0) and "c" (1) join; 7 blocks of 64 hold the three 128-token prompts
    with one to spare, so the first decode step of all three must preempt one of them."""
    sched = _scheduler(smollm2_dir, policy, num_blocks=8)

    def add(rid, priority):
        sched.add_request(Request(rid, list(range(1, 129)), SamplingParams(max_tokens=64), None, priority=priority))

    add("a", 5)
    advance(sched, sched.schedule())
    add("b", 0)
    add("c", 1)
    out = sched.schedule()
    assert set(out.num_scheduled_tokens) == {"b", "c"}  # a prefill-only step
    advance(sched, out)
    out = sched.schedule()
    return set(out.preempted_req_ids or ()), dict(out.num_scheduled_tokens)


def test_kv_shortage_preempts_the_lowest_priority(smollm2_dir):
    preempted, scheduled = _preempted_when_kv_runs_out(smollm2_dir, "priority")
    assert preempted == {"a"} and scheduled == {"b": 1, "c": 1}
    # FCFS preempts the most recently admitted instead.
    preempted, scheduled = _preempted_when_kv_runs_out(smollm2_dir, "fcfs")
    assert preempted == {"c"} and scheduled == {"a": 1, "b": 1}
