"""additional_config tt.data_parallel through stock vLLM: MESH_DEVICE="(1, 2)" split into two replicas of the model,
each with its own KV cache and half of max_num_seqs. Requests join and leave, so slots are reused on both replicas;
greedy output must equal the single-device engine's token for token. vLLM's block ids are split between the
replicas (vllm_patches/replica_blocks.py): each replica's cache holds half the pool, every request's blocks are on
its own replica, a prefix is reused where it is cached, and the two replicas together hold more blocks at once than
either's cache."""

import pytest
from vllm import SamplingParams

from tests.vllm.conftest import assert_same_greedy, shutdown, tt_options
from tests.vllm.metrics import spec_counts
from tests.vllm.test_llm_generate import PROMPTS

PER_REPLICA = 5  # blocks of 64 tokens in each replica's cache, its block 0 unused: 4 for its users


def test_data_parallel_two_replicas_match_single_device(short_llm, short_dir, short_hf, monkeypatch):
    from vllm import LLM

    params = [SamplingParams(temperature=0, max_tokens=6 + 5 * (i % 3), ignore_eos=True) for i in range(len(PROMPTS))]
    single = [list(o.outputs[0].token_ids) for o in short_llm.generate(PROMPTS, params)]
    greedy = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    long, other = list(range(1000, 1160)), list(range(2000, 2040))
    first = short_llm.generate([{"prompt_token_ids": long}], greedy)[0].outputs[0].token_ids
    monkeypatch.setenv("MESH_DEVICE", "(1, 2)")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process, scheduler visible
    engine = LLM(model=short_dir, max_num_seqs=4, max_model_len=256, block_size=64, seed=0,
                 num_gpu_blocks_override=2 * PER_REPLICA, disable_log_stats=False,
                 additional_config=tt_options(short_llm.tt_profile, data_parallel=2))
    try:
        assert "DataParallel(family=llama" in repr(engine) and "mesh=(1, 2)" in repr(engine)
        core = engine.llm_engine
        sched = core.engine_core.engine_core.scheduler
        caches = core.collective_rpc(lambda w: [layers[0][0].shape[0] for layers in w.model_runner.kv_cache])[0]
        assert caches == [PER_REPLICA, PER_REPLICA] and sched.kv_cache_manager.block_pool.num_gpu_blocks == 10

        dp = [list(o.outputs[0].token_ids) for o in engine.generate(PROMPTS, params)]
        # A prefix is cached where it was computed: P alone goes to replica 0; X and P together put X on replica 0
        # (both idle: the lower index) and P on replica 1, which computes P afresh; P alone again goes where it is
        # cached. The same tokens every time.
        alone = engine.generate([{"prompt_token_ids": long}], greedy)[0]
        both = engine.generate([{"prompt_token_ids": other}, {"prompt_token_ids": long}], greedy)[1]
        again = engine.generate([{"prompt_token_ids": long}], greedy)[0]

        # Capacity: four requests of two blocks each at once, two per replica: 8 blocks held together, where each
        # replica's cache has 4 for its users; nothing preempted.
        held, where = 0, {}
        prompts = [list(range(3000 + 100 * i, 3070 + 100 * i)) for i in range(4)]
        for i, p in enumerate(prompts):
            core.add_request(f"cap{i}", {"prompt_token_ids": p}, SamplingParams(temperature=0, max_tokens=40,
                                                                                ignore_eos=True))
        outs = {}
        while core.has_unfinished_requests():
            for out in core.step():
                if out.finished:
                    outs[out.request_id] = list(out.outputs[0].token_ids)
            blocks = {r: sched.kv_cache_manager.get_block_ids(r)[0] for r in sched.requests}
            held = max(held, sum(len(b) for b in blocks.values()))
            slots = core.collective_rpc(lambda w: dict(w.model_runner.slot_of))[0]
            for r, ids in blocks.items():
                if r in slots:  # each request's blocks are all in its slot's replica's share
                    where[r] = slots[r] // 2
                    assert {b // PER_REPLICA for b in ids} == {where[r]}, (r, ids, slots[r])
        preempted = sum(m.value for m in engine.get_metrics() if m.name == "vllm:num_preemptions")

        # Preemption on one replica: four 1-block prompts placed in turn (A and C on replica 0, B and D on replica
        # 1). A and C grow to 4 blocks each where replica 0 has 4 for its users; B and D stay within 2 blocks each
        # and are still running when A and C need their third. The victim must be replica 0's newest request (C),
        # never D, vLLM's own choice (the newest of all), whose blocks are on replica 1 where nothing is missing.
        victims = []
        preempt = sched._preempt_request

        def record(request, *args, **kwargs):
            blocks = sched.replica_blocks
            victims.append((blocks.replica_of[request.request_id], blocks.queues.last))
            return preempt(request, *args, **kwargs)

        sched._preempt_request = record
        mixed = [list(range(4000, 4010)), [5000], list(range(4100, 4110)), [5100]]
        lengths = [200, 126, 200, 126]
        grown = engine.generate([{"prompt_token_ids": p} for p in mixed],
                                [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths])
    finally:
        shutdown(engine)
    assert dp == single
    assert alone.num_cached_tokens == 0 and (both.num_cached_tokens or 0) == 0
    assert (again.num_cached_tokens or 0) >= 128, again.num_cached_tokens
    assert [list(o.outputs[0].token_ids) for o in (alone, both, again)] == [list(first)] * 3
    assert held == 8 and sorted(where.values()) == [0, 0, 1, 1] and preempted == 0, (held, where, preempted)
    cap = short_llm.generate([{"prompt_token_ids": p} for p in prompts],
                             SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
    assert [outs[k] for k in sorted(outs)] == [list(o.outputs[0].token_ids) for o in cap]
    assert victims and all(r == short == 0 for r, short in victims), victims
    want = short_llm.generate([{"prompt_token_ids": p} for p in mixed],
                              [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths])
    assert_same_greedy(short_llm, short_hf, mixed, [list(o.outputs[0].token_ids) for o in grown],
                       [list(o.outputs[0].token_ids) for o in want], short_llm.tt_profile)


@pytest.mark.parametrize("short_llm", ["performance"], indirect=True)
def test_ngram_speculation_on_two_replicas_matches_single_device(short_llm, short_dir, monkeypatch):
    """N-gram drafts verified on each request's own replica (its verify rows on that replica's chips, its page
    table in that replica's block ids): greedy output equals the single-device engine without speculation, with
    requests on both replicas at once and drafts accepted."""
    from vllm import LLM

    from tests.vllm.test_spec_decode import NGRAM, copyable

    prompts = [copyable(i) for i in range(6)]
    params = [SamplingParams(temperature=0, max_tokens=10 + 4 * (i % 3), ignore_eos=True) for i in range(6)]
    single = [list(o.outputs[0].token_ids) for o in short_llm.generate(prompts, params)]
    monkeypatch.setenv("MESH_DEVICE", "(1, 2)")
    engine = LLM(model=short_dir, max_num_seqs=4, max_model_len=256, block_size=64, seed=0,
                 num_gpu_blocks_override=2 * 16, disable_log_stats=False, speculative_config=NGRAM,
                 additional_config=tt_options(short_llm.tt_profile, data_parallel=2))
    try:
        dp = [list(o.outputs[0].token_ids) for o in engine.generate(prompts, params)]
        accepted = spec_counts(engine)[1]
    finally:
        shutdown(engine)
    assert dp == single
    assert accepted > 0
