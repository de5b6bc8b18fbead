"""additional_config tt.data_parallel through stock vLLM: MESH_DEVICE="(1, 2)" split into two replicas of the model,
each with its own KV cache and half of max_num_seqs. Requests join and leave, so slots are reused on both replicas;
greedy output must equal the single-device engine's token for token, and a prefix one replica cached gives the
same tokens to a request placed on the other."""

from vllm import SamplingParams

from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown, tt_options
from tests.vllm.test_llm_generate import PROMPTS


def test_data_parallel_two_replicas_match_single_device(short_llm, short_dir, monkeypatch):
    from vllm import LLM

    params = [SamplingParams(temperature=0, max_tokens=6 + 5 * (i % 3), ignore_eos=True) for i in range(len(PROMPTS))]
    single = [list(o.outputs[0].token_ids) for o in short_llm.generate(PROMPTS, params)]
    monkeypatch.setenv("MESH_DEVICE", "(1, 2)")
    engine = LLM(model=short_dir, max_num_seqs=4, max_model_len=512, block_size=64, seed=0,
                 num_gpu_blocks_override=TEST_KV_BLOCKS,
                 additional_config=tt_options(short_llm.tt_profile, data_parallel=2))
    try:
        assert "DataParallel(family=llama" in repr(engine) and "mesh=(1, 2)" in repr(engine)
        dp = [list(o.outputs[0].token_ids) for o in engine.generate(PROMPTS, params)]
        # A prefix cached on one replica, hit by a request placed on the other: P alone goes to replica 0; then X
        # and P together put X on replica 0 and P on replica 1, whose cache never held P's blocks (vLLM's prefix
        # cache is global). The runner recomputes the prefix there: the same tokens as the first time.
        greedy = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
        long, other = list(range(1000, 1160)), list(range(2000, 2040))
        first = engine.generate([{"prompt_token_ids": long}], greedy)[0]
        again = engine.generate([{"prompt_token_ids": other}, {"prompt_token_ids": long}], greedy)[1]
    finally:
        shutdown(engine)
    assert dp == single
    assert (again.num_cached_tokens or 0) >= 128, again.num_cached_tokens
    assert list(again.outputs[0].token_ids) == list(first.outputs[0].token_ids)
