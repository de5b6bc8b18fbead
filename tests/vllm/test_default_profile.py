"""vLLM on the default profile (`performance`: bfloat8_b weights and KV cache, what a device runs by default), not
just the simulator-only `reference`: greedy generations read back through HF, position by position (teacher
forcing on vLLM's own tokens), agree with HF's top-1 at least as often as the profile's accuracy floor
(tests/models/test_accuracy.py: 90% top-1, 98% top-5); and a prompt's greedy tokens do not depend on whether its
prefix was in the prefix cache."""

import pytest
from vllm import SamplingParams

from tests.models.test_accuracy import FLOORS
from tests.vllm.conftest import hf_agreement

PROMPTS = ["The capital of France is", "Write a short poem about the ocean:",
           "Once upon a time, in a small village near the mountains, there lived an old clockmaker who",
           "Question: What is 12 times 12?\nAnswer:"]


SENTENCES = ["The river bends twice before it reaches the old mill, where the water slows and turns dark.",
             "Every spring the farmers argue about who should repair the bridge, and every summer nobody does.",
             "In 1887 the railway company promised a station, but the surveyors never came back from the hills.",
             "Children still count the arches of the viaduct on their way to school, though there are only seven.",
             "The baker keeps a ledger of every loaf she has sold since the war, written in three colours of ink."]


# The session engine of the default profile (tests/vllm/conftest.py starts it with no TT options).
DEFAULT = pytest.mark.parametrize("llm", ["performance"], indirect=True)


@DEFAULT
def test_default_profile_generations_agree_with_hf(smollm2_hf, llm):
    assert "optimizations=performance" in repr(llm)  # nothing asked for: the default profile
    outs = llm.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))
    top1, top5, n = hf_agreement(smollm2_hf, outs)
    assert n == 96
    floor1, floor5 = FLOORS["performance"]
    assert top1 >= floor1 and top5 >= floor5, (top1, top5, n)


@pytest.mark.parametrize("short_llm", ["performance"], indirect=True)
def test_greedy_tokens_do_not_depend_on_the_prefix_cache(short_llm):
    """Three new prompts (73 to 334 tokens), each sent alone twice: the first prefill is cold, the second hits the
    prefix cache (every whole KV block but the last). With the bfloat8_b KV cache both must give the same greedy
    tokens: a cold prefill attends to K/V as rounded into the cache, as a cached one reads them. (The cut checkpoint
    of tests/vllm/conftest.py, on the default profile: the engine is started with no TT options.)"""
    assert "optimizations=performance" in repr(short_llm)
    tokenizer = short_llm.get_tokenizer()
    prompts = [" ".join(SENTENCES[i:] + SENTENCES[:i]) * reps for i, reps in ((0, 1), (2, 2), (4, 3))]
    lengths = [len(tokenizer(p).input_ids) for p in prompts]
    assert min(lengths) >= 73 and max(lengths) <= 334, lengths
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    for prompt in prompts:
        runs = [short_llm.generate([prompt], params)[0] for _ in range(2)]
        assert runs[0].num_cached_tokens == 0 and runs[1].num_cached_tokens >= 64, [r.num_cached_tokens for r in runs]
        assert list(runs[1].outputs[0].token_ids) == list(runs[0].outputs[0].token_ids)
