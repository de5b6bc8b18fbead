"""Chunked prefill across scheduler steps: with a token budget below the prompt, a long prompt is prefilled one
block-aligned chunk per step with decode steps in between, so running requests keep streaming; its greedy output
equals the unchunked engine's token for token, and seeded sampling is unchanged by chunking."""

import pytest
from vllm import LLM, SamplingParams

from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown, tt_options

SHORT = ["The capital of France is", "List three colors:", "Explain gravity:", "Name a planet:",
         "Count to five:", "The sky is", "Water boils at"]


def long_prompt(n_words: int = 380, task: str = "Summarize this text:") -> str:
    words = "the quick brown fox jumps over a lazy dog while seven clever birds sing about rivers".split()
    return task + " " + " ".join(words[i % len(words)] for i in range(n_words))


@pytest.fixture(scope="module")
def chunked(short_dir, short_llm):
    """The chunking engine on the same profile as `short_llm` (both profiles, tests/vllm/conftest.py)."""
    engine = LLM(model=short_dir, max_num_seqs=8, max_model_len=512, block_size=64, max_num_batched_tokens=160,
                 num_gpu_blocks_override=TEST_KV_BLOCKS, seed=0, additional_config=tt_options(short_llm.tt_profile))
    yield engine
    shutdown(engine)


def test_budget_rounds_to_blocks_and_chunking_is_on(chunked):
    sched = chunked.llm_engine.vllm_config.scheduler_config
    assert sched.enable_chunked_prefill and sched.max_num_batched_tokens == 128


def test_long_prompt_matches_unchunked_engine(short_llm, chunked):
    prompt = long_prompt()
    assert len(chunked.get_tokenizer()(prompt).input_ids) > 3 * 128  # four chunks or more
    greedy = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    seeded = SamplingParams(temperature=0.8, top_p=0.9, seed=11, max_tokens=12, ignore_eos=True)
    for params in (greedy, seeded):
        whole = short_llm.generate([prompt], params)[0].outputs[0].token_ids
        in_chunks = chunked.generate([prompt], params)[0].outputs[0].token_ids
        assert list(in_chunks) == list(whole)


def test_running_requests_stream_between_chunks(chunked):
    """7 requests decode while a 4-chunk prompt arrives: between its arrival and its first token each of them gets
    a token from every decode step run between the chunks (3 or more). Prefilled whole, the prompt would take one
    step and they would get at most one token meanwhile."""
    engine = chunked.llm_engine
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    for i, p in enumerate(SHORT):
        engine.add_request(f"s{i}", p, params)
    seen = {f"s{i}": 0 for i in range(len(SHORT))}
    at_arrival = at_first_token = None
    while engine.has_unfinished_requests():
        for out in engine.step():
            n = len(out.outputs[0].token_ids)
            if out.request_id == "long":
                if n and at_first_token is None:
                    at_first_token = dict(seen)
            else:
                seen[out.request_id] = n
        if at_arrival is None and all(v >= 3 for v in seen.values()):
            # A prompt no earlier test sent: a prefix-cache hit would leave fewer chunks to prefill.
            engine.add_request("long", long_prompt(task="Rewrite this text in French:"),
                               SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
            at_arrival = dict(seen)
    streamed = {r: at_first_token[r] - at_arrival[r] for r in seen}
    assert min(streamed.values()) >= 3, streamed
    assert all(v == 40 for v in seen.values())
