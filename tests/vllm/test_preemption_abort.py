"""Preemption with recompute under a KV cache too small for the batch, and aborting a request mid-flight."""

from vllm import LLM, SamplingParams

from tests.vllm.conftest import assert_same_greedy, shutdown, tt_options

PROMPTS = ["The capital of France is", "Write a story about a dragon:", "List the planets:", "Explain gravity:"]


def num_preemptions(engine) -> float:
    return sum(getattr(m, "value", 0) for m in engine.get_metrics() if "num_preemptions" in m.name)


def test_preemption_outputs_equal_unpreempted_run(short_llm, short_dir, short_hf):
    """Recomputed (preempted) requests give the unpreempted run's greedy tokens: identically on reference, and on
    performance up to a bf16 tie of the top two logits (recompute prefills the generated tokens instead of decoding
    them: other matmul programs, other accumulation order; tests/vllm/conftest.py assert_same_greedy)."""
    params = SamplingParams(temperature=0, max_tokens=80, ignore_eos=True)
    ref_outs = short_llm.generate(PROMPTS, params)
    reference = [o.outputs[0].token_ids for o in ref_outs]
    # 6 usable blocks of 64 tokens for 4 requests that each grow to 2 blocks: some must be preempted.
    small = LLM(model=short_dir, max_num_seqs=4, max_model_len=256, block_size=64, num_gpu_blocks_override=7,
                enable_prefix_caching=False, disable_log_stats=False,
                additional_config=tt_options(short_llm.tt_profile))
    try:
        outs = [o.outputs[0].token_ids for o in small.generate(PROMPTS, params)]
        assert num_preemptions(small) > 0
    finally:
        shutdown(small)
    assert_same_greedy(short_llm, short_hf, [o.prompt_token_ids for o in ref_outs], [list(o) for o in outs],
                       [list(r) for r in reference], short_llm.tt_profile)


def test_abort_mid_flight(short_llm):
    engine = short_llm.llm_engine
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
    alone = short_llm.generate([PROMPTS[0]], params)[0].outputs[0].token_ids
    assert list(finished["keep"].outputs[0].token_ids) == list(alone)


def test_abort_frees_the_slot_and_the_blocks(short_dir, monkeypatch):
    """An aborted request gives back its decode slot (the runner's slot map drops it, and the next request takes
    that slot) and its KV blocks (the block pool's free count rises by exactly the blocks it held); the request
    still running is unaffected, and once everything has finished every block is free again and so is every slot."""
    import weakref

    from vllm.v1.engine.llm_engine import LLMEngine

    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process, scheduler visible
    small = LLM(model=short_dir, max_num_seqs=2, max_model_len=256, block_size=64, num_gpu_blocks_override=9,
                enable_prefix_caching=False, additional_config={"tt": {"optimizations": "reference"}})
    try:
        engine = small.llm_engine
        sched = engine.engine_core.engine_core.scheduler
        pool = sched.kv_cache_manager.block_pool
        name = {}  # vLLM appends a suffix to the ids it is given

        def slots() -> dict:
            held = engine.collective_rpc(lambda w: dict(w.model_runner.slot_of))[0]
            name.update({rid: rid.rsplit("-", 1)[0] for rid in held})
            return {name[rid]: slot for rid, slot in held.items()}

        def blocks(short: str) -> int:
            return len(sched.kv_cache_manager.get_block_ids(next(r for r in sched.requests if name.get(r) == short))[0])

        finished = {}

        def step():
            finished.update({o.request_id: o for o in engine.step() if o.finished})

        free_at_start = pool.get_num_free_blocks()
        params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
        engine.add_request("keep", PROMPTS[0], params)
        engine.add_request("drop", "word " * 90, params)  # 2 KV blocks
        while set(slots()) != {"keep", "drop"}:
            step()
        step()  # a decode step: both hold their blocks and slots
        dropped_slot, held, free_before = slots()["drop"], blocks("drop"), pool.get_num_free_blocks()
        assert held == 2
        engine.abort_request(["drop"])
        assert pool.get_num_free_blocks() == free_before + held
        step()
        assert set(slots()) == {"keep"}
        engine.add_request("next", PROMPTS[2], params)
        while "next" not in slots():
            step()
        assert slots()["next"] == dropped_slot
        while engine.has_unfinished_requests():
            step()
        assert set(finished) == {"keep", "next"}
        assert pool.get_num_free_blocks() == free_at_start
        # The runner hears of finished requests with the next step, as vLLM's own runners do: then only it holds one.
        engine.add_request("last", PROMPTS[3], params)
        step()
        assert slots() == {"last": 0}
        engine.abort_request(["last"])
        for rid, prompt in (("keep", PROMPTS[0]), ("next", PROMPTS[2])):
            alone = small.generate([prompt], params)[0].outputs[0].token_ids
            assert list(finished[rid].outputs[0].token_ids) == list(alone)
        # What vLLM's in-process engine runs when it is deleted accepts the TT model (it walks torch modules).
        LLMEngine._cleanup_instance_caches(weakref.ref(engine.model_executor.driver_worker.model_runner.model))
    finally:
        shutdown(small)
