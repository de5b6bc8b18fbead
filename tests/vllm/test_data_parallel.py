"""additional_config tt.data_parallel through stock vLLM: MESH_DEVICE="(1, 2)" split into two replicas of the model,
each with its own KV cache and half of max_num_seqs. Requests join and leave, so slots are reused on both replicas;
greedy output must equal the single-device engine's token for token."""

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
    finally:
        shutdown(engine)
    assert dp == single
