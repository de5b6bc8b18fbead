"""Preemption with recompute under a KV cache too small for the batch, and aborting a request mid-flight."""

from vllm import LLM, SamplingParams

from tests.vllm.conftest import shutdown

PROMPTS = ["The capital of France is", "Write a story about a dragon:", "List the planets:", "Explain gravity:"]


def num_preemptions(engine) -> float:
    return sum(getattr(m, "value", 0) for m in engine.get_metrics() if "num_preemptions" in m.name)


def test_preemption_outputs_equal_unpreempted_run(llm, smollm2_dir):
    params = SamplingParams(temperature=0, max_tokens=80, ignore_eos=True)
    reference = [o.outputs[0].token_ids for o in llm.generate(PROMPTS, params)]
    # 6 usable blocks of 64 tokens for 4 requests that each grow to 2 blocks: some must be preempted.
    small = LLM(model=smollm2_dir, max_num_seqs=4, max_model_len=256, block_size=64, num_gpu_blocks_override=7,
                enable_prefix_caching=False, disable_log_stats=False,
                additional_config={"tt": {"optimizations": "reference"}})
    try:
        outs = [o.outputs[0].token_ids for o in small.generate(PROMPTS, params)]
        assert num_preemptions(small) > 0
    finally:
        shutdown(small)
    assert [list(o) for o in outs] == [list(r) for r in reference]


def test_abort_mid_flight(llm):
    engine = llm.llm_engine
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    engine.add_request("keep", PROMPTS[0], params)
    engine.add_request("drop", PROMPTS[1], params)
    finished = {}
    steps = 0
    while engine.has_unfinished_requests():
        for out in engine.step():
            if out.finished:
                finished[out.request_id] = out
        steps += 1
        if steps == 4:
            engine.abort_request(["drop"])
    assert "drop" not in finished or finished["drop"].outputs[0].finish_reason == "abort"
    assert len(finished["keep"].outputs[0].token_ids) == 24
    alone = llm.generate([PROMPTS[0]], params)[0].outputs[0].token_ids
    assert list(finished["keep"].outputs[0].token_ids) == list(alone)
